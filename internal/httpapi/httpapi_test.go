package httpapi_test

import (
	"maps"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/httpapi"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/route"
)

// TestHeadersAreRebuilt: a stored answer is a status and a body; its
// headers are rebuilt from them and the charge's id the same way for the
// first answer and every replay, and headers stored by older records are
// kept as they are.
func TestHeadersAreRebuilt(t *testing.T) {
	ch := charge.Charge{Origin: op.Origin{ID: "ch_0123456789abcdef0123456789abcdef01234567",
		CreatedAt: time.Unix(0, 0)}, Status: acquirer.StatusCaptured, Amount: 1, Currency: "BRL"}
	captured := httpapi.Render(ch)
	if captured.Headers != nil {
		t.Fatalf("stored headers %v, want none", captured.Headers)
	}
	want := map[string]string{"Content-Type": "application/json", "Location": route.Location(ch.ID)}
	if got := httpapi.Headers(captured, ch.ID); !maps.Equal(got, want) {
		t.Fatalf("201 headers %v, want %v", got, want)
	}
	ch.Status, ch.DeclineCode = acquirer.StatusDeclined, "insufficient_funds"
	if got := httpapi.Headers(httpapi.Render(ch), ch.ID); !maps.Equal(got, map[string]string{"Content-Type": httpapi.ProblemContentType}) {
		t.Fatalf("402 headers %v", got)
	}
	// An answer of no charge (a record without a downstream key:
	// charge.AnsweredID) gets no Location.
	if got := httpapi.Headers(captured, charge.AnsweredID("")); !maps.Equal(got, map[string]string{"Content-Type": "application/json"}) {
		t.Fatalf("201 headers of no charge %v", got)
	}
	// The Location is the charge's, whatever the body holds.
	if got := httpapi.Headers(idem.Response{StatusCode: 201, Body: []byte(`{"id":"ch_other"}`)}, ch.ID); got["Location"] != route.Location(ch.ID) {
		t.Fatalf("Location %q, want %q", got["Location"], route.Location(ch.ID))
	}
	old := idem.Response{StatusCode: 201, Headers: map[string]string{"Content-Type": "application/json", "Location": "/v1/charges/x"}, Body: []byte(`{}`)}
	if got := httpapi.Headers(old, ch.ID); !maps.Equal(got, old.Headers) {
		t.Fatalf("stored headers not kept: %v", got)
	}
}

package httpapi_test

import (
	"maps"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/httpapi"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/problem"
	"github.com/idempotent-payments/idempay/internal/route"
)

// TestHeadersAreRebuilt: a stored answer is a status and a body; its
// headers are rebuilt the same way for the first answer and every replay,
// and headers stored by older records are kept as they are.
func TestHeadersAreRebuilt(t *testing.T) {
	ch := charge.Charge{ID: "ch_0123456789abcdef0123456789abcdef01234567", Status: acquirer.StatusCaptured, Amount: 1, Currency: "BRL", CreatedAt: time.Unix(0, 0)}
	captured := httpapi.Render(ch)
	if captured.Headers != nil {
		t.Fatalf("stored headers %v, want none", captured.Headers)
	}
	want := map[string]string{"Content-Type": "application/json", "Location": route.Location(ch.ID)}
	if got := httpapi.Headers(captured); !maps.Equal(got, want) {
		t.Fatalf("201 headers %v, want %v", got, want)
	}
	ch.Status, ch.DeclineCode = acquirer.StatusDeclined, "insufficient_funds"
	if got := httpapi.Headers(httpapi.Render(ch)); !maps.Equal(got, map[string]string{"Content-Type": problem.ContentType}) {
		t.Fatalf("402 headers %v", got)
	}
	for body, id := range map[string]string{`{"object":"charge","id":"ch_x"}`: "ch_x", `{"id":"ch_\u0041"}`: "ch_A"} {
		if got := httpapi.Headers(idem.Response{StatusCode: 201, Body: []byte(body)}); got["Location"] != route.Location(id) {
			t.Fatalf("%s: Location %q, want %q", body, got["Location"], route.Location(id))
		}
	}
	old := idem.Response{StatusCode: 201, Headers: map[string]string{"Content-Type": "application/json", "Location": "/v1/charges/x"}, Body: []byte(`{}`)}
	if got := httpapi.Headers(old); !maps.Equal(got, old.Headers) {
		t.Fatalf("stored headers not kept: %v", got)
	}
}

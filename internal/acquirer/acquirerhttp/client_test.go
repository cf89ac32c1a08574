package acquirerhttp_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/acquirer/acquirerhttp"
	"github.com/idempotent-payments/idempay/internal/sandbox"
)

// TestOneCallOneSend: a connection dropped after the acquirer processed the
// request reaches the caller as "outcome unknown", even on a reused
// connection, where Go's Transport would otherwise resend a POST with an
// Idempotency-Key and hand back the deduplicated answer.
func TestOneCallOneSend(t *testing.T) {
	t.Parallel()
	sb := sandbox.New("")
	srv := httptest.NewServer(sb)
	defer srv.Close()
	c, err := acquirerhttp.NewClient(srv.URL, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	req := acquirer.Request{Amount: 100, Currency: "BRL", PaymentMethod: "pm_card_visa", OrderID: "1"}
	if _, err := c.Authorize(ctx, "warm-up-key", req); err != nil { // leaves an idle connection to reuse
		t.Fatal(err)
	}
	sb.SetFaults(sandbox.Faults{DropRate: 1})
	for i, key := range []string{"dropped-key-1", "dropped-key-2", "dropped-key-3"} {
		before := sb.Received()
		_, err := c.Authorize(ctx, key, req)
		if !errors.Is(err, acquirer.ErrOutcomeUnknown) {
			t.Fatalf("drop %d: %v, want outcome unknown", i+1, err)
		}
		if sent := sb.Received() - before; sent != 1 {
			t.Fatalf("drop %d: the acquirer received %d requests for one call", i+1, sent)
		}
	}
	if _, _, drops := sb.Injected(); drops != 3 {
		t.Fatalf("%d drops injected, want 3", drops)
	}
}

// TestRefusals: a 401 that stands is "nothing sent" (the credential is
// checked before anything is processed); a 403 proves nothing and is
// "outcome unknown"; both re-read the credential first; an Authorize is
// never resent by the client (the service resends, after its lease check),
// a lookup is; and a refused lookup is no "not found".
func TestRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		status      int
		notSent     bool
		description string
	}{{http.StatusUnauthorized, true, "401"}, {http.StatusForbidden, false, "403"}} {
		var requests, reads atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			requests.Add(1)
			w.WriteHeader(tc.status)
		}))
		cred := acquirerhttp.NewCredential(func(context.Context) (string, error) {
			return fmt.Sprintf("key-%d", reads.Add(1)), nil
		}, time.Hour, time.Nanosecond)
		c, _ := acquirerhttp.NewClientWithCredential(srv.URL, cred, nil)
		_, err := c.Authorize(ctx, "refused-key-1", acquirer.Request{Amount: 1, Currency: "BRL", PaymentMethod: "pm_card_visa", OrderID: "1"})
		if errors.Is(err, acquirer.ErrNotSent) != tc.notSent || errors.Is(err, acquirer.ErrOutcomeUnknown) == tc.notSent ||
			errors.Is(err, acquirer.ErrCredentialChanged) != tc.notSent { // the re-read gave another key
			t.Errorf("%s: %v", tc.description, err)
		}
		if requests.Load() != 1 || reads.Load() != 2 {
			t.Errorf("%s: %d requests, %d reads of the credential; want 1 and a re-read", tc.description, requests.Load(), reads.Load())
		}
		requests.Store(0)
		if _, err := c.Lookup(ctx, "refused-key-1"); err == nil || errors.Is(err, acquirer.ErrNotFound) || requests.Load() != 2 {
			t.Errorf("%s lookup: %v after %d requests; want a failure after one resend", tc.description, err, requests.Load())
		}
		srv.Close()
	}
}

// TestRefusedStaticCredential: a 401 to a key that no re-read can change
// is refused, but not changed, so nobody resends it.
func TestRefusedStaticCredential(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusUnauthorized) }))
	defer srv.Close()
	c, _ := acquirerhttp.NewClient(srv.URL, "the-only-key", nil)
	_, err := c.Authorize(context.Background(), "static-key-1", acquirer.Request{Amount: 1, Currency: "BRL", PaymentMethod: "pm_card_visa", OrderID: "1"})
	if !errors.Is(err, acquirer.ErrCredentialRefused) || errors.Is(err, acquirer.ErrCredentialChanged) {
		t.Fatalf("%v: want refused, not changed", err)
	}
}

// TestTheCredentialIsABearer: the key goes in the Authorization header as
// a bearer credential, and a sandbox holding that key authorizes.
func TestTheCredentialIsABearer(t *testing.T) {
	sb := sandbox.New("key-1")
	var got atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Store(r.Header.Get("Authorization"))
		sb.ServeHTTP(w, r)
	}))
	defer srv.Close()
	c, err := acquirerhttp.NewClient(srv.URL, "key-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Authorize(context.Background(), "bearer-key-1", acquirer.Request{Amount: 1, Currency: "BRL", PaymentMethod: "pm_card_visa", OrderID: "1"}); err != nil || got.Load() != "Bearer key-1" {
		t.Fatalf("Authorize: %v, with Authorization %q", err, got.Load())
	}
}

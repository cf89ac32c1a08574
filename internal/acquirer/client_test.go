package acquirer_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/sandbox"
)

// TestOneCallOneSend: a connection dropped after the acquirer processed the
// request reaches the caller as "outcome unknown", even on a reused
// connection, where Go's Transport would otherwise resend a POST with an
// Idempotency-Key and hand back the deduplicated answer (issue 11, chaos).
func TestOneCallOneSend(t *testing.T) {
	t.Parallel()
	sb := sandbox.New("")
	srv := httptest.NewServer(sb)
	defer srv.Close()
	c, err := acquirer.NewClient(srv.URL, "", nil)
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

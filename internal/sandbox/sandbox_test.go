package sandbox

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/acquirer"
)

// TestResent: a request that comes back with a dropped key within the
// resend window, by the sandbox's clock, counts as resent; later, it is a
// retry and does not.
func TestResent(t *testing.T) {
	s := New("")
	now := time.Unix(1_800_000_000, 0)
	s.Now = func() time.Time { return now }
	srv := httptest.NewServer(s)
	defer srv.Close()
	// A fresh connection per request: Go's Transport would itself resend a
	// dropped request on a reused one.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	post := func(key string) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/authorizations",
			strings.NewReader(`{"amount": 1, "currency": "BRL", "payment_method": "pm_card_visa", "order_id": "1"}`))
		req.Header.Set("Idempotency-Key", key)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
		}
	}
	s.SetFaults(Faults{DropRate: 1})
	post("resent-key")
	s.SetFaults(Faults{})
	post("resent-key")
	if s.Resent() != 1 {
		t.Fatalf("resent %d, want 1", s.Resent())
	}
	s.SetFaults(Faults{DropRate: 1})
	post("retried-key")
	s.SetFaults(Faults{})
	now = now.Add(time.Second)
	post("retried-key")
	if s.Resent() != 1 {
		t.Fatalf("resent %d after a retry a second later, want still 1", s.Resent())
	}
}

// TestTenfold: pm_card_captures_tenfold is captured for ten times the
// amount asked, once per key, and its lookup states the same.
func TestTenfold(t *testing.T) {
	s := New("")
	ctx := t.Context()
	auth, err := s.Authorize(ctx, "tenfold-key", acquirer.Request{Amount: 100, Currency: "BRL", PaymentMethod: PaymentMethodTenfold, OrderID: "1"})
	if err != nil || auth.Amount != 1000 || auth.Status != acquirer.StatusCaptured {
		t.Fatalf("authorize: %+v, %v", auth, err)
	}
	again, err := s.Lookup(ctx, "tenfold-key")
	if err != nil || again != auth {
		t.Fatalf("lookup: %+v, %v", again, err)
	}
}

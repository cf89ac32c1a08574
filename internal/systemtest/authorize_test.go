package systemtest_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/capture"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/event"
	"github.com/idempotent-payments/idempay/internal/event/eventtest"
	"github.com/idempotent-payments/idempay/internal/route"
)

// TestAnAuthorizationLapses: a charge authorized with "capture": false
// answers authorized with its expiry, the acquirer's; once that has
// passed its GET says expired, nothing capturable, and the sweeper closes
// its balance (every capturable unit released) and unlists it, once; the
// merchant is told charge.authorized, then charge.expired, each once.
func TestAnAuthorizationLapses(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.Sandbox.SetAuthorizationWindow(2 * time.Second)
	r := postCharge(t, s, "acct_lapse", "lapsing-authorization", `{"amount": 900, "currency": "BRL", "order_id": "9", "payment_method": "pm_card_visa", "capture": false}`)
	expect(t, r, 201, "")
	var first struct {
		ID        string `json:"id"`
		Status    string `json:"status"`
		ExpiresAt string `json:"authorization_expires_at"`
	}
	if err := json.Unmarshal(r.body, &first); err != nil || first.Status != "authorized" || first.ExpiresAt == "" {
		t.Fatalf("the authorization: %s, %v", r.body, err)
	}
	expires, err := time.Parse(time.RFC3339Nano, first.ExpiresAt)
	if err != nil || time.Until(expires) > 3*time.Second {
		t.Fatalf("expiry %q (%v): want the sandbox's window of 2 s", first.ExpiresAt, err)
	}
	ctx := context.Background()
	if rep, err := s.Sweep(ctx); err != nil || rep.Expiry == nil || *rep.Expiry != (capture.ExpiryReport{Complete: true}) {
		t.Fatalf("a sweep before the expiry: %+v, %v; want nothing closed", rep.Expiry, err)
	}
	time.Sleep(time.Until(expires) + 100*time.Millisecond)
	got := call(t, s, http.MethodGet, route.Location(first.ID), "acct_lapse", nil, "")
	var after struct {
		Status     string `json:"status"`
		Capturable int64  `json:"amount_capturable"`
	}
	if err := json.Unmarshal(got.body, &after); err != nil || got.status != 200 || after.Status != charge.StatusExpired || after.Capturable != 0 {
		t.Fatalf("GET past the expiry: %d %s", got.status, got.body)
	}
	if rep, err := s.Sweep(ctx); err != nil || rep.Expiry == nil || *rep.Expiry != (capture.ExpiryReport{Closed: 1, Expired: 1, Complete: true}) {
		t.Fatalf("the sweep past the expiry: %+v, %v; want one closed", rep.Expiry, err)
	}
	bal, err := dynamo.Open(s.DynamoDB, s.TableName).Captures().Get(ctx, first.ID)
	if err != nil || bal != (capture.Balance{Authorized: 900, Released: 900, Closed: capture.ClosedExpired}) {
		t.Fatalf("the balance: %+v, %v; want closed expired, all of it released", bal, err)
	}
	if rep, err := s.Sweep(ctx); err != nil || *rep.Expiry != (capture.ExpiryReport{Complete: true}) {
		t.Fatalf("a sweep after: %+v, %v; want nothing listed", rep.Expiry, err)
	}
	told := distinctEvents(t, s, eventtest.Schema(t), event.ProducerHTTP, 2, 30*time.Second)
	if len(told) != 2 || told[0].Type != event.Authorized || told[1].Type != event.Expired || told[1].Charge.ID != first.ID ||
		told[1].Charge.Status != event.StatusExpired || told[1].Charge.Amount != 900 || !told[1].CreatedAt.Equal(expires) ||
		told[1].IdempotencyKey != "lapsing-authorization" {
		t.Fatalf("told %+v", told)
	}
}

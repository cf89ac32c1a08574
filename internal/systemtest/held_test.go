package systemtest_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/event"
	"github.com/idempotent-payments/idempay/internal/event/eventtest"
	"github.com/idempotent-payments/idempay/internal/route"
	"github.com/idempotent-payments/idempay/internal/sandbox"
)

// TestAHeldChargeIsPendingOnEveryRoute: a charge held on its first answer
// (the sandbox captures ten times the amount) has no ledger row, and its
// id answers as a pending charge on every route: GET /v1/charges/{id}
// and a refund of it over HTTP 503 CHARGE_OUTCOME_PENDING (404 to another
// account), a queued refund command the charge_held verdict (deleted,
// told as refund.rejected with CHARGE_OUTCOME_PENDING, never
// dead-lettered); nothing is refunded and no refund key is kept.
func TestAHeldChargeIsPendingOnEveryRoute(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	const acct = "acct_q"
	r := postCharge(t, s, acct, "held-everywhere-charge", `{"amount": 1000, "currency": "BRL", "order_id": "h-1", "payment_method": "`+sandbox.PaymentMethodTenfold+`"}`)
	expect(t, r, 503, "CHARGE_OUTCOME_PENDING")
	id := charge.ID(heldRecord(t, s, acct, "held-everywhere-charge").DownstreamKey)
	if n := ledgerRows(t, s); n != 0 {
		t.Fatalf("%d ledger rows for a held charge", n)
	}

	get := call(t, s, http.MethodGet, route.Location(id), acct, nil, "")
	expect(t, get, 503, "CHARGE_OUTCOME_PENDING")
	if get.header.Get("Retry-After") == "" {
		t.Fatal("GET of a held charge: a 503 without Retry-After")
	}
	expect(t, call(t, s, http.MethodGet, route.Location(id), "acct_other", nil, ""), 404, "NOT_FOUND")

	expect(t, postRefund(t, s, acct, "held-everywhere-refund", id, `{}`), 503, "CHARGE_OUTCOME_PENDING")
	if rec := refundRecord(t, s, acct, "held-everywhere-refund"); rec != nil {
		t.Fatalf("the refused refund's key was kept: %+v", rec)
	}

	send(t, s, refundCommand(t, acct, id, "held-everywhere-queued", `{"amount": 100}`))
	drained(t, s, 30*time.Second)
	told := receiveEvents(t, s, eventtest.Schema(t), testProducer.Name, 1, 30*time.Second)
	if len(told) != 1 || told[0].Type != event.RefundRejected || told[0].Reason != "CHARGE_OUTCOME_PENDING" {
		t.Fatalf("the queued refund of a held charge told %+v; want refund.rejected, CHARGE_OUTCOME_PENDING", told)
	}
	if n := len(s.Sandbox.Refunds()); n != 0 {
		t.Fatalf("%d refunds reached the acquirer", n)
	}
}

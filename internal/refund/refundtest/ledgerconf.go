package refundtest

import (
	"errors"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/refund"
)

// RunLedgerConformance runs what every refund.Ledger must do: a row
// written reads back equal; a second write of the same id changes nothing
// and returns the first row; a missing row is ErrNoRefund.
func RunLedgerConformance(t *testing.T, ledger refund.Ledger) {
	id := refund.ID(chargeOf(t)[3:])
	want := refund.Refund{
		ID: id, Account: "acct_l", ChargeID: chargeOf(t), IdempotencyKey: "refund-1", Source: "http", Status: "succeeded",
		Amount: 123456789012, Currency: "BRL", Reason: refund.ReasonDuplicate, AcquirerRefundID: "rf_1", AcquirerID: "sandbox",
		CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	if got, err := ledger.Write(ctx, want); err != nil || got != want {
		t.Fatalf("Write = %+v, %v", got, err)
	}
	late := want
	late.Status, late.Amount, late.CreatedAt = "declined", 1, want.CreatedAt.Add(time.Minute)
	if got, err := ledger.Write(ctx, late); err != nil || got != want {
		t.Fatalf("a second Write = %+v, %v; want the first row", got, err)
	}
	if got, err := ledger.Get(ctx, id); err != nil || got != want {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	if _, err := ledger.Get(ctx, refund.ID(chargeOf(t)[3:])); !errors.Is(err, refund.ErrNoRefund) {
		t.Fatalf("Get of a missing refund: %v", err)
	}
}

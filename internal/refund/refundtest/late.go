package refundtest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/charge/chargetest"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/refund"
	"github.com/idempotent-payments/idempay/internal/sandbox"
)

// stalledRows holds its first Write back until release is closed, then
// writes: a refund row's write delayed ahead of the table, which lands
// after the invocation that sent it has ended. entered is closed when the
// write is on its way.
type stalledRows struct {
	refund.Ledger
	once             sync.Once
	entered, release chan struct{}
}

func (l *stalledRows) Write(c2 context.Context, r refund.Refund) (refund.Refund, error) {
	first := false
	l.once.Do(func() { first = true })
	if first {
		close(l.entered)
		<-l.release
	}
	return l.Ledger.Write(context.WithoutCancel(c2), r)
}

// withRows is the refund service of another instance, writing its refund
// rows through rows.
func (w *world) withRows(rows refund.Ledger) *refund.Service {
	guard := idem.NewGuard(w.stores.Store, idem.Config{Now: w.now, DefaultLease: 30 * time.Second, Protocol: protocol})
	cfg := charge.Config{Now: w.now}
	charges := charge.NewService(guard, w.stores.Charges, w.acq, chargetest.Render, cfg)
	return refund.NewService(guard, charges, w.stores.Balances, rows, w.acq, Render, cfg)
}

// serviceALateRowAfterAVoid: an operator accepts a held refund, and the
// accept's row write is delayed past its invocation; another operator
// then confirms the refund void, which releases its reservation. The late
// row lands and is refused: the refund has no row and reads 404, the
// amount stays refundable, and the void reads back as its decision's.
func serviceALateRowAfterAVoid(t *testing.T, w *world) {
	ch := w.charge(t, "pm_card_visa", 1000)
	if res := w.with(garbledAnswer{w.acq}).Refund(ctx, in("late-refund-row", ch, `{"amount": 1000}`)); res.Outcome != op.Mismatch {
		t.Fatalf("the garbled answer: %s", res.Outcome)
	}
	rec := w.held(t, idem.Scope{Operation: refund.Operation, Account: account, Key: "late-refund-row"})
	id := refund.ID(rec.DownstreamKey)
	shown, err := w.svc.Peek(ctx, rec.PK)
	if err != nil {
		t.Fatal(err)
	}
	late := &stalledRows{Ledger: w.stores.Refunds, entered: make(chan struct{}), release: make(chan struct{})}
	accept := op.Decision{PK: rec.PK, Instance: rec.DownstreamKey, Action: idem.SettleAccept, By: "ops:ana", ID: "dec-late-accept", Terms: refund.TermsOf(shown)}
	var accepted error
	var wg sync.WaitGroup
	wg.Go(func() { _, accepted = w.withRows(late).Settle(ctx, accept) })
	<-late.entered // the accept's row is on its way
	w.clock.Advance(time.Hour)
	void := op.Decision{PK: rec.PK, Instance: rec.DownstreamKey, Action: idem.SettleVoidConfirmed, By: "ops:bia", ID: "dec-late-void"}
	if st, err := w.svc.Settle(ctx, void); err != nil || st.State != op.ReleasedByThis {
		t.Fatalf("void-confirmed: %+v, %v", st, err)
	}
	mustBalance(t, w.stores.Balances, ch, 1000, 0, 0)
	close(late.release) // the late row lands
	wg.Wait()
	if accepted == nil {
		t.Fatal("the accept whose row landed after the void took effect")
	}
	if row, err := w.stores.Refunds.Get(ctx, id); !errors.Is(err, refund.ErrNoRefund) {
		t.Fatalf("a row for the voided refund: %+v, %v", row, err)
	}
	if res := w.svc.Get(ctx, account, id); res.Outcome != op.NotFound {
		t.Fatalf("GET of the voided refund: %s", res.Outcome)
	}
	mustBalance(t, w.stores.Balances, ch, 1000, 0, 0)
	if st, err := w.svc.ReadBack(ctx, void); err != nil || st.State != op.ReleasedByThis {
		t.Fatalf("the void read back: %s, %v", st.State, err)
	}
}

// serviceAHeldChargeWithoutARow: a charge held on its first answer (the
// acquirer captured ten times the amount) has no row; its id still
// answers as its key does: GET says held, and a refund of it answers
// ChargeHeld (503 CHARGE_OUTCOME_PENDING), its key released, nothing
// stored; another account's GET is 404.
func serviceAHeldChargeWithoutARow(t *testing.T, w *world) {
	res := w.charges.Charge(ctx, charge.Input{Account: account, Keys: []string{"held-charge-no-row"},
		Body: []byte(`{"amount": 700, "currency": "BRL", "order_id": "o-7", "payment_method": "` + sandbox.PaymentMethodTenfold + `"}`)})
	if res.Outcome != op.Mismatch {
		t.Fatalf("the tenfold charge: %s", res.Outcome)
	}
	id := charge.ID(w.record(t, idem.Scope{Operation: charge.Operation, Account: account, Key: "held-charge-no-row"}).DownstreamKey)
	if got := w.charges.Get(ctx, account, id); got.Outcome != op.Held {
		t.Fatalf("GET of the held charge: %s", got.Outcome)
	}
	if got := w.charges.Get(ctx, "acct_other", id); got.Outcome != op.NotFound {
		t.Fatalf("another account's GET: %s", got.Outcome)
	}
	r := w.svc.Refund(ctx, in("refund-of-held-no-row", id, `{}`))
	if r.Outcome != op.ChargeHeld || r.RetryAfter <= 0 || refund.Codes.Of(r.Outcome) != "CHARGE_OUTCOME_PENDING" {
		t.Fatalf("%s (%s), retry after %s", r.Outcome, refund.Codes.Of(r.Outcome), r.RetryAfter)
	}
	w.mustBeGone(t, "refund-of-held-no-row")
}

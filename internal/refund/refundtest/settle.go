package refundtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/refund"
	"github.com/idempotent-payments/idempay/internal/sandbox"
)

// garbledAnswer is an acquirer whose refund answers state ten times the
// amount while its lookups tell the truth: a refund held on a garbled
// answer, whose lookup an operator may accept.
type garbledAnswer struct{ refund.Acquirer }

func (g garbledAnswer) Refund(ctx context.Context, key string, req acquirer.RefundRequest) (acquirer.Refund, error) {
	r, err := g.Acquirer.Refund(ctx, key, req)
	r.Amount *= 10
	return r, err
}

// serviceAHeldRefundIsAccepted: a refund held on a garbled answer, whose
// lookup agrees with the reservation, is accepted: terms that are not the
// ones shown are refused, the shown ones book the refund (row, entry,
// completion, the hold kept with the settlement), a retry of the decision
// only reads back, and the key replays the refund.
func serviceAHeldRefundIsAccepted(t *testing.T, w *world) {
	ch := w.charge(t, "pm_card_visa", 1000)
	if res := w.with(garbledAnswer{w.acq}).Refund(ctx, in("garbled-refund", ch, `{"amount": 100}`)); res.Outcome != op.Mismatch {
		t.Fatalf("the garbled answer: %s", res.Outcome)
	}
	rec := w.held(t, idem.Scope{Operation: refund.Operation, Account: account, Key: "garbled-refund"})
	shown, err := w.svc.Peek(ctx, rec.PK)
	if err != nil || shown.Amount != 100 || shown.Status != acquirer.RefundSucceeded {
		t.Fatalf("peek: %+v, %v", shown, err)
	}
	d := op.Decision{PK: rec.PK, Instance: rec.DownstreamKey, Action: idem.SettleAccept, By: "ops:ana", ID: "dec-accept-1", Terms: refund.TermsOf(shown)}
	d.Terms.Amount = 90
	if st, err := w.svc.Settle(ctx, d); !errors.Is(err, op.ErrTermsChanged) || st.State != op.StillHeld {
		t.Fatalf("accepting other terms: %s, %v", st.State, err)
	}
	d.Terms, d.ID = refund.TermsOf(shown), "dec-accept-2"
	st, err := w.svc.Settle(ctx, d)
	if err != nil || st.State != op.CompletedByThis || st.Row.Amount != 100 || st.Decision == nil || st.Decision.By != "ops:ana" {
		t.Fatalf("accept: %+v, %v", st, err)
	}
	w.mustHold(t, ch, 900, 0, 100)
	if again, err := w.svc.Settle(ctx, d); err != nil || again.State != op.CompletedByThis {
		t.Fatalf("the decision again: %s, %v", again.State, err)
	}
	mustAnswer(t, w.svc.Refund(ctx, in("garbled-refund", ch, `{"amount": 100}`)), op.Replayed, 201)
}

// serviceAHeldRefundIsVoided: a tenfold refund (its lookup tenfold too)
// cannot be accepted: a tool never books what the bound did not reserve.
// Void-confirmed waits out T + skew, then releases the entry (the amount
// is refundable again) and removes the record with a release marker.
func serviceAHeldRefundIsVoided(t *testing.T, w *world) {
	ch := w.charge(t, sandbox.PaymentMethodRefundsTenfold, 1000)
	if res := w.svc.Refund(ctx, in("voided-refund", ch, `{"amount": 100}`)); res.Outcome != op.Mismatch {
		t.Fatalf("the tenfold answer: %s", res.Outcome)
	}
	rec := w.held(t, idem.Scope{Operation: refund.Operation, Account: account, Key: "voided-refund"})
	shown, err := w.svc.Peek(ctx, rec.PK)
	var m *acquirer.RefundMismatchError
	if !errors.As(err, &m) || shown.Amount != 1000 {
		t.Fatalf("peek: %+v, %v; want the mismatch", shown, err)
	}
	accept := op.Decision{PK: rec.PK, Instance: rec.DownstreamKey, Action: idem.SettleAccept, By: "ops:ana", ID: "dec-accept-3", Terms: refund.TermsOf(shown)}
	if st, err := w.svc.Settle(ctx, accept); !errors.As(err, &m) || st.State != op.StillHeld {
		t.Fatalf("accepting a tenfold refund: %s, %v", st.State, err)
	}
	mustBalance(t, w.stores.Balances, ch, 900, 100, 0)
	void := op.Decision{PK: rec.PK, Instance: rec.DownstreamKey, Action: idem.SettleVoidConfirmed, By: "ops:ana", ID: "dec-void-1"}
	if st, err := w.svc.Settle(ctx, void); !errors.Is(err, idem.ErrTooEarly) || st.State != op.StillHeld {
		t.Fatalf("a void within T + skew of the last lease: %s, %v", st.State, err)
	}
	w.clock.Advance(time.Hour)
	st, err := w.svc.Settle(ctx, void)
	if err != nil || st.State != op.ReleasedByThis {
		t.Fatalf("void-confirmed: %+v, %v", st, err)
	}
	mustBalance(t, w.stores.Balances, ch, 1000, 0, 0)
	w.mustBeGone(t, "voided-refund")
	if again, err := w.svc.Settle(ctx, void); err != nil || again.State != op.ReleasedByThis {
		t.Fatalf("the decision again: %s, %v", again.State, err)
	}
	if st, err := w.svc.ReadBack(ctx, accept); err != nil || st.State != op.ReleasedByAnother {
		t.Fatalf("the refused accept, read back: %s, %v", st.State, err)
	}
}

// serviceAReleasedEntryIsNotBooked: a held refund whose entry a void's
// take-over released before the void itself failed (the record still
// held) gave its amount back: the acquirer's refund, though its terms
// agree, is shown as disagreeing with the entry, and accept refuses to
// book it; void-confirmed then settles the record, the amount staying
// refundable.
func serviceAReleasedEntryIsNotBooked(t *testing.T, w *world) {
	ch := w.charge(t, "pm_card_visa", 1000)
	if res := w.with(garbledAnswer{w.acq}).Refund(ctx, in("released-entry", ch, `{"amount": 100}`)); res.Outcome != op.Mismatch {
		t.Fatalf("the garbled answer: %s", res.Outcome)
	}
	rec := w.held(t, idem.Scope{Operation: refund.Operation, Account: account, Key: "released-entry"})
	// What a void's take-over (attempt 2) did before its last step failed.
	if _, err := w.stores.Balances.Refence(ctx, ch, intentOfRecord(rec), 2); err != nil {
		t.Fatal(err)
	}
	if err := w.stores.Balances.Release(ctx, ch, intentOfRecord(rec), 2); err != nil {
		t.Fatal(err)
	}
	mustBalance(t, w.stores.Balances, ch, 1000, 0, 0)
	shown, err := w.svc.Peek(ctx, rec.PK)
	var m *acquirer.RefundMismatchError
	if !errors.As(err, &m) || m.Reason != refund.ReasonEntryDisagrees {
		t.Fatalf("peek: %+v, %v; want the entry's disagreement", shown, err)
	}
	accept := op.Decision{PK: rec.PK, Instance: rec.DownstreamKey, Action: idem.SettleAccept, By: "ops:ana", ID: "dec-accept-4", Terms: refund.TermsOf(shown)}
	if st, err := w.svc.Settle(ctx, accept); !errors.As(err, &m) || st.State != op.StillHeld {
		t.Fatalf("accepting against a released entry: %s, %v", st.State, err)
	}
	if _, err := w.stores.Refunds.Get(ctx, refund.ID(rec.DownstreamKey)); !errors.Is(err, refund.ErrNoRefund) {
		t.Fatalf("the refused accept wrote a row: %v", err)
	}
	w.clock.Advance(time.Hour)
	void := op.Decision{PK: rec.PK, Instance: rec.DownstreamKey, Action: idem.SettleVoidConfirmed, By: "ops:ana", ID: "dec-void-2"}
	if st, err := w.svc.Settle(ctx, void); err != nil || st.State != op.ReleasedByThis {
		t.Fatalf("void-confirmed: %s, %v", st.State, err)
	}
	mustBalance(t, w.stores.Balances, ch, 1000, 0, 0)
}

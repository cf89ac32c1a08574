package chargetest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/sandbox"
)

// stalledLedger holds its first Write back until release is closed, then
// writes: a row's write delayed ahead of the table, which lands after
// the invocation that sent it has ended. entered is closed when the
// write is on its way.
type stalledLedger struct {
	charge.Ledger
	once             sync.Once
	entered, release chan struct{}
}

func newStalledLedger(l charge.Ledger) *stalledLedger {
	return &stalledLedger{Ledger: l, entered: make(chan struct{}), release: make(chan struct{})}
}

func (l *stalledLedger) Write(ctx context.Context, c charge.Charge) (charge.Charge, error) {
	first := false
	l.once.Do(func() { first = true })
	if first {
		close(l.entered)
		<-l.release
	}
	return l.Ledger.Write(context.WithoutCancel(ctx), c)
}

// holdALateRowAfterAVoid: an attempt's answer agreed, and its row's write
// is delayed past its invocation; the take-over's lookup disagrees, the
// record is held, and the operator confirms the charge void. The late
// write then lands and is refused: no row for the voided charge, its id
// answers 404, the void reads back as this decision's, and the client's
// retry charges afresh under a new key.
func holdALateRowAfterAVoid(t *testing.T, newStores NewStoresFunc) {
	ctx := context.Background()
	w := newWorld(t, newStores)
	acq := &liar{sb: sandbox.New("")}
	late := newStalledLedger(w.ledger)
	zombie := charge.NewService(w.guard, late, acq, Render, charge.Config{Now: w.clock.Now})
	var first charge.Result
	var wg sync.WaitGroup
	wg.Go(func() { first = zombie.Charge(ctx, input("late-row-key")) })
	<-late.entered // captured, the answer agrees; the row is on its way
	rec, err := w.guard.Lookup(ctx, pkOf("late-row-key"))
	if err != nil {
		t.Fatal(err)
	}
	id := charge.ID(rec.DownstreamKey)
	w.clock.Advance(time.Minute) // the attempt's lease ended
	acq.lookup = tenTimes
	svc := w.service(acq)
	if r := svc.Charge(ctx, input("late-row-key")); r.Outcome != op.Mismatch {
		t.Fatalf("the take-over whose lookup disagrees: %s", r.Outcome)
	}
	w.mustBeHeld(t, "late-row-key", acquirer.ReasonAmount)
	w.clock.Advance(7 * time.Second) // past T + skew
	void := w.decision(t, "late-row-key", idem.SettleVoidConfirmed, "dec-late-row", acquirer.Authorization{})
	if st, err := svc.Settle(ctx, void); err != nil || st.State != op.ReleasedByThis {
		t.Fatalf("void-confirmed: %+v, %v", st, err)
	}
	close(late.release) // the late row lands
	wg.Wait()
	if first.Outcome == op.Executed || first.Outcome == op.Replayed {
		t.Fatalf("the attempt whose row landed late: %s", first.Outcome)
	}
	if row, err := w.ledger.Get(ctx, id); !errors.Is(err, charge.ErrNoCharge) {
		t.Fatalf("a row for the voided charge: %+v, %v", row, err)
	}
	if r := svc.Get(ctx, account, id); r.Outcome != op.NotFound {
		t.Fatalf("GET of the voided charge: %s, want %s", r.Outcome, op.NotFound)
	}
	if st, err := svc.ReadBack(ctx, void); err != nil || st.State != op.ReleasedByThis {
		t.Fatalf("the void read back: %s, %v", st.State, err)
	}
	acq.lookup = nil
	if r := svc.Charge(ctx, input("late-row-key")); r.Outcome != op.Executed || r.ChargeID == id {
		t.Fatalf("the client's retry: %s %s, want a new charge", r.Outcome, r.ChargeID)
	}
}

// holdWithoutARowOnEveryRoute: a charge held on its first answer has no
// row, and its id answers as its key does on every route: held, to its
// own account (404 to another's); once accepted, its row.
func holdWithoutARowOnEveryRoute(t *testing.T, newStores NewStoresFunc) {
	ctx := context.Background()
	w := newWorld(t, newStores)
	acq := &liar{sb: sandbox.New(""), authorize: tenTimes, lookup: tenTimes}
	svc := w.service(acq)
	if r := svc.Charge(ctx, input("held-no-row-key")); r.Outcome != op.Mismatch {
		t.Fatalf("first attempt: %s", r.Outcome)
	}
	rec := w.mustBeHeld(t, "held-no-row-key", acquirer.ReasonAmount)
	w.mustHaveNoRow(t, rec)
	id := charge.ID(rec.DownstreamKey)
	w.mustAnswerOnEveryRoute(t, svc, "held-no-row-key", id, op.Held)
	if r := svc.Get(ctx, "acct_other", id); r.Outcome != op.NotFound {
		t.Fatalf("another account's GET: %s", r.Outcome)
	}
	w.clock.Advance(time.Second)
	shown, err := svc.Peek(ctx, pkOf("held-no-row-key"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := svc.Settle(ctx, w.decision(t, "held-no-row-key", idem.SettleAccept, "dec-held-no-row", shown))
	if err != nil || st.State != op.CompletedByThis || st.Row.Amount != 250000 {
		t.Fatalf("accept: %+v, %v", st, err)
	}
	w.mustAnswerOnEveryRoute(t, svc, "held-no-row-key", id, op.Found)
}

// holdAMarkerWhoseRecordIsGone: a held marker whose hold never landed and
// whose record was released since (the marker is kept: it names a record
// no longer there) answers NotFound, once, on the charge's id.
func holdAMarkerWhoseRecordIsGone(t *testing.T, newStores NewStoresFunc) {
	ctx := context.Background()
	w := newWorld(t, newStores)
	svc := w.service(&liar{sb: sandbox.New("")})
	id := charge.ID(strings.Repeat("7", 40))
	if err := w.ledger.Hold(ctx, id, charge.HeldMarker{Account: "acct_1", Key: "released-since-key"}); err != nil {
		t.Fatal(err)
	}
	if r := svc.Get(ctx, "acct_1", id); r.Outcome != op.NotFound {
		t.Fatalf("GET of a marker whose record is gone: %s", r.Outcome)
	}
}

package op

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/obs"
)

// Errors of an operator's look and settlement, every operation's.
var (
	// ErrTermsChanged: the acquirer's terms after the take-over are not the
	// ones the operator saw and accepted (Peek): look again.
	ErrTermsChanged = errors.New("the acquirer's terms changed since they were shown")
	// ErrCompleted: an operator's look met a completed record: the acquirer's
	// answer is stored, and there is nothing to decide.
	ErrCompleted = errors.New("the record is completed")
)

// State is what the table says of a decision's record, read back.
type State int

// The states of a decision's record.
const (
	// StillHeld: the record decided on is held; the decision has not taken
	// effect.
	StillHeld State = iota + 1
	// ReleasedByThis: this decision's void released the record (its
	// release marker names this decision).
	ReleasedByThis
	// CompletedByThis: this decision's accept completed the record.
	CompletedByThis
	// ReleasedByAnother: another decision's void released it.
	ReleasedByAnother
	// CompletedByAnother: the record completed otherwise: another
	// decision's accept, or (once the record is gone past its retention)
	// whichever decision wrote the intent's ledger row.
	CompletedByAnother
	// NotHeld: the record decided on is in flight but not held: there is
	// nothing to settle.
	NotHeld
	// Gone: the record decided on is no longer there, and neither a
	// release marker nor a ledger row says what became of it.
	Gone
	// InProgress: an earlier call of this same decision holds the record's
	// lease and is carrying it out (a call sent again while the first
	// still runs). Nothing was done; ask again once the lease ends
	// (Settled.Until).
	InProgress
)

var stateNames = map[State]string{
	StillHeld: "still_held", ReleasedByThis: "released_by_this_decision", CompletedByThis: "completed_by_this_decision",
	ReleasedByAnother: "released_by_another_decision", CompletedByAnother: "completed_by_another_decision",
	NotHeld: "not_held", Gone: "gone", InProgress: "in_progress",
}

// String is the state's stable name.
func (s State) String() string {
	if n, ok := stateNames[s]; ok {
		return n
	}
	return "unknown"
}

// Settlement is what every settlement's record reads back as, of any
// operation (Settled): its state, the settlement the table
// holds, and when an earlier call's lease ends.
type Settlement struct {
	State State
	// Decision is the settlement the table holds: the release marker's, the
	// completed record's, or, for a record still held, the decision it was
	// last taken over for (nil when none).
	Decision *idem.Settlement
	// Until is when the lease of an earlier call of the decision ends
	// (InProgress).
	Until time.Time
}

// TookEffect reports whether the decision read back is the one that
// settled the record.
func (s Settlement) TookEffect() bool { return s.State == ReleasedByThis || s.State == CompletedByThis }

// RunSettlement is the frame every operator's settlement runs in, a
// charge's (Settle) or a refund's (refund.Service.Settle), for the decision
// id of action by by on the intent instance of the held record pk: check
// the decision; read the record back, and do nothing but return when this
// decision took effect already (a retry), an earlier call of it is
// carrying it out (InProgress), or there is nothing to settle; act; read
// back again and return what the table says. The error is nil exactly
// when the decision took effect; head is the Settlement of a read-back S.
func RunSettlement[S any](ctx context.Context, pk, by, id, instance, action string, head func(*S) *Settlement,
	readBack func(context.Context) (S, error), act func(context.Context) error, logger *slog.Logger) (S, error) {
	var zero S
	switch {
	case by == "":
		return zero, errors.New("settle: who decides is required")
	case !idem.ValidDecisionID(id):
		return zero, errors.New("settle: a decision's id is 8 to 64 letters, digits, '-' and '_'")
	case instance == "":
		return zero, errors.New("settle: the intent decided on (the record's downstream key) is required")
	case action != idem.SettleVoidConfirmed && action != idem.SettleAccept:
		return zero, fmt.Errorf("settle: unknown decision %q", action)
	}
	ctx = obs.WithAttrs(ctx, slog.String("record", idem.Ref(pk)), slog.String("decision", id))
	before, err := readBack(ctx)
	b := head(&before)
	switch {
	case err != nil:
		return before, fmt.Errorf("settle %s: read the record: %w", idem.Ref(pk), err)
	case b.TookEffect(): // a retry of a decision that took effect
		return before, nil
	case b.State == InProgress:
		return before, fmt.Errorf("settle %s: an earlier call of this decision is carrying it out until %s: ask again then", idem.Ref(pk), b.Until.UTC().Format(time.RFC3339))
	case b.State != StillHeld:
		return before, fmt.Errorf("settle %s: nothing to settle: %s", idem.Ref(pk), b.State)
	}
	err = act(ctx)
	after, readErr := readBack(context.WithoutCancel(ctx))
	a := head(&after)
	if a.State == InProgress { // this call's own lease, which it could not end: the record is held
		a.State = StillHeld
	}
	switch {
	case readErr != nil:
		return zero, errors.Join(err, fmt.Errorf("settle %s: read the record back: %w", idem.Ref(pk), readErr))
	case a.TookEffect():
		if err != nil { // the write landed; its answer did not
			logger.WarnContext(ctx, "the decision took effect although a step reported an error", "error", err)
		}
		return after, nil
	case err == nil:
		err = fmt.Errorf("settle %s: the decision did not take effect: %s", idem.Ref(pk), a.State)
	}
	return after, err
}

// ReleasedBy is what the release marker of the intent instance says of
// the decision id of action: released by it or by another, or Gone when
// no decision released the intent.
func ReleasedBy(ctx context.Context, guard *idem.Guard, instance, id, action string) (Settlement, error) {
	m, err := guard.ReleaseMarker(ctx, instance)
	switch {
	case errors.Is(err, idem.ErrNotFound):
		return Settlement{State: Gone}, nil
	case err != nil:
		return Settlement{}, err
	case ours(&m.Decision, id, action):
		return Settlement{State: ReleasedByThis, Decision: &m.Decision}, nil
	}
	return Settlement{State: ReleasedByAnother, Decision: &m.Decision}, nil
}

// ours reports whether the settlement s is the decision id of action.
func ours(s *idem.Settlement, id, action string) bool {
	return s != nil && s.Decision == id && s.Action == action
}

// SettlementOf is what rec, the live record of the intent the decision id
// of action is about, says of it at now: carried out by an earlier call
// of it (its lease live), still held, not held, or completed by it or by
// another.
func SettlementOf(rec *idem.Record, id, action string, now time.Time) Settlement {
	switch {
	case rec.Held() && ours(rec.Hold.Settling, id, action) && rec.LeaseExpiresAt.After(now):
		return Settlement{State: InProgress, Decision: rec.Hold.Settling, Until: rec.LeaseExpiresAt}
	case rec.Held():
		return Settlement{State: StillHeld, Decision: rec.Hold.Settling}
	case rec.Status == idem.StatusInProgress:
		return Settlement{State: NotHeld}
	}
	out := Settlement{State: CompletedByAnother}
	if rec.Hold != nil && rec.Hold.Settlement != nil {
		out.Decision = rec.Hold.Settlement
		if ours(rec.Hold.Settlement, id, action) {
			out.State = CompletedByThis
		}
	}
	return out
}

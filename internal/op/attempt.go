package op

import (
	"context"
	"errors"
	"fmt"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/idem"
)

// Attempt is what an operation supplies to the one path of an owner's
// attempt (Run): its precondition read, its acquirer calls and their
// check against what was asked, its row with the bound's closing step
// (Finish), and its hold. Ans is the acquirer's answer, Res the
// operation's result. An Attempt holds one attempt's state (its request,
// what Ready read, what the bound reserved): a new one serves each claim.
type Attempt[Ans, Res any] interface {
	// Ended is an early ending (Early) as the operation's result.
	Ended(Early) Res
	// Ready reads what the attempt needs before anything is reserved or
	// sent (a refund's charge): nil to go on, else how the attempt ends.
	// Run then releases the key of a first attempt (nothing was reserved
	// or sent), or, after a take-over, leaves the record in flight for
	// the reconciler (Pending).
	Ready(ctx context.Context, lease *idem.Lease) *Res
	// Ask is the acquirer's lookup of the lease's intent, a take-over's
	// first question, its answer checked against what was asked: an
	// error wrapping acquirer.ErrNotFound when the acquirer has none,
	// acquirer.ErrMismatch when it disagrees.
	Ask(ctx context.Context, lease *idem.Lease) (Ans, error)
	// Send makes the operation's acquirer call with ctx, the lease's send
	// context (Send): errors wrap acquirer.ErrNotSent or
	// acquirer.ErrOutcomeUnknown.
	Send(ctx context.Context, lease *idem.Lease) (Ans, error)
	// Verify checks what Send answered against what was asked: an error
	// wrapping acquirer.ErrMismatch when it disagrees.
	Verify(ctx context.Context, lease *idem.Lease, ans Ans) error
	// Finish stores a checked answer: the row, the bound's closing step,
	// then the completion (Frame.Complete).
	Finish(ctx context.Context, lease *idem.Lease, ans Ans) Res
	// Hold holds the record for an operator, the answer having
	// disagreed (mismatch: Frame.Hold); held is false when the hold was
	// not written.
	Hold(ctx context.Context, lease *idem.Lease, mismatch error) (res Res, held bool)
}

// Bound is an operation's limit across its intents (a refund's balance
// of its charge): the steps Run takes around the acquirer's call. An
// operation without one (a charge) gives Run none.
type Bound[Res any] interface {
	// Reserve is a first attempt's one conditional write before it
	// sends: nil to send, else how the attempt ends (a refusal stored,
	// or the key released).
	Reserve(ctx context.Context, lease *idem.Lease) *Res
	// Refence is a take-over's, before it asks the acquirer: no earlier
	// attempt can move the reservation any more. Nil to ask.
	Refence(ctx context.Context, lease *idem.Lease) *Res
	// Unsent is a take-over's when the acquirer has nothing of the
	// intent: nil to send (the reservation holds), else how the attempt
	// ends (released, or completed from the row an earlier attempt
	// wrote).
	Unsent(ctx context.Context, lease *idem.Lease) *Res
	// Release gives the reservation back when nothing was sent, before
	// the key is released: no reservation is left without a record that
	// lists it.
	Release(ctx context.Context, lease *idem.Lease) error
}

// Run is the one path of an owner's attempt at any operation (DESIGN §4;
// a bound's steps, §7), in its order:
//  1. Ready, the precondition read;
//  2. a first attempt's Bound.Reserve; or, after a take-over,
//     Bound.Refence, then Ask: an answer is finished or held, none
//     (acquirer.ErrNotFound) goes on to Bound.Unsent, and a failed lookup
//     leaves the record in flight (Pending);
//  3. Send under the lease's deadline (Send; rule 3), once more when the
//     acquirer refused it unprocessed for a credential it has since
//     changed;
//  4. Verify, the evidence check: an answer that agrees is finished
//     (Finish: the row, the bound's closing step, the completion), one
//     that disagrees holds the record (Hold);
//  5. nothing sent: only a first attempt releases (rule 2), the
//     reservation first, then the key; an unknown outcome leaves the
//     record in flight (Frame.Abandon).
//
// b is nil for an operation without a bound.
func Run[Ans, Res any](ctx context.Context, f Frame, lease *idem.Lease, a Attempt[Ans, Res], b Bound[Res]) Res {
	if res := a.Ready(ctx, lease); res != nil {
		if lease.TakenOver() {
			return a.Ended(f.Abandon(ctx, lease))
		}
		if e, released := f.Release(ctx, lease); !released {
			return a.Ended(e)
		}
		return *res
	}
	if lease.TakenOver() {
		if res, done := takeOver(ctx, f, lease, a, b); done {
			return res
		}
	} else if b != nil {
		if res := b.Reserve(ctx, lease); res != nil {
			return *res
		}
	}
	return send(ctx, f, lease, a, b)
}

// takeOver is step 2 of a taken-over attempt: done is false when the
// acquirer has nothing of the intent and the attempt sends.
func takeOver[Ans, Res any](ctx context.Context, f Frame, lease *idem.Lease, a Attempt[Ans, Res], b Bound[Res]) (res Res, done bool) {
	if b != nil {
		if end := b.Refence(ctx, lease); end != nil {
			return *end, true
		}
	}
	ans, err := a.Ask(ctx, lease)
	switch {
	case err == nil:
		return a.Finish(ctx, lease, ans), true
	case errors.Is(err, acquirer.ErrMismatch):
		res, _ = a.Hold(ctx, lease, err)
		return res, true
	case !errors.Is(err, acquirer.ErrNotFound):
		f.Logger.WarnContext(ctx, "acquirer lookup failed", "attempt", lease.Attempt(), "error", err)
		return a.Ended(f.Abandon(ctx, lease)), true
	}
	if b != nil {
		if end := b.Unsent(ctx, lease); end != nil {
			return *end, true
		}
	}
	return res, false
}

// send is steps 3 to 5.
func send[Ans, Res any](ctx context.Context, f Frame, lease *idem.Lease, a Attempt[Ans, Res], b Bound[Res]) Res {
	call := func(callCtx context.Context) (Ans, error) { return a.Send(callCtx, lease) }
	ans, sent, err := Send(ctx, lease, f.AcquirerTimeout, f.StoreReserve, call)
	if errors.Is(err, acquirer.ErrNotSent) && errors.Is(err, acquirer.ErrCredentialChanged) && sent {
		// Refused before processing, and the client now holds another
		// credential: send once more, through the same lease check.
		ans, sent, err = Send(ctx, lease, f.AcquirerTimeout, f.StoreReserve, call)
	}
	if !sent {
		return a.Ended(notSent(ctx, f, lease, b))
	}
	if err == nil {
		err = a.Verify(ctx, lease, ans)
	}
	switch {
	case err == nil:
		return a.Finish(ctx, lease, ans)
	case errors.Is(err, acquirer.ErrMismatch):
		res, _ := a.Hold(ctx, lease, err)
		return res
	case errors.Is(err, acquirer.ErrNotSent):
		return a.Ended(notSent(ctx, f, lease, b))
	}
	f.Logger.WarnContext(ctx, "acquirer outcome unknown", "attempt", lease.Attempt(), "error", err)
	return a.Ended(f.Abandon(ctx, lease))
}

// notSent: nothing left this attempt. Only a first attempt releases
// (DESIGN §4 rule 2; after a take-over an earlier request may be in
// transit): the reservation first, then the key. It ends as Released.
func notSent[Res any](ctx context.Context, f Frame, lease *idem.Lease, b Bound[Res]) Early {
	if lease.TakenOver() {
		return f.Abandon(ctx, lease)
	}
	if b != nil {
		if err := b.Release(ctx, lease); err != nil {
			f.Logger.ErrorContext(ctx, "releasing the reservation failed; the record stays in flight", "error", err)
			return f.Abandon(ctx, lease)
		}
	}
	if e, released := f.Release(ctx, lease); !released {
		return e
	}
	return Early{Outcome: Released, RetryAfter: f.RetryAfter}
}

// Resolver is what the reconciler needs of an operation beyond its
// attempt's steps (Resolve).
type Resolver[Ans, Res any] interface {
	Attempt[Ans, Res]
	// Stored reports whether res is a stored answer (Executed or
	// Replayed).
	Stored(res Res) bool
	// Leftover is what an earlier attempt left of an intent the acquirer
	// has nothing of: found, the record completed from the row that
	// attempt wrote (res); else nothing, and the intent is released. An
	// error is a failed read.
	Leftover(ctx context.Context, lease *idem.Lease) (res Res, found bool, err error)
}

// Resolve is the reconciler's path through a stale record's lease,
// taken over once the wait-out has passed (Settler.Stale), the attempt
// ready (its precondition read): Bound.Refence, then Ask. An answer is
// finished (ReconciledCompleted once stored) or, when it disagrees,
// held (ReconciledMismatch); none is resolved from what an earlier
// attempt left (Leftover), or released, the reservation first, then the
// record (ReconciledReleased): nothing can be in transit any more (DESIGN
// §4 rule 3). An error means nothing is known yet: the record stays in
// flight, its lease ended, for a later pass. b is nil for an operation
// without a bound.
func Resolve[Ans, Res any](ctx context.Context, lease *idem.Lease, r Resolver[Ans, Res], b Bound[Res]) (Reconciled, error) {
	ref := idem.Ref(lease.PK())
	if b != nil && b.Refence(ctx, lease) != nil {
		return NothingToDo, fmt.Errorf("reconcile %s: the re-fence failed", ref)
	}
	ans, err := r.Ask(ctx, lease)
	switch {
	case errors.Is(err, acquirer.ErrMismatch):
		if _, held := r.Hold(ctx, lease, err); !held {
			return ReconciledMismatch, fmt.Errorf("reconcile %s: the acquirer's answer disagrees, and the hold was not written", ref)
		}
		return ReconciledMismatch, nil
	case err == nil:
		return stored(ref, r, r.Finish(ctx, lease, ans))
	case !errors.Is(err, acquirer.ErrNotFound):
		_ = lease.Abandon(ctx)
		return NothingToDo, fmt.Errorf("reconcile %s: acquirer lookup: %w", ref, err)
	}
	switch res, found, err := r.Leftover(ctx, lease); {
	case err != nil:
		_ = lease.Abandon(ctx)
		return NothingToDo, fmt.Errorf("reconcile %s: %w", ref, err)
	case found:
		return stored(ref, r, res)
	}
	if b != nil {
		if err := b.Release(ctx, lease); err != nil {
			_ = lease.Abandon(ctx)
			return NothingToDo, fmt.Errorf("reconcile %s: release the reservation: %w", ref, err)
		}
	}
	if err := lease.ReleaseReconciled(ctx); err != nil {
		return NothingToDo, fmt.Errorf("reconcile %s: %w", ref, err)
	}
	return ReconciledReleased, nil
}

// stored is what an attempt's result res means to the reconciler.
func stored[Ans, Res any](ref string, r Resolver[Ans, Res], res Res) (Reconciled, error) {
	if !r.Stored(res) {
		return NothingToDo, fmt.Errorf("reconcile %s: the completion did not land", ref)
	}
	return ReconciledCompleted, nil
}

// Storing is how an operation stores a checked answer as its row R
// (Store): what a row already there means, the bound's closing step, and
// the completion.
type Storing[R, Res any] interface {
	// Ended is an early ending (Early) as the operation's result.
	Ended(Early) Res
	// Kept checks the row as stored (an earlier attempt's row of the
	// intent wins) against the row this attempt wrote: nil to go on with
	// the stored row, else how the attempt ends.
	Kept(ctx context.Context, lease *idem.Lease, stored, row R) *Res
	// Close is the bound's closing step with the stored row (a refund's
	// entry moved as the row says): nil to complete, else how the attempt
	// ends. An operation without a bound returns nil.
	Close(ctx context.Context, lease *idem.Lease, stored R) *Res
	// Complete completes the record with the stored row's answer
	// (Frame.Complete).
	Complete(ctx context.Context, lease *idem.Lease, stored R) Res
}

// Store is how every operation stores a checked answer (an attempt's
// Finish, an operator's accept), in DESIGN §4's order: the row
// (WriteRow), the operation's check of the row as stored (Kept), then
// the bound's closing step and the completion (FromRow). A crash or a
// failure between two of them leaves the record in flight, and the next
// attempt or the reconciler finds the row and answers from it.
func Store[R, Res any](ctx context.Context, f Frame, lease *idem.Lease, rows Rows[R], row R, voided error, s Storing[R, Res]) Res {
	stored, end := WriteRow(ctx, f, lease, rows, row, voided)
	if end != nil {
		return s.Ended(*end)
	}
	if res := s.Kept(ctx, lease, stored, row); res != nil {
		return *res
	}
	return FromRow(ctx, lease, stored, s)
}

// FromRow completes the record from its row as stored, written by this
// attempt or an earlier one: the bound's closing step (Close), then the
// completion (Complete).
func FromRow[R, Res any](ctx context.Context, lease *idem.Lease, stored R, s Storing[R, Res]) Res {
	if res := s.Close(ctx, lease, stored); res != nil {
		return *res
	}
	return s.Complete(ctx, lease, stored)
}

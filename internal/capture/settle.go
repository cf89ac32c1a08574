package capture

import (
	"context"
	"errors"
	"fmt"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/refund"
)

// Errors of the operator's and the reconciler's paths.
var (
	// ErrNothingAtAcquirer: the acquirer has no capture or void under the
	// record's downstream key: there are no terms to accept.
	ErrNothingAtAcquirer = op.NothingAtAcquirer("the acquirer has no capture or void under the record's downstream key")
	// ErrNotItsRecord: a key that is not one of the operation's records.
	// Nothing was read or written.
	ErrNotItsRecord = op.NotItsRecord("not a capture's or a void's idempotency record")
)

// CaptureOperation and VoidOperation are the two operations as the
// operator's channel and the reconciler run them, through the registry of
// operations (op.Registry).
func (s *Service) CaptureOperation() op.Operation { return s.captures.registration() }

// VoidOperation is the voids' registration, as CaptureOperation.
func (s *Service) VoidOperation() op.Operation { return s.voids.registration() }

func (o *operation[A]) registration() op.Operation {
	return op.Adapt(o, op.Kind[Row, A]{Name: o.name, Shown: "what the acquirer says now, as the entry reserved it; nothing was written",
		AnswerTerms: func(a A) op.Terms { return termsOf(o.acts.stated(a)) }, RowTerms: rowTerms, RowOf: o.completedRow})
}

// rowTerms are the terms row r states, nil for no row.
func rowTerms(r Row) *op.Terms {
	if r.ID == "" {
		return nil
	}
	return &op.Terms{ActionID: r.AcquirerActionID, Status: r.Status, Amount: r.Amount, Currency: r.Currency}
}

// settler is the settlement's frame (op.Settler) with the operation's own
// steps: its row, its accept and its void-confirmed.
func (o *operation[A]) settler() op.Settler[Row] {
	return op.Settler[Row]{
		Guard: o.s.guard, Operation: o.name, NotItsRecord: ErrNotItsRecord, Now: o.s.cfg.Now, Logger: o.s.cfg.Logger,
		Row:    op.RowOf[Row](o.rows, o.id, ErrNoRow),
		Accept: o.accept, VoidConfirmed: o.voidConfirmed,
	}
}

// Peek is the acquirer's answer for the record pk's intent, asked without
// taking anything over and checked against what its entry reserved (or,
// with no entry, its row): what an operator is shown before deciding. It
// writes nothing. Errors: idem.ErrNotFound, op.ErrCompleted,
// idem.ErrOtherDownstream, ErrNothingAtAcquirer, a mismatch (with the
// answer), or a read's or the lookup's failure.
func (o *operation[A]) Peek(ctx context.Context, pk string) (A, error) {
	var none A
	rec, err := o.settler().Live(ctx, pk)
	if err != nil {
		return none, err
	}
	a, err := o.attemptOf(ctx, rec)
	if err != nil {
		return none, fmt.Errorf("peek %s: %w", idem.Ref(pk), err)
	}
	entry, _, err := o.s.balances.Entry(ctx, a.ch.ID, refund.Intent{Key: rec.DownstreamKey, Claimed: rec.CreatedAt})
	if err != nil {
		return none, fmt.Errorf("peek %s: %w", idem.Ref(pk), err)
	}
	a.entry = entry
	return a.ask(ctx, rec.DownstreamKey)
}

// attemptOf is an attempt at rec's stored request on its charge, as its
// account finds it.
func (o *operation[A]) attemptOf(ctx context.Context, rec *idem.Record) (*attempt[A], error) {
	canonical, err := idem.DecodeCanonical(rec.Request)
	if err != nil {
		return nil, fmt.Errorf("stored request: %w", err)
	}
	req, err := o.stored(canonical)
	if err != nil {
		return nil, fmt.Errorf("stored request: %w", err)
	}
	got := o.s.charges.Get(ctx, rec.Account, req.ChargeID)
	if got.Outcome != op.Found {
		return nil, fmt.Errorf("the %s's charge: %s", o.name, got.Outcome)
	}
	return &attempt[A]{o: o, req: req, ch: got.Charge}, nil
}

// ask is the lookup of downstreamKey checked as a take-over checks it,
// ErrNothingAtAcquirer when the acquirer has none.
func (a *attempt[A]) ask(ctx context.Context, downstreamKey string) (A, error) {
	s := a.o.s
	ctx, cancel := context.WithTimeout(ctx, s.cfg.AcquirerTimeout)
	defer cancel()
	ans, err := a.o.acts.lookup(ctx, s.acquirer, downstreamKey)
	if errors.Is(err, acquirer.ErrNotFound) {
		return ans, ErrNothingAtAcquirer
	}
	if err == nil {
		_, lookup := a.o.acts.endpoints()
		err = a.check(ctx, lookup, ans, downstreamKey)
	}
	return ans, err
}

// Settle carries out an operator's decision d on the held record d.PK, as
// refund.Service.Settle does a refund's:
//
//   - idem.SettleVoidConfirmed: only once the record's last lease ended
//     more than T + skew ago, and never when the intent has its row
//     (ErrRowExists): the voided marker at the row's key first, then the
//     entry re-fenced and released (a void's or a final capture's closing
//     given back, so captures go on), then the record removed.
//   - idem.SettleAccept: the lookup after the take-over must agree with
//     itself and with what the entry reserved, and be d.Terms
//     (op.ErrTermsChanged); the intent then finishes as an attempt does:
//     the row, the entry, the completion.
//
// It reads the record back whatever happens; the error is nil exactly
// when Settled.TookEffect.
func (o *operation[A]) Settle(ctx context.Context, d op.Decision) (op.Settled[Row], error) {
	return o.settler().Settle(ctx, d)
}

// ReadBack is what the table says of decision d's record. It writes
// nothing.
func (o *operation[A]) ReadBack(ctx context.Context, d op.Decision) (op.Settled[Row], error) {
	return o.settler().ReadBack(ctx, d)
}

// takeOverHeld takes the held record of d over for d and makes the
// attempt of its stored request. giveBack ends the lease, the record
// held, and wraps err in step's name.
func (o *operation[A]) takeOverHeld(ctx context.Context, d op.Decision, step string) (*idem.Lease, *attempt[A], func(error) error, error) {
	lease, giveBack, err := o.settler().TakeOver(ctx, d, step)
	if err != nil {
		return nil, nil, nil, err
	}
	rec := lease.Record()
	a, err := o.attemptOf(ctx, &rec)
	if err != nil {
		return nil, nil, nil, giveBack(err)
	}
	return lease, a, giveBack, nil
}

// voidConfirmed: the take-over (waited out), the voided marker at the
// row's key (refused when the row is there), then the entry re-fenced and
// released, then the record removed.
func (o *operation[A]) voidConfirmed(ctx context.Context, d op.Decision) error {
	lease, a, giveBack, err := o.takeOverHeld(ctx, d, "void-confirmed")
	if err != nil {
		return err
	}
	switch err := idem.RetryConflicts(ctx, func() error { return o.rows.Void(ctx, o.id(lease.DownstreamKey())) }); {
	case errors.Is(err, ErrRowExists):
		return giveBack(ErrRowExists)
	case err != nil:
		return giveBack(fmt.Errorf("%s row: %w", o.name, err))
	}
	if err := a.refence(ctx, lease); err != nil {
		return giveBack(fmt.Errorf("re-fence: %w", err))
	}
	if a.entry.State == refund.EntrySucceeded {
		return giveBack(errors.New("the entry says the action succeeded: a person reconciles it"))
	}
	if err := a.Release(ctx, lease); err != nil {
		return giveBack(fmt.Errorf("release the entry: %w", err))
	}
	if err := lease.VoidConfirmed(ctx); err != nil {
		return giveBack(err)
	}
	o.s.cfg.Logger.WarnContext(ctx, "held "+o.name+" released: the operator confirmed nothing was done", "by", d.By, "amount", a.entry.Amount)
	return nil
}

// accept: the take-over, the lookup checked against the reservation and
// against what was shown, then the attempt's own finish, which completes
// the held record with the settlement.
func (o *operation[A]) accept(ctx context.Context, d op.Decision) error {
	lease, a, giveBack, err := o.takeOverHeld(ctx, d, "accept")
	if err != nil {
		return err
	}
	if err := a.refence(ctx, lease); err != nil {
		return giveBack(fmt.Errorf("re-fence: %w", err))
	}
	ans, err := a.ask(ctx, lease.DownstreamKey())
	if err != nil {
		return giveBack(err)
	}
	st := o.acts.stated(ans)
	if err := d.Terms.Changed(termsOf(st)); err != nil {
		return giveBack(err)
	}
	if res := a.Finish(ctx, lease, ans); res.Outcome != op.Executed {
		_ = lease.Abandon(context.WithoutCancel(ctx))
		return fmt.Errorf("accept %s: the %s did not complete (%s); the record stays held, and accepting again finishes it", idem.Ref(d.PK), o.name, res.Outcome)
	}
	o.s.cfg.Logger.WarnContext(ctx, "held "+o.name+" accepted with the acquirer's terms", "by", d.By,
		"acquirer_status", st.Status, "acquirer_amount", st.Amount, "acquirer_currency", st.Currency)
	return nil
}

// Reconcile resolves a record left in flight, as refund.Service.Reconcile
// does a refund's: it takes the lease over only once it ended more than
// the wait-out ago (DESIGN §4 rule 3), re-fences the entry and asks the
// acquirer. Found, it finishes as an attempt does; absent, it completes
// from the row an earlier attempt wrote, or releases the entry, then the
// record. A held record is left to its operator. An error means nothing
// is known yet: retry later; except ErrNotItsRecord, which no retry
// changes.
func (o *operation[A]) Reconcile(ctx context.Context, pk string) (op.Reconciled, error) {
	return op.Reconcile(ctx, o.settler(), pk, o.stored, o.resolve)
}

// resolve is the reconciler's path once the lease is taken over: the
// charge, then op.Resolve. A charge its GET does not find (none for the
// account: an attempt died between its claim and its first read, or the
// charge's row does not read) has no reservation unless its entry says
// so: the re-fence folds an intent that holds none, so no reservation
// still on its way can land, and the record is released (or completed
// from its row, when an attempt wrote one); an intent that holds an
// entry is left in flight for a person.
func (o *operation[A]) resolve(ctx context.Context, lease *idem.Lease, req intent) (op.Reconciled, error) {
	pk := idem.Ref(lease.PK())
	got := o.s.charges.Get(ctx, lease.Record().Account, req.ChargeID)
	a := &attempt[A]{o: o, req: req, ch: got.Charge}
	switch {
	case got.Outcome == op.Found:
		return op.Resolve[A, Result](ctx, lease, a, a)
	case got.Outcome != op.NotFound:
		_ = lease.Abandon(ctx)
		return op.NothingToDo, fmt.Errorf("reconcile %s: the charge: %s", pk, got.Outcome)
	}
	a.ch.ID = req.ChargeID
	if err := a.refence(ctx, lease); err != nil || a.entry.State != refund.EntryReleased {
		_ = lease.Abandon(ctx)
		return op.NothingToDo, fmt.Errorf("reconcile %s: the charge is not found, and its balance has an entry for the %s (or did not answer: %v)", pk, o.name, err)
	}
	switch res, found, err := a.Leftover(ctx, lease); {
	case err != nil:
		_ = lease.Abandon(ctx)
		return op.NothingToDo, fmt.Errorf("reconcile %s: the %s's row: %w", pk, o.name, err)
	case found && !a.Stored(res):
		return op.NothingToDo, fmt.Errorf("reconcile %s: the completion from the %s's row did not land (%s)", pk, o.name, res.Outcome)
	case found:
		return op.ReconciledCompleted, nil
	}
	if err := lease.ReleaseReconciled(ctx); err != nil {
		return op.NothingToDo, fmt.Errorf("reconcile %s: %w", pk, err)
	}
	return op.ReconciledReleased, nil
}

package refund

import (
	"context"
	"errors"
	"fmt"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/op"
)

// Errors of an operator's settlement of a held refund; none writes
// anything but the take-over of the lease, which is ended again.
var (
	// ErrNoAcquirerRefund: the acquirer has no refund under the record's
	// downstream key: there are no terms to accept.
	ErrNoAcquirerRefund = op.NothingAtAcquirer("the acquirer has no refund under the record's downstream key")
	// ErrRowExists: the held refund already has its row. A row is never
	// deleted or changed, so a void is refused; accept it, or a person
	// reconciles the books.
	ErrRowExists = errors.New("the held refund already has its row")
)

// settler is the settlement's frame (op.Settler) with a refund's own
// steps: its row, its accept and its void-confirmed.
func (s *Service) settler() op.Settler[Refund] {
	return op.Settler[Refund]{
		Guard: s.guard, Operation: Operation, NotItsRecord: ErrNotARefundRecord, Now: s.cfg.Now, Logger: s.cfg.Logger,
		Row:    op.RowOf[Refund](s.ledger, ID, ErrNoRefund),
		Accept: s.accept, VoidConfirmed: s.voidConfirmed,
	}
}

// Peek is the acquirer's refund for the record pk's intent, asked
// without taking anything over and checked against what its entry
// reserved: a refund disagrees unless the entry reserves it, or the
// intent holds no entry and its row states the refund's terms (without
// a row: ReasonEntryDisagrees). What an operator is shown before
// deciding. It writes nothing. The record must be in progress, held or
// not. Errors:
// idem.ErrNotFound, op.ErrCompleted, idem.ErrOtherDownstream,
// ErrNoAcquirerRefund, a mismatch (with the refund), or a read's or the
// lookup's failure.
func (s *Service) Peek(ctx context.Context, pk string) (acquirer.Refund, error) {
	rec, err := s.settler().Live(ctx, pk)
	if err != nil {
		return acquirer.Refund{}, err
	}
	ch, err := s.chargeOf(ctx, rec)
	if err != nil {
		return acquirer.Refund{}, fmt.Errorf("peek %s: %w", idem.Ref(pk), err)
	}
	entry, _, err := s.balances.Entry(ctx, ch.ID, Intent{Key: rec.DownstreamKey, Claimed: rec.CreatedAt})
	if err != nil {
		return acquirer.Refund{}, fmt.Errorf("peek %s: %w", idem.Ref(pk), err)
	}
	return s.ask(ctx, rec.DownstreamKey, ch, entry)
}

// chargeOf is the charge a refund record's stored request names, as its
// account finds it.
func (s *Service) chargeOf(ctx context.Context, rec *idem.Record) (charge.Charge, error) {
	canonical, err := idem.DecodeCanonical(rec.Request)
	if err != nil {
		return charge.Charge{}, fmt.Errorf("stored request: %w", err)
	}
	req, err := RequestFromCanonical(canonical)
	if err != nil {
		return charge.Charge{}, fmt.Errorf("stored request: %w", err)
	}
	got := s.charges.Get(ctx, rec.Account, req.ChargeID)
	if got.Outcome != op.Found {
		return charge.Charge{}, fmt.Errorf("the refund's charge: %s", got.Outcome)
	}
	return got.Charge, nil
}

// ask looks the refund under downstreamKey up and checks it against what
// entry reserved of ch (check): a refund agrees only with an entry that
// reserves it, or with the row of an intent that holds none.
func (s *Service) ask(ctx context.Context, downstreamKey string, ch charge.Charge, entry Entry) (acquirer.Refund, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.AcquirerTimeout)
	defer cancel()
	r, err := s.acquirer.LookupRefund(ctx, downstreamKey)
	if errors.Is(err, acquirer.ErrNotFound) {
		return r, ErrNoAcquirerRefund
	}
	if err == nil {
		err = s.check(ctx, acquirer.EndpointRefundLookup, r, downstreamKey, ch, entry)
	}
	return r, err
}

// Settle carries out an operator's decision d on the held refund record
// d.PK, of the intent d.Instance, through the service's own steps, and
// records who decided, the decision's id and when, as
// charge.Service.Settle does for a charge:
//
//   - idem.SettleVoidConfirmed: the operator had the refund voided at the
//     acquirer (or confirmed it never happened). Only once the record's
//     last lease ended more than T + skew ago (idem.ErrTooEarly), and
//     never when the refund has its row (ErrRowExists): the voided marker
//     at the row's key first (Ledger.Void), so no row of the refund is
//     ever written after it; then the entry is re-fenced and released,
//     giving its amount back to the charge, then the record is removed
//     with a release marker naming the decision.
//   - idem.SettleAccept: the lookup after the take-over must agree with
//     itself and with what the entry reserved (acquirer.CheckRefundTerms:
//     a tool never books a refund the bound did not reserve; a person
//     reconciles that), and be d.Terms (op.ErrTermsChanged). The
//     refund then finishes as an attempt does: the row, the entry, the
//     record's completion, which keeps the hold with the settlement.
//
// It reads the record back whatever happens and returns what the table
// says; the error is nil exactly when Settled.TookEffect.
func (s *Service) Settle(ctx context.Context, d op.Decision) (op.Settled[Refund], error) {
	return s.settler().Settle(ctx, d)
}

// ReadBack is what the table says of decision d's record
// (op.Settler.ReadBack): the intent's record while it is there, then its
// refund row, then its release marker. It writes nothing.
func (s *Service) ReadBack(ctx context.Context, d op.Decision) (op.Settled[Refund], error) {
	return s.settler().ReadBack(ctx, d)
}

// takeOverHeld takes the held record of d over for d
// (op.Settler.TakeOver) and reads its stored request. giveBack ends the
// lease, the record held, and wraps err in step's name.
func (s *Service) takeOverHeld(ctx context.Context, d op.Decision, step string) (*idem.Lease, Request, func(error) error, error) {
	lease, giveBack, err := s.settler().TakeOver(ctx, d, step)
	if err != nil {
		return nil, Request{}, nil, err
	}
	req, err := op.StoredRequest(lease, RequestFromCanonical)
	if err != nil {
		return nil, Request{}, nil, giveBack(err)
	}
	return lease, req, giveBack, nil
}

// voidConfirmed: the take-over (waited out), the voided marker at the
// row's key (refused when the row is there), so no row of the refund can
// land afterwards, however late its write; then the entry re-fenced and
// released, then the record removed: the entry first, as every release
// of a refund.
func (s *Service) voidConfirmed(ctx context.Context, d op.Decision) error {
	lease, req, giveBack, err := s.takeOverHeld(ctx, d, "void-confirmed")
	if err != nil {
		return err
	}
	switch err := idem.RetryConflicts(ctx, func() error { return s.ledger.Void(ctx, ID(lease.DownstreamKey())) }); {
	case errors.Is(err, ErrRowExists):
		return giveBack(ErrRowExists)
	case err != nil:
		return giveBack(fmt.Errorf("refund row: %w", err))
	}
	entry, err := s.balances.Refence(ctx, req.ChargeID, s.intentOf(lease), lease.Attempt())
	switch {
	case err != nil:
		return giveBack(fmt.Errorf("re-fence: %w", err))
	case entry.State == EntrySucceeded:
		return giveBack(errors.New("the entry says the refund succeeded: a person reconciles it"))
	}
	if err := s.balances.Release(ctx, req.ChargeID, s.intentOf(lease), lease.Attempt()); err != nil {
		return giveBack(fmt.Errorf("release the entry: %w", err))
	}
	if err := lease.VoidConfirmed(ctx); err != nil {
		return giveBack(err)
	}
	s.cfg.Logger.WarnContext(ctx, "held refund released: the operator confirmed nothing is refunded", "by", d.By, "amount", entry.Amount)
	return nil
}

// accept: the take-over, the lookup checked against the reservation and
// against what was shown, then the attempt's own finish, which completes
// the held record with the settlement.
func (s *Service) accept(ctx context.Context, d op.Decision) error {
	lease, req, giveBack, err := s.takeOverHeld(ctx, d, "accept")
	if err != nil {
		return err
	}
	rec := lease.Record()
	ch, err := s.chargeOf(ctx, &rec)
	if err != nil {
		return giveBack(err)
	}
	entry, err := s.balances.Refence(ctx, ch.ID, s.intentOf(lease), lease.Attempt())
	if err != nil {
		return giveBack(fmt.Errorf("re-fence: %w", err))
	}
	r, err := s.ask(ctx, lease.DownstreamKey(), ch, entry)
	if err != nil {
		return giveBack(err)
	}
	if err := d.Terms.Changed(TermsOf(r)); err != nil {
		return giveBack(err)
	}
	if res := (&attempt{s: s, req: req, ch: ch, entry: entry}).Finish(ctx, lease, r); res.Outcome != op.Executed {
		_ = lease.Abandon(context.WithoutCancel(ctx))
		return fmt.Errorf("accept %s: the refund did not complete (%s); the record stays held, and accepting again finishes it", idem.Ref(d.PK), res.Outcome)
	}
	s.cfg.Logger.WarnContext(ctx, "held refund accepted with the acquirer's terms", "by", d.By,
		"acquirer_status", r.Status, "acquirer_amount", r.Amount, "acquirer_currency", r.Currency)
	return nil
}

package charge

import (
	"context"
	"errors"
	"fmt"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/op"
)

// Errors of an operator's settlement; none writes anything but the
// take-over of the lease, which is ended again.
var (
	// ErrNoAuthorization: an accept found no authorization at the acquirer
	// under the record's downstream key: there are no terms to accept.
	ErrNoAuthorization = op.NothingAtAcquirer("the acquirer has no authorization under the record's downstream key")
	// ErrLedgerRowExists: the held record already has a ledger row (an
	// earlier attempt's answer agreed and was written before the record
	// completed). A row is never deleted or changed: a void would leave a
	// captured row behind and let the retry write a second one, so it is
	// refused; an accept completes from the row only when the acquirer's
	// terms are the row's (otherwise ErrLedgerDisagrees).
	ErrLedgerRowExists = errors.New("the held record already has a ledger row")
	// ErrLedgerDisagrees: the held record's ledger row states other terms
	// than the acquirer's lookup. Neither can be settled by this tool: the
	// ledger is written once, so a person reconciles it with the acquirer.
	ErrLedgerDisagrees = errors.New("the ledger row and the acquirer's terms disagree")
)

// Record is the live record pk (idem.ErrNotFound when there is none), as
// an operator's step reads it before acting.
func (s *Service) Record(ctx context.Context, pk string) (*idem.Record, error) {
	return s.guard.Lookup(ctx, pk)
}

// settler is the settlement's frame (op.Settler) with a charge's own
// steps: its ledger row, its accept and its void-confirmed.
func (s *Service) settler() op.Settler[Charge] {
	return op.Settler[Charge]{
		Guard: s.guard, Operation: Operation, NotItsRecord: ErrNotAChargeRecord, Now: s.cfg.Now, Logger: s.cfg.Logger,
		Row:    op.RowOf[Charge](s.ledger, ID, ErrNoCharge),
		Accept: s.accept, VoidConfirmed: s.voidConfirmed,
	}
}

// Peek is the acquirer's answer for the record pk's intent, asked without
// taking anything over and checked only against itself (acquirer.CheckSelf):
// what an operator is shown before deciding. It writes nothing. The record
// must be in progress, held or not. Errors: idem.ErrNotFound, ErrCompleted,
// idem.ErrOtherDownstream (this service's acquirer is not the record's),
// ErrNoAuthorization, a mismatch, or the lookup's failure.
func (s *Service) Peek(ctx context.Context, pk string) (acquirer.Authorization, error) {
	rec, err := s.settler().Live(ctx, pk)
	if err != nil {
		return acquirer.Authorization{}, err
	}
	return s.askSelf(ctx, rec.DownstreamKey)
}

// askSelf asks the acquirer for downstreamKey and checks the answer
// against itself.
func (s *Service) askSelf(ctx context.Context, downstreamKey string) (acquirer.Authorization, error) {
	auth, err := s.ask(ctx, downstreamKey)
	if errors.Is(err, acquirer.ErrNotFound) {
		return auth, ErrNoAuthorization
	}
	if err == nil {
		err = acquirer.CheckSelf(auth, downstreamKey)
	}
	return auth, err
}

// Settle carries out an operator's decision d on the held record d.PK, of
// the intent d.Instance, through the service's own path, and records who
// decided, the decision's id and when:
//
//   - idem.SettleVoidConfirmed: the operator voided the charge at the
//     acquirer. The key is released, so the client's retry charges afresh
//     under a new downstream key, but only once the record's last lease
//     ended more than T + skew ago (the record's or this service's,
//     whichever is larger): a request of an earlier attempt may still be in
//     transit (idem.ErrTooEarly). The voided marker goes first, at the
//     charge's row key (Ledger.Void), so no row of the intent is ever
//     written after it, however late; refused when the record has a
//     ledger row (ErrLedgerRowExists). A release marker names the
//     decision; the record is gone.
//   - idem.SettleAccept: the record completes with the acquirer's own
//     terms as a fresh lookup after the take-over reports them, which must
//     be d.Terms (ErrTermsChanged) and must agree with themselves
//     (acquirer.CheckSelf: a mismatch, and the operator chooses again);
//     ErrNoAuthorization when the acquirer has none; ErrVoided when a
//     void of the intent put its marker and did not finish. The ledger row states
//     those terms; a row written earlier is kept and must state the same
//     (ErrLedgerDisagrees). The record keeps its hold with the settlement.
//
// Whatever happens, Settle reads the record back and returns what the
// table says (Settled): a write that landed although its answer was lost
// is this decision's, and a retry of a decision that took effect does
// nothing but read. The error says why the decision did not take effect,
// and is nil exactly when Settled.TookEffect; a refusal writes nothing but
// the take-over of the lease, which it ends again.
func (s *Service) Settle(ctx context.Context, d op.Decision) (op.Settled[Charge], error) {
	return s.settler().Settle(ctx, d)
}

// ReadBack is what the table says of decision d's record
// (op.Settler.ReadBack): the record of the intent d.Instance if it is
// still there; otherwise the intent's ledger row, then its release
// marker. It writes nothing: one to three reads.
func (s *Service) ReadBack(ctx context.Context, d op.Decision) (op.Settled[Charge], error) {
	return s.settler().ReadBack(ctx, d)
}

func (s *Service) voidConfirmed(ctx context.Context, d op.Decision) error {
	lease, giveBack, err := s.settler().TakeOver(ctx, d, "void-confirmed")
	if err != nil {
		return err
	}
	// The voided marker first: after it no row of the intent can land,
	// however late its write; a row already there refuses the void.
	switch err := idem.RetryConflicts(ctx, func() error { return s.ledger.Void(ctx, ID(lease.DownstreamKey())) }); {
	case errors.Is(err, ErrLedgerRowExists):
		return giveBack(fmt.Errorf("%w: it records a charge under this key; accept it, or reconcile the ledger by hand", ErrLedgerRowExists))
	case err != nil:
		return giveBack(fmt.Errorf("ledger: %w", err))
	}
	if err := lease.VoidConfirmed(ctx); err != nil {
		_ = lease.Abandon(context.WithoutCancel(ctx))
		return err
	}
	s.cfg.Logger.WarnContext(ctx, "held record released: the operator confirmed the charge was voided at the acquirer", "by", d.By)
	return nil
}

func (s *Service) accept(ctx context.Context, d op.Decision) error {
	lease, giveBack, err := s.settler().TakeOver(ctx, d, "accept")
	if err != nil {
		return err
	}
	req, err := op.StoredRequest(lease, RequestFromCanonical)
	if err != nil {
		return giveBack(err)
	}
	auth, err := s.askSelf(ctx, lease.DownstreamKey())
	if err != nil {
		return giveBack(err)
	}
	if auth.Status != acquirer.StatusDeclined && (auth.Status == acquirer.StatusAuthorized) != req.AuthorizeOnly() {
		return giveBack(fmt.Errorf("%w: the acquirer's authorization is %s, and the charge asked for capture=%t; a person reconciles it", acquirer.ErrMismatch, auth.Status, !req.AuthorizeOnly()))
	}
	if err := d.Terms.Changed(TermsOf(auth)); err != nil {
		return giveBack(err)
	}
	ch := s.chargeOf(lease, req, auth)
	switch row, err := s.ledger.Get(ctx, ch.ID); {
	case err == nil && !sameCharge(row, ch):
		return giveBack(fmt.Errorf("%w: the row states %s %d %s (%s)", ErrLedgerDisagrees, row.Status, row.Amount, row.Currency, row.AuthorizationID))
	case errors.Is(err, ErrVoided):
		return giveBack(fmt.Errorf("%w: a void-confirmed of this intent began; confirm the void again to finish it", ErrVoided))
	case err != nil && !errors.Is(err, ErrNoCharge):
		return giveBack(fmt.Errorf("ledger: %w", err))
	}
	switch res := s.store(ctx, lease, ch); res.Outcome {
	case op.Executed:
	case op.Replayed: // completed meanwhile, by this decision's own write or by another (Settle reads back which)
		return fmt.Errorf("accept %s: the record completed while this decision ran", idem.Ref(d.PK))
	default:
		_ = lease.Abandon(context.WithoutCancel(ctx))
		return fmt.Errorf("accept %s: the completion did not land (%s); the record stays held, and accepting again completes it from its ledger row", idem.Ref(d.PK), res.Outcome)
	}
	s.cfg.Logger.WarnContext(ctx, "held record accepted with the acquirer's terms", "by", d.By,
		"acquirer_amount", auth.Amount, "acquirer_currency", auth.Currency, "acquirer_status", auth.Status, "amount", req.Amount, "currency", req.Currency)
	return nil
}

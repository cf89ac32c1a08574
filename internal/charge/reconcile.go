package charge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/obs"
)

// Reconciled is what a reconciliation did.
type Reconciled int

const (
	// NothingToDo: the record is gone, completed, or its lease is live or
	// ended too recently (someone else is on it, or may still be).
	NothingToDo Reconciled = iota
	// ReconciledCompleted: the acquirer had the authorization; it is stored.
	ReconciledCompleted
	// ReconciledReleased: the acquirer never saw the request; the key is
	// free and the client's next retry executes.
	ReconciledReleased
	// ReconciledHeld: the record was held for an operator. Nothing was
	// asked of the acquirer; only Settle settles it.
	ReconciledHeld
	// ReconciledMismatch: the acquirer's answer disagreed with the request
	// (acquirer.ErrMismatch) and the record is now held, as a charge's
	// Mismatch outcome holds it.
	ReconciledMismatch
)

// String is the stable name of r, for logs and metrics.
func (r Reconciled) String() string {
	return [...]string{"nothing_to_do", "completed", "released", "held", "mismatch"}[r]
}

// ErrNotAChargeRecord: Reconcile was given a key that is not a charge's
// idempotency record. Nothing was read or written; retrying cannot help.
var ErrNotAChargeRecord = errors.New("not a charge's idempotency record")

// Reconcile resolves a record left in flight: it takes over the lease (only
// if it ended more than the in-transit bound plus the clock-skew margin ago,
// the record's or the deployment's, whichever is larger: DESIGN §4 rule
// 3), asks the acquirer by downstream key, and completes with the real
// outcome or releases the key. A held record is left to its operator
// (ReconciledHeld), and an answer that disagrees with the request holds
// the record (ReconciledMismatch). An error means nothing is known yet and the record stays in
// flight: retry later; except ErrNotAChargeRecord, which no retry changes.
// A record claimed for another acquirer is an error wrapping
// idem.ErrOtherDownstream, and nothing is asked or written.
func (s *Service) Reconcile(ctx context.Context, pk string) (Reconciled, error) {
	scope, err := idem.ParsePK(pk)
	if err == nil && scope.Operation != Operation {
		err = fmt.Errorf("operation %q", scope.Operation)
	}
	if err != nil {
		return NothingToDo, fmt.Errorf("reconcile: %w: %w", ErrNotAChargeRecord, err)
	}
	ctx = obs.WithAttrs(ctx, slog.String("record", idem.Ref(pk)))
	lease, err := s.guard.TakeOverStale(ctx, pk)
	switch {
	case errors.Is(err, idem.ErrNotFound) || errors.Is(err, idem.ErrLeaseLost):
		return NothingToDo, nil
	case errors.Is(err, idem.ErrHeld):
		return ReconciledHeld, nil
	}
	if err != nil {
		return NothingToDo, err
	}
	canonical, err := lease.Request()
	if err != nil {
		return NothingToDo, fmt.Errorf("reconcile %s: stored request: %w", idem.Ref(pk), err)
	}
	req, err := RequestFromCanonical(canonical)
	if err != nil {
		return NothingToDo, fmt.Errorf("reconcile %s: %w", idem.Ref(pk), err)
	}
	auth, err := s.lookup(ctx, lease, req)
	switch {
	case errors.Is(err, acquirer.ErrMismatch):
		s.hold(ctx, lease, req, err)
		return ReconciledMismatch, nil
	case err == nil:
		res := s.finish(ctx, lease, req, auth)
		if res.Outcome != Executed && res.Outcome != Replayed {
			return NothingToDo, fmt.Errorf("reconcile %s: completion did not land", idem.Ref(pk))
		}
		return ReconciledCompleted, nil
	case errors.Is(err, acquirer.ErrNotFound):
		// A ledger row is written only from an authorization: if an attempt
		// wrote one and died before completing, the charge exists whatever
		// the acquirer's lookup says now, and the record completes from it.
		if row, rowErr := s.ledger.Get(ctx, ChargeID(lease.DownstreamKey())); rowErr == nil {
			s.cfg.Logger.ErrorContext(ctx, "the acquirer does not find a charge the ledger has; completing from the ledger row")
			return s.completeFromRow(ctx, lease, pk, row)
		} else if !errors.Is(rowErr, ErrNoCharge) {
			_ = lease.Abandon(ctx)
			return NothingToDo, fmt.Errorf("reconcile %s: ledger: %w", idem.Ref(pk), rowErr)
		}
		if err := lease.ReleaseReconciled(ctx); err != nil {
			return NothingToDo, fmt.Errorf("reconcile %s: %w", idem.Ref(pk), err)
		}
		return ReconciledReleased, nil
	default:
		_ = lease.Abandon(ctx)
		return NothingToDo, fmt.Errorf("reconcile %s: acquirer lookup: %w", idem.Ref(pk), err)
	}
}

// completeFromRow completes the record with the answer of a ledger row
// already written for it.
func (s *Service) completeFromRow(ctx context.Context, lease *idem.Lease, pk string, row Charge) (Reconciled, error) {
	if err := lease.Complete(ctx, s.answer(row)); err != nil {
		return NothingToDo, fmt.Errorf("reconcile %s: %w", idem.Ref(pk), err)
	}
	return ReconciledCompleted, nil
}

// ErrNoAuthorization: an operator's accept found no authorization at the
// acquirer under the record's downstream key: there are no terms to
// accept. Nothing was written; if the operator voided the charge, the
// decision is void-confirmed.
var ErrNoAuthorization = errors.New("the acquirer has no authorization under the record's key")

// Settle carries out an operator's decision on the held record pk, through
// the service's own path, and records who decided (by) and when:
//
//   - idem.SettleVoidConfirmed: the operator voided the charge at the
//     acquirer. The key is released, so the client's retry charges afresh,
//     but only once the record's last lease ended more than T + skew ago
//     (the record's or the deployment's, whichever is larger): a request
//     of an earlier attempt may still be in transit (idem.ErrTooEarly).
//   - idem.SettleAccept: the record completes with the acquirer's own
//     terms as a fresh lookup reports them; the ledger row states them. The
//     lookup must agree with itself (acquirer.CheckSelf, its status against
//     its body); if it does not, nothing is written and the error wraps
//     acquirer.ErrMismatch: the operator chooses. ErrNoAuthorization when
//     the acquirer has none.
//
// It returns the charge an accept stored (zero for a void). Errors from
// the take-over (idem.ErrNotHeld, ErrTooEarly, ErrOtherDownstream, ...)
// write nothing.
func (s *Service) Settle(ctx context.Context, pk, action, by string) (Charge, error) {
	if _, err := idem.ParsePK(pk); err != nil {
		return Charge{}, fmt.Errorf("settle: %w: %w", ErrNotAChargeRecord, err)
	}
	if by == "" {
		return Charge{}, errors.New("settle: who decides is required")
	}
	ctx = obs.WithAttrs(ctx, slog.String("record", idem.Ref(pk)))
	switch action {
	case idem.SettleVoidConfirmed:
		lease, err := s.guard.TakeOverHeld(ctx, pk, true)
		if err != nil {
			return Charge{}, err
		}
		if err := lease.VoidConfirmed(ctx); err != nil {
			return Charge{}, err
		}
		s.cfg.Logger.WarnContext(ctx, "held record released: the operator confirmed the charge was voided at the acquirer", "by", by)
		return Charge{}, nil
	case idem.SettleAccept:
		return s.accept(ctx, pk, by)
	}
	return Charge{}, fmt.Errorf("settle: unknown decision %q", action)
}

func (s *Service) accept(ctx context.Context, pk, by string) (Charge, error) {
	lease, err := s.guard.TakeOverHeld(ctx, pk, false)
	if err != nil {
		return Charge{}, err
	}
	giveBack := func(err error) (Charge, error) {
		_ = lease.Abandon(ctx) // the record stays held; end this lease
		return Charge{}, fmt.Errorf("accept %s: %w", idem.Ref(pk), err)
	}
	canonical, err := lease.Request()
	if err != nil {
		return giveBack(fmt.Errorf("stored request: %w", err))
	}
	req, err := RequestFromCanonical(canonical)
	if err != nil {
		return giveBack(err)
	}
	auth, err := s.ask(ctx, lease)
	if errors.Is(err, acquirer.ErrNotFound) {
		return giveBack(ErrNoAuthorization)
	}
	if err == nil {
		err = acquirer.CheckSelf(auth, lease.DownstreamKey())
	}
	if err != nil {
		return giveBack(err)
	}
	accept := func(ctx context.Context, resp idem.Response) error { return lease.Accept(ctx, resp, by) }
	res := s.store(ctx, lease, s.chargeOf(lease, req, auth), accept)
	if res.Outcome != Executed {
		return Charge{}, fmt.Errorf("accept %s: the completion did not land (%s)", idem.Ref(pk), res.Outcome)
	}
	s.cfg.Logger.WarnContext(ctx, "held record accepted with the acquirer's terms", "by", by,
		"acquirer_amount", auth.Amount, "acquirer_currency", auth.Currency, "acquirer_status", auth.Status, "amount", req.Amount, "currency", req.Currency)
	ch, err := s.ledger.Get(ctx, ChargeID(lease.DownstreamKey()))
	if err != nil {
		return Charge{}, fmt.Errorf("accept %s: completed, but the ledger row reads back: %w", idem.Ref(pk), err)
	}
	return ch, nil
}

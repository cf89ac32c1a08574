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

// Errors of an operator's settlement; none writes anything but the
// take-over of the lease, which is ended again.
var (
	// ErrNoAuthorization: an accept found no authorization at the acquirer
	// under the record's downstream key: there are no terms to accept.
	ErrNoAuthorization = errors.New("the acquirer has no authorization under the record's key")
	// ErrTermsChanged: the acquirer's terms after the take-over are not the
	// ones the operator saw and accepted (Peek): look again.
	ErrTermsChanged = errors.New("the acquirer's terms changed since they were shown")
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

// Decision is an operator's settlement of a held record.
type Decision struct {
	// PK is the held record.
	PK string
	// Action is idem.SettleAccept or idem.SettleVoidConfirmed.
	Action string
	// By names who decided; it is recorded.
	By string
	// Terms, for an accept, are the acquirer's terms as the operator was
	// shown them (Peek): the fresh lookup after the take-over must state
	// the same authorization, status, amount and currency.
	Terms acquirer.Authorization
}

// Peek is the acquirer's answer for the held record pk, asked without
// taking anything over and checked only against itself (acquirer.CheckSelf):
// what an operator is shown before deciding. It writes nothing. Errors:
// idem.ErrNotHeld, idem.ErrOtherDownstream (this service's acquirer is not
// the record's), ErrNoAuthorization, a mismatch, or the lookup's failure.
func (s *Service) Peek(ctx context.Context, pk string) (acquirer.Authorization, error) {
	rec, err := s.guard.Lookup(ctx, pk)
	if err != nil {
		return acquirer.Authorization{}, err
	}
	if !rec.Held() {
		return acquirer.Authorization{}, fmt.Errorf("peek %s: %w", idem.Ref(pk), idem.ErrNotHeld)
	}
	if d := rec.Protocol.Downstream; d != "" && d != s.guard.Protocol().Downstream {
		return acquirer.Authorization{}, fmt.Errorf("peek %s (claimed for %q): %w", idem.Ref(pk), d, idem.ErrOtherDownstream)
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

// Settle carries out an operator's decision on a held record, through the
// service's own path, and records who decided and when:
//
//   - idem.SettleVoidConfirmed: the operator voided the charge at the
//     acquirer. The key is released, so the client's retry charges afresh
//     under a new downstream key, but only once the record's last lease
//     ended more than T + skew ago (the record's or this service's,
//     whichever is larger): a request of an earlier attempt may still be in
//     transit (idem.ErrTooEarly). Refused when the record has a ledger row
//     (ErrLedgerRowExists). The decision is logged (WARN, with by); the
//     record is gone.
//   - idem.SettleAccept: the record completes with the acquirer's own
//     terms as a fresh lookup after the take-over reports them, which must
//     be d.Terms (ErrTermsChanged) and must agree with themselves
//     (acquirer.CheckSelf: a mismatch, and the operator chooses again);
//     ErrNoAuthorization when the acquirer has none. The ledger row states
//     those terms; a row written earlier is kept and must state the same
//     (ErrLedgerDisagrees). The record keeps its hold with the settlement
//     (idem.Settlement: accept, by, when).
//
// It returns the charge an accept stored (zero for a void). A refusal
// writes nothing but the take-over of the lease, which it ends again.
func (s *Service) Settle(ctx context.Context, d Decision) (Charge, error) {
	if _, err := idem.ParsePK(d.PK); err != nil {
		return Charge{}, fmt.Errorf("settle: %w: %w", ErrNotAChargeRecord, err)
	}
	if d.By == "" {
		return Charge{}, errors.New("settle: who decides is required")
	}
	ctx = obs.WithAttrs(ctx, slog.String("record", idem.Ref(d.PK)))
	switch d.Action {
	case idem.SettleVoidConfirmed:
		return Charge{}, s.voidConfirmed(ctx, d)
	case idem.SettleAccept:
		return s.accept(ctx, d)
	}
	return Charge{}, fmt.Errorf("settle: unknown decision %q", d.Action)
}

func (s *Service) voidConfirmed(ctx context.Context, d Decision) error {
	lease, err := s.guard.TakeOverHeld(ctx, d.PK, true)
	if err != nil {
		return err
	}
	switch _, err := s.ledger.Get(ctx, ChargeID(lease.DownstreamKey())); {
	case err == nil:
		_ = lease.Abandon(context.WithoutCancel(ctx))
		return fmt.Errorf("void-confirmed %s: %w: it records a charge under this key; accept it, or reconcile the ledger by hand", idem.Ref(d.PK), ErrLedgerRowExists)
	case !errors.Is(err, ErrNoCharge):
		_ = lease.Abandon(context.WithoutCancel(ctx))
		return fmt.Errorf("void-confirmed %s: ledger: %w", idem.Ref(d.PK), err)
	}
	if err := lease.VoidConfirmed(ctx); err != nil {
		_ = lease.Abandon(context.WithoutCancel(ctx))
		return err
	}
	s.cfg.Logger.WarnContext(ctx, "held record released: the operator confirmed the charge was voided at the acquirer", "by", d.By)
	return nil
}

func (s *Service) accept(ctx context.Context, d Decision) (Charge, error) {
	lease, err := s.guard.TakeOverHeld(ctx, d.PK, false)
	if err != nil {
		return Charge{}, err
	}
	giveBack := func(err error) (Charge, error) {
		_ = lease.Abandon(context.WithoutCancel(ctx)) // the record stays held; end this lease, even past the deadline
		return Charge{}, fmt.Errorf("accept %s: %w", idem.Ref(d.PK), err)
	}
	canonical, err := lease.Request()
	if err != nil {
		return giveBack(fmt.Errorf("stored request: %w", err))
	}
	req, err := RequestFromCanonical(canonical)
	if err != nil {
		return giveBack(err)
	}
	auth, err := s.askSelf(ctx, lease.DownstreamKey())
	if err != nil {
		return giveBack(err)
	}
	if t := d.Terms; auth.ID != t.ID || auth.Status != t.Status || auth.Amount != t.Amount || auth.Currency != t.Currency {
		return giveBack(fmt.Errorf("%w: shown %s %d %s (%s), now %s %d %s (%s)", ErrTermsChanged,
			t.Status, t.Amount, t.Currency, t.ID, auth.Status, auth.Amount, auth.Currency, auth.ID))
	}
	ch := s.chargeOf(lease, req, auth)
	switch row, err := s.ledger.Get(ctx, ch.ID); {
	case err == nil && !sameCharge(row, ch):
		return giveBack(fmt.Errorf("%w: the row states %s %d %s (%s)", ErrLedgerDisagrees, row.Status, row.Amount, row.Currency, row.AuthorizationID))
	case err != nil && !errors.Is(err, ErrNoCharge):
		return giveBack(fmt.Errorf("ledger: %w", err))
	}
	accept := func(ctx context.Context, resp idem.Response) error { return lease.Accept(ctx, resp, d.By) }
	switch res := s.store(ctx, lease, ch, accept); res.Outcome {
	case Executed:
	case Replayed: // another operator's accept completed it first
		return Charge{}, fmt.Errorf("accept %s: another decision completed the record first (idemctl inspect)", idem.Ref(d.PK))
	default:
		_ = lease.Abandon(context.WithoutCancel(ctx))
		return Charge{}, fmt.Errorf("accept %s: the completion did not land (%s); the record stays held, and accepting again completes it from its ledger row", idem.Ref(d.PK), res.Outcome)
	}
	s.cfg.Logger.WarnContext(ctx, "held record accepted with the acquirer's terms", "by", d.By,
		"acquirer_amount", auth.Amount, "acquirer_currency", auth.Currency, "acquirer_status", auth.Status, "amount", req.Amount, "currency", req.Currency)
	row, err := s.ledger.Get(ctx, ch.ID)
	if err != nil {
		return Charge{}, fmt.Errorf("accept %s: completed, but the ledger row reads back: %w", idem.Ref(d.PK), err)
	}
	return row, nil
}

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

// Decision is an operator's settlement of a held record, as the
// operator's channel received it.
type Decision struct {
	// PK is the held record.
	PK string
	// Instance is the record's downstream key as the operator was shown
	// it: a decision settles that intent of the key, never a later one.
	Instance string
	// Action is idem.SettleAccept or idem.SettleVoidConfirmed.
	Action string
	// By names who decided: the principal the operator's channel
	// authenticated. It is recorded.
	By string
	// ID is the decision's id, the same on every retry of one decision
	// (idem.ValidDecisionID): what is stored with the settlement, and what a
	// retry reads back.
	ID string
	// Terms, for an accept, are the acquirer's terms as the operator was
	// shown them (Peek): the fresh lookup after the take-over must state
	// the same authorization, status, amount and currency.
	Terms acquirer.Authorization
}

// Settled is a charge's settlement read back after the decision ran
// (Settle), or instead of running it again (a retry): the Settlement, and
// the ledger row of a completed record, when it reads.
type Settled struct {
	op.Settlement
	Charge Charge
}

// chargeRecord refuses, for step, a key that is not a charge's
// idempotency record (ErrNotAChargeRecord): a refund's record is settled
// by its own service, whose balance a charge's step would not touch.
func chargeRecord(step, pk string) error {
	scope, err := idem.ParsePK(pk)
	if err == nil && scope.Operation != Operation {
		err = fmt.Errorf("operation %q", scope.Operation)
	}
	if err != nil {
		return fmt.Errorf("%s: %w: %w", step, ErrNotAChargeRecord, err)
	}
	return nil
}

// Record is the live record pk (idem.ErrNotFound when there is none), as
// an operator's step reads it before acting.
func (s *Service) Record(ctx context.Context, pk string) (*idem.Record, error) {
	return s.guard.Lookup(ctx, pk)
}

// Peek is the acquirer's answer for the record pk's intent, asked without
// taking anything over and checked only against itself (acquirer.CheckSelf):
// what an operator is shown before deciding. It writes nothing. The record
// must be in progress, held or not. Errors: idem.ErrNotFound, ErrCompleted,
// idem.ErrOtherDownstream (this service's acquirer is not the record's),
// ErrNoAuthorization, a mismatch, or the lookup's failure.
func (s *Service) Peek(ctx context.Context, pk string) (acquirer.Authorization, error) {
	if err := chargeRecord("peek", pk); err != nil {
		return acquirer.Authorization{}, err
	}
	rec, err := s.guard.Lookup(ctx, pk)
	if err != nil {
		return acquirer.Authorization{}, err
	}
	if rec.Status != idem.StatusInProgress {
		return acquirer.Authorization{}, fmt.Errorf("peek %s: %w", idem.Ref(pk), op.ErrCompleted)
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
func (s *Service) Settle(ctx context.Context, d Decision) (Settled, error) {
	if err := chargeRecord("settle", d.PK); err != nil {
		return Settled{}, err
	}
	act := s.accept
	if d.Action == idem.SettleVoidConfirmed {
		act = s.voidConfirmed
	}
	return op.RunSettlement(ctx, d.PK, d.By, d.ID, d.Instance, d.Action, func(st *Settled) *op.Settlement { return &st.Settlement },
		func(ctx context.Context) (Settled, error) { return s.ReadBack(ctx, d) },
		func(ctx context.Context) error { return act(ctx, d) }, s.cfg.Logger)
}

// ReadBack is what the table says of decision d's record (Settled): the
// record of the intent d.Instance if it is still there; otherwise the
// intent's ledger row (a void is refused when there is one, and an accept
// writes one, so a row means the intent completed), then its release
// marker. A settlement counts as this decision's only when both its id
// and its action are d's. It writes nothing: one to three reads.
func (s *Service) ReadBack(ctx context.Context, d Decision) (Settled, error) {
	if err := chargeRecord("read back", d.PK); err != nil {
		return Settled{}, err
	}
	rec, err := s.guard.Lookup(ctx, d.PK)
	switch {
	case err == nil && rec.DownstreamKey == d.Instance:
		return s.stateOf(ctx, rec, d), nil
	case err != nil && !errors.Is(err, idem.ErrNotFound):
		return Settled{}, err
	}
	// Gone, or the key's next intent holds it.
	switch row, err := s.ledger.Get(ctx, ID(d.Instance)); {
	case err == nil:
		return Settled{Settlement: op.Settlement{State: op.CompletedByAnother}, Charge: row}, nil
	case !errors.Is(err, ErrNoCharge):
		return Settled{}, err
	}
	st, err := op.ReleasedBy(ctx, s.guard, d.Instance, d.ID, d.Action)
	return Settled{Settlement: st}, err
}

// stateOf is the state of rec, the record decision d is about.
func (s *Service) stateOf(ctx context.Context, rec *idem.Record, d Decision) Settled {
	out := Settled{Settlement: op.SettlementOf(rec, d.ID, d.Action, s.cfg.Now())}
	if out.State == op.CompletedByThis || out.State == op.CompletedByAnother {
		if row, err := s.ledger.Get(ctx, ID(rec.DownstreamKey)); err == nil {
			out.Charge = row
		}
	}
	return out
}

func (s *Service) voidConfirmed(ctx context.Context, d Decision) error {
	lease, err := s.guard.TakeOverHeld(ctx, d.PK, d.Instance, idem.Settlement{Action: idem.SettleVoidConfirmed, By: d.By, Decision: d.ID})
	if err != nil {
		return err
	}
	// The voided marker first: after it no row of the intent can land,
	// however late its write; a row already there refuses the void.
	switch err := idem.RetryConflicts(ctx, func() error { return s.ledger.Void(ctx, ID(lease.DownstreamKey())) }); {
	case errors.Is(err, ErrLedgerRowExists):
		_ = lease.Abandon(context.WithoutCancel(ctx))
		return fmt.Errorf("void-confirmed %s: %w: it records a charge under this key; accept it, or reconcile the ledger by hand", idem.Ref(d.PK), ErrLedgerRowExists)
	case err != nil:
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

func (s *Service) accept(ctx context.Context, d Decision) error {
	lease, err := s.guard.TakeOverHeld(ctx, d.PK, d.Instance, idem.Settlement{Action: idem.SettleAccept, By: d.By, Decision: d.ID})
	if err != nil {
		return err
	}
	giveBack := func(err error) error {
		_ = lease.Abandon(context.WithoutCancel(ctx)) // the record stays held; end this lease, even past the deadline
		return fmt.Errorf("accept %s: %w", idem.Ref(d.PK), err)
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
		return giveBack(fmt.Errorf("%w: shown %s %d %s (%s), now %s %d %s (%s)", op.ErrTermsChanged,
			t.Status, t.Amount, t.Currency, t.ID, auth.Status, auth.Amount, auth.Currency, auth.ID))
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
	switch res := s.store(ctx, lease, ch, lease.Accept); res.Outcome {
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

package charge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

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

// Settlement is what every settlement's record reads back as, a charge's
// or a refund's (refund.Settled): its state, the settlement the table
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

// Settled is a charge's settlement read back after the decision ran
// (Settle), or instead of running it again (a retry): the Settlement, and
// the ledger row of a completed record, when it reads.
type Settled struct {
	Settlement
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

// ErrCompleted: an operator's look met a completed record: the acquirer's
// answer is stored, and there is nothing to decide.
var ErrCompleted = errors.New("the record is completed")

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
		return acquirer.Authorization{}, fmt.Errorf("peek %s: %w", idem.Ref(pk), ErrCompleted)
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
	return RunSettlement(ctx, d.PK, d.By, d.ID, d.Instance, d.Action, func(st *Settled) *Settlement { return &st.Settlement },
		func(ctx context.Context) (Settled, error) { return s.ReadBack(ctx, d) },
		func(ctx context.Context) error { return act(ctx, d) }, s.cfg.Logger)
}

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
		return Settled{Settlement: Settlement{State: CompletedByAnother}, Charge: row}, nil
	case !errors.Is(err, ErrNoCharge):
		return Settled{}, err
	}
	st, err := ReleasedBy(ctx, s.guard, d.Instance, d.ID, d.Action)
	return Settled{Settlement: st}, err
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

// stateOf is the state of rec, the record decision d is about.
func (s *Service) stateOf(ctx context.Context, rec *idem.Record, d Decision) Settled {
	out := Settled{Settlement: SettlementOf(rec, d.ID, d.Action, s.cfg.Now())}
	if out.State == CompletedByThis || out.State == CompletedByAnother {
		if row, err := s.ledger.Get(ctx, ID(rec.DownstreamKey)); err == nil {
			out.Charge = row
		}
	}
	return out
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
		return giveBack(fmt.Errorf("%w: shown %s %d %s (%s), now %s %d %s (%s)", ErrTermsChanged,
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
	case Executed:
	case Replayed: // completed meanwhile, by this decision's own write or by another (Settle reads back which)
		return fmt.Errorf("accept %s: the record completed while this decision ran", idem.Ref(d.PK))
	default:
		_ = lease.Abandon(context.WithoutCancel(ctx))
		return fmt.Errorf("accept %s: the completion did not land (%s); the record stays held, and accepting again completes it from its ledger row", idem.Ref(d.PK), res.Outcome)
	}
	s.cfg.Logger.WarnContext(ctx, "held record accepted with the acquirer's terms", "by", d.By,
		"acquirer_amount", auth.Amount, "acquirer_currency", auth.Currency, "acquirer_status", auth.Status, "amount", req.Amount, "currency", req.Currency)
	return nil
}

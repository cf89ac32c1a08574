package capture

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/obs"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/refund"
)

// Charges finds a caller's charge as GET /v1/charges/{id} does
// (charge.Service.Get): Found only once the charge's own record has
// completed.
type Charges interface {
	Get(ctx context.Context, account, id string) charge.Result
}

// Service captures and voids authorizations made without their capture,
// idempotently: two operations ("capture" and "void"), each intent one
// record of the engine, on the path every operation takes (op.Run) and on
// one balance per charge, whose conditional steps decide (docs/design.md
// §8). The two differ only in their request, their acquirer call and
// their kind on the balance (acts); everything else is one code.
type Service struct {
	guard    *idem.Guard
	charges  Charges
	balances Balances
	acquirer Acquirer
	answer   Renderer
	cfg      charge.Config
	frame    op.Frame
	captures *operation[acquirer.Capture]
	voids    *operation[acquirer.Void]
}

// NewService returns a Service. The guard, the balances and the two
// ledgers must be on one table (dynamo.Open's); charges is the charge
// service of the same deployment; cfg is the charge service's, defaulted
// the same way. It panics on a nil guard, charges, balances, ledger or
// renderer, a wiring mistake.
func NewService(guard *idem.Guard, charges Charges, balances Balances, captureRows, voidRows Ledger, acq Acquirer, answer Renderer, cfg charge.Config) *Service {
	if guard == nil || charges == nil || balances == nil || captureRows == nil || voidRows == nil || answer == nil {
		panic("capture.NewService: a nil dependency")
	}
	cfg = cfg.Defaulted()
	s := &Service{guard: guard, charges: charges, balances: retrying{balances}, acquirer: acq, answer: answer, cfg: cfg, frame: cfg.Frame(guard)}
	s.captures = &operation[acquirer.Capture]{s: s, name: OperationCapture, codes: CaptureCodes, rows: captureRows,
		id: CaptureID, validID: ValidCaptureID, acts: captureActs{}, parse: parseCapture, stored: captureFromCanonical}
	s.voids = &operation[acquirer.Void]{s: s, name: OperationVoid, codes: VoidCodes, rows: voidRows,
		id: VoidID, validID: ValidVoidID, acts: voidActs{}, parse: parseVoid, stored: voidFromCanonical}
	return s
}

// Capture is the one door of a capture (POST /v1/charges/{id}/captures),
// and Void of a void (…/void). The order of decisions is the API's, the
// refunds' order: the account, the key, the body and the charge id's
// shape (nothing stored); then the key's record (a replay, in flight,
// reused); then the charge (no such charge, or its outcome not known
// yet: the key is released, nothing stored; nothing capturable or
// expired: stored, final for the key); then the bound; then the acquirer.
func (s *Service) Capture(ctx context.Context, in Input) Result { return s.captures.door(ctx, in) }

// Void is the one door of a void: as Capture.
func (s *Service) Void(ctx context.Context, in Input) Result { return s.voids.door(ctx, in) }

// intent is a capture's or a void's request as the one path reads it.
type intent struct {
	ChargeID string
	Kind     Kind
	// Amount is a capture's, 0 for what remains (a void's always).
	Amount int64
	// Reason is a void's.
	Reason string
}

func parseCapture(chargeID string, body []byte, maxAmount int64) (intent, idem.Canonical, error) {
	r, err := ParseRequest(chargeID, body, maxAmount)
	return intent{ChargeID: r.ChargeID, Kind: r.Kind(), Amount: r.Amount}, r.Canonical(), err
}

func parseVoid(chargeID string, body []byte, _ int64) (intent, idem.Canonical, error) {
	r, err := ParseVoidRequest(chargeID, body)
	return intent{ChargeID: r.ChargeID, Kind: Void, Reason: r.Reason}, r.Canonical(), err
}

func captureFromCanonical(c idem.Canonical) (intent, error) {
	r, err := RequestFromCanonical(c)
	return intent{ChargeID: r.ChargeID, Kind: r.Kind(), Amount: r.Amount}, err
}

func voidFromCanonical(c idem.Canonical) (intent, error) {
	r, err := VoidRequestFromCanonical(c)
	return intent{ChargeID: r.ChargeID, Kind: Void, Reason: r.Reason}, err
}

// operation is one of the two operations, A its acquirer's answer: its
// name, codes, rows and ids, its acts, and how its request reads.
type operation[A any] struct {
	s       *Service
	name    string
	codes   op.Codes
	rows    Ledger
	id      func(downstreamKey string) string
	validID func(id string) bool
	acts    acts[A]
	parse   func(chargeID string, body []byte, maxAmount int64) (intent, idem.Canonical, error)
	stored  func(idem.Canonical) (intent, error)
}

func (o *operation[A]) door(ctx context.Context, in Input) Result {
	key, early := op.Open(in.Account, in.Keys)
	if early != nil {
		return endedEarly(*early)
	}
	req, canonical, err := o.parse(in.ChargeID, in.Body, o.s.cfg.MaxAmount)
	if err != nil {
		return Result{Outcome: op.RequestInvalid, Errors: fieldErrors(err), Key: key}
	}
	if !charge.ValidID(in.ChargeID) {
		return Result{Outcome: op.NotFound, Key: key}
	}
	scope := idem.Scope{Operation: o.name, Account: in.Account, Key: key, Source: in.Source}
	record := idem.Ref(scope.PK())
	ctx = obs.WithAttrs(ctx, slog.String("record", record))
	res := o.claimAndExecute(ctx, scope, req, canonical)
	res.Record, res.Key = record, key
	return res
}

func fieldErrors(err error) []charge.FieldError {
	var v *charge.ValidationError
	if errors.As(err, &v) {
		return v.Errors
	}
	return []charge.FieldError{{Field: "body", Message: "invalid"}}
}

func (o *operation[A]) claimAndExecute(ctx context.Context, scope idem.Scope, req intent, canonical idem.Canonical) Result {
	claim, early := o.s.frame.Claim(ctx, scope, canonical)
	switch {
	case early != nil:
		return endedEarly(*early)
	case claim.Replay != nil:
		return Result{Outcome: op.Replayed, Response: *claim.Replay, Refusal: refusalOf(*claim.Replay), ID: o.answeredID(claim.DownstreamKey),
			Source: claim.Source, ClaimedAt: claim.ClaimedAt}
	}
	a := &attempt[A]{o: o, req: req}
	res := op.Run[A, Result](ctx, o.s.frame, claim.Lease, a, a)
	res.Attempt = claim.Lease.Attempt()
	if res.Outcome == op.Executed {
		rec := claim.Lease.Record()
		res.Source, res.ClaimedAt, res.ID = rec.Source, rec.CreatedAt, o.answeredID(rec.DownstreamKey)
	}
	return res
}

// answeredID is the row id a completed record's answer is of: none
// without a downstream key.
func (o *operation[A]) answeredID(downstreamKey string) string {
	if downstreamKey == "" {
		return ""
	}
	return o.id(downstreamKey)
}

// attempt is one owner's attempt at a capture or a void: the steps op.Run
// takes in the one order (docs/design.md §8), with the charge Ready read
// and the entry the balance holds for the intent (the bound).
type attempt[A any] struct {
	o     *operation[A]
	req   intent
	ch    charge.Charge
	entry refund.Entry
	// refuse is the refusal Ready read from a first attempt's charge,
	// which Reserve stores instead of reserving (0: none).
	refuse op.Outcome
	// answer is the acquirer's checked answer Finish stores.
	answer A
}

func (a *attempt[A]) Ended(e op.Early) Result { return endedEarly(e) }

// Ready is the charge, as its GET answers it: an authorization made
// without its capture, by this deployment's acquirer, and, for a first
// attempt, not past its expiry. A first attempt's charge that is no
// authorization of this acquirer, or past its expiry, is refused for good: Ready keeps the refusal for the
// bound's step to store (refuse), as it stores the bound's own, so every
// copy of the key answers alike. Anything else ends the attempt (op.Run
// releases a first attempt's key: nothing was reserved or sent; a
// take-over's record is left in flight for the reconciler). A take-over
// goes on past the expiry: its intent may have reserved before it, and
// the balance never closes under an intent in flight (Expire).
func (a *attempt[A]) Ready(ctx context.Context, lease *idem.Lease) *Result {
	s := a.o.s
	rec := lease.Record()
	got := s.charges.Get(ctx, rec.Account, a.req.ChargeID)
	var res Result
	switch got.Outcome {
	case op.Found:
		ch := got.Charge
		switch {
		case (!ch.OfAcquirer(rec.Protocol.Downstream) || ch.Status != acquirer.StatusAuthorized) && !lease.TakenOver():
			a.ch, a.refuse = ch, op.NotCapturable
			return nil
		case !ch.OfAcquirer(rec.Protocol.Downstream) || ch.Status != acquirer.StatusAuthorized:
			res = Result{Outcome: op.NotCapturable}
		case !lease.TakenOver() && !s.cfg.Now().Before(ch.AuthorizationExpiresAt):
			a.ch, a.refuse = ch, op.AuthorizationExpired
			return nil
		default:
			a.ch = ch
			return nil
		}
	case op.NotFound:
		res = Result{Outcome: op.NotFound}
	case op.InFlight:
		res = Result{Outcome: op.ChargePending, RetryAfter: max(got.RetryAfter, s.cfg.RetryAfter), WaitOut: got.WaitOut}
	case op.Held:
		res = Result{Outcome: op.ChargeHeld, RetryAfter: max(got.RetryAfter, s.cfg.RetryAfter)}
	default:
		res = Result{Outcome: op.Unavailable, RetryAfter: s.cfg.RetryAfter}
	}
	if lease.TakenOver() {
		s.cfg.Logger.ErrorContext(ctx, "a taken-over "+a.o.name+"'s charge did not read as an authorization; left for the reconciler", "charge_outcome", got.Outcome.String())
	}
	return &res
}

// Reserve is the bound's one conditional write (op.Reserve: reissued when
// another action's end passed its stamp). Its refusals that no later
// state undoes are stored, final for the key: an amount over what remains
// (CAPTURE_EXCEEDS_AUTHORIZATION, what remained at that moment), an
// authorization closed or wholly captured (NotCapturable, or
// AuthorizationExpired when it closed at its expiry: closedAs), and the
// refusal Ready read (refuse: then nothing is written to the balance).
// Every other refusal stores nothing and releases the key (nothing was
// reserved or sent), so a retry decides again: another capture or void
// in flight that this one must wait for (CaptureInFlight, VoidInFlight: a
// final capture in flight answers as a capture; CaptureHeld and VoidHeld
// when it is held for an operator: waitingOn), captures in flight that
// hold all that remains of a capture of what remains or a void (they may
// yet give it back: CaptureInFlight), or the charge's most actions in
// flight at once (refund.MaxEntries, CaptureInFlight: they end by
// themselves). The balance's refusal says all of it: nothing is read to
// tell them apart. A fenced reservation means a later attempt owns the
// intent.
func (a *attempt[A]) Reserve(ctx context.Context, lease *idem.Lease) *Result {
	s := a.o.s
	if a.refuse != 0 {
		res := a.o.complete(ctx, lease, Answer{Refused: a.refuse}, "")
		return &res
	}
	entry, err := op.Reserve(ctx, lease, refund.ErrStampPassed, func(ctx context.Context, stamp time.Time) (refund.Entry, error) {
		return s.balances.Reserve(ctx, Reservation{
			ChargeID: a.ch.ID, Authorized: a.ch.Amount, Intent: s.intentOf(lease), Fence: lease.Attempt(), Kind: a.req.Kind,
			Stamp: stamp, Amount: a.req.Amount,
		})
	})
	a.entry = entry
	var (
		noRoom   *NoRoomError
		inFlight *InFlightError
		closed   *ClosedError
		res      Result
	)
	switch {
	case err == nil:
		return nil
	case errors.As(err, &noRoom):
		res = a.o.complete(ctx, lease, Answer{Exceeded: true, Capturable: noRoom.Capturable}, "")
	case errors.As(err, &inFlight):
		res = s.refused(ctx, lease, waitingOn(inFlight))
	case errors.Is(err, refund.ErrLimitReached):
		res = s.refused(ctx, lease, op.CaptureInFlight)
	case errors.As(err, &closed):
		res = a.o.complete(ctx, lease, Answer{Refused: closedAs(closed)}, "")
	case errors.Is(err, ErrNothingCapturable):
		res = a.o.complete(ctx, lease, Answer{Refused: op.NotCapturable}, "")
	case errors.Is(err, refund.ErrFenced):
		res = s.pendingResult()
	case errors.Is(err, refund.ErrReleased), errors.Is(err, refund.ErrStampPassed), errors.Is(err, op.ErrLeaseEnded):
		res = s.refused(ctx, lease, op.Unavailable)
	default:
		// The write may have landed: release the entry first, then the
		// key (nothing was sent; only a first attempt reserves).
		s.cfg.Logger.ErrorContext(ctx, "reserve failed", "error", err)
		if err := a.Release(ctx, lease); err != nil {
			s.cfg.Logger.ErrorContext(ctx, "releasing the reservation failed; the record stays in flight", "error", err)
			res = s.abandonPending(ctx, lease)
		} else {
			res = s.refused(ctx, lease, op.Unavailable)
		}
	}
	return &res
}

// waitingOn is the outcome of a reservation refused behind e: a void's,
// or a capture's (a final capture answers as one), in flight or held for
// an operator.
func waitingOn(e *InFlightError) op.Outcome {
	switch {
	case e.Kind == Void && e.Held:
		return op.VoidHeld
	case e.Kind == Void:
		return op.VoidInFlight
	case e.Held:
		return op.CaptureHeld
	}
	return op.CaptureInFlight
}

// closedAs is the refusal of a reservation the closed authorization
// refused: AuthorizationExpired when it closed at its expiry (the
// acquirer's, which may come before the row's), else NotCapturable.
func closedAs(e *ClosedError) op.Outcome {
	if e.Closed == ClosedExpired {
		return op.AuthorizationExpired
	}
	return op.NotCapturable
}

// refused releases the key of a first attempt that reserved nothing and
// sent nothing (op.Frame.Release), and ends as outcome, retried after the
// service's delay (a final refusal: never).
func (s *Service) refused(ctx context.Context, lease *idem.Lease, outcome op.Outcome) Result {
	if e, released := s.frame.Release(ctx, lease); !released {
		return endedEarly(e)
	}
	res := Result{Outcome: outcome}
	switch outcome {
	case op.CaptureInFlight, op.VoidInFlight:
		// The other intent's outcome decides, within its owner's lease,
		// at most as long as ours from now, plus T and the skew: a
		// queued command is hidden that long, one receive per lease.
		res.RetryAfter, res.WaitOut = s.cfg.RetryAfter, lease.TimeLeft()+lease.WaitOut()
	case op.CaptureHeld, op.VoidHeld:
		// Only an operator's settlement ends the other intent.
		res.RetryAfter = max(s.cfg.HeldRetryAfter, s.cfg.RetryAfter)
	default:
		res.RetryAfter = s.cfg.RetryAfter
	}
	return res
}

// Release gives the intent's entry back: nothing was sent.
func (a *attempt[A]) Release(ctx context.Context, lease *idem.Lease) error {
	s := a.o.s
	return s.balances.Release(ctx, a.ch.ID, s.intentOf(lease), lease.Attempt(), a.req.Kind)
}

// Refence is a take-over's first step: re-fence the entry, so no earlier
// attempt can move it any more (an intent with none is folded by the same
// step: no attempt reserved, so none sent); op.Run then asks the
// acquirer.
func (a *attempt[A]) Refence(ctx context.Context, lease *idem.Lease) *Result {
	s := a.o.s
	if err := a.refence(ctx, lease); err != nil {
		s.cfg.Logger.WarnContext(ctx, "re-fence failed", "attempt", lease.Attempt(), "error", err)
		res := s.abandonPending(ctx, lease)
		return &res
	}
	return nil
}

// refence re-fences the intent's entry for the lease and keeps it.
func (a *attempt[A]) refence(ctx context.Context, lease *idem.Lease) error {
	s := a.o.s
	entry, err := s.balances.Refence(ctx, a.ch.ID, s.intentOf(lease), lease.Attempt())
	if err == nil {
		a.entry = entry
	}
	return err
}

// Unsent: the acquirer has nothing of the intent. Its row, when there is
// one, was written from the acquirer's answer, so the record completes
// from it (an acquirer that does not find an action it made must never
// free the key of an intent whose row the books hold). Otherwise the
// take-over's entry decides: reserved, send it; folded, release the key.
func (a *attempt[A]) Unsent(ctx context.Context, lease *idem.Lease) *Result {
	s := a.o.s
	var res Result
	if row, found, err := a.row(ctx, lease); err != nil || found {
		res = a.fromRow(ctx, lease, row, err)
		return &res
	}
	switch a.entry.State {
	case refund.EntryReleased:
		if err := lease.ReleaseReconciled(ctx); err != nil {
			s.cfg.Logger.ErrorContext(ctx, "release failed", "error", err)
			res = s.abandonPending(ctx, lease)
		} else {
			res = Result{Outcome: op.Released, RetryAfter: s.cfg.RetryAfter}
		}
	case refund.EntryReserved:
		return nil // send
	default:
		res = a.fromRow(ctx, lease, Row{}, ErrNoRow)
	}
	return &res
}

// asked is what every attempt sends: the entry's amount, which the
// reservation resolved, of the charge's authorization.
func (a *attempt[A]) asked() asked {
	return asked{AuthorizationID: a.ch.AuthorizationID, Amount: a.entry.Amount, Currency: a.ch.Currency, Final: a.req.Kind == Final}
}

// Send is the acquirer's call for the entry's amount.
func (a *attempt[A]) Send(ctx context.Context, lease *idem.Lease) (A, error) {
	call, _ := a.o.acts.endpoints()
	ctx, end := a.o.s.cfg.Tracer.Start(ctx, op.Step{Name: "acquirer." + call, Client: true})
	defer end(nil)
	return a.o.acts.send(ctx, a.o.s.acquirer, lease.DownstreamKey(), a.asked())
}

// Verify checks the acquirer's answer against what the entry reserved.
func (a *attempt[A]) Verify(ctx context.Context, lease *idem.Lease, ans A) error {
	call, _ := a.o.acts.endpoints()
	return a.check(ctx, call, ans, lease.DownstreamKey())
}

// Ask is a take-over's lookup, checked against what the entry says was
// sent.
func (a *attempt[A]) Ask(ctx context.Context, lease *idem.Lease) (A, error) {
	s := a.o.s
	ctx, cancel := context.WithTimeout(ctx, s.cfg.AcquirerTimeout)
	defer cancel()
	_, lookup := a.o.acts.endpoints()
	ctx, end := s.cfg.Tracer.Start(ctx, op.Step{Name: "acquirer." + lookup, Client: true})
	ans, err := a.o.acts.lookup(ctx, s.acquirer, lease.DownstreamKey())
	end(nil)
	if err == nil {
		err = a.check(ctx, lookup, ans, lease.DownstreamKey())
	}
	return ans, err
}

// check compares the acquirer's answer under key with what the intent's
// entry reserved, naming the endpoint that answered. An intent with no
// entry has ended (folded by its success or its release) or never
// reserved: the only action that agrees with it is one its row states,
// checked against the row's terms (Kept then compares the rest); one
// without a row was made against an entry that holds nothing
// (refund.ReasonEntryDisagrees). An error that is not a mismatch is a
// failed read of the row.
func (a *attempt[A]) check(ctx context.Context, endpoint string, ans A, key string) error {
	if a.entry.State == refund.EntryReserved {
		return a.o.acts.check(ans, key, a.asked(), endpoint)
	}
	row, err := a.o.rows.Get(ctx, a.o.id(key))
	switch {
	case err != nil && !errors.Is(err, ErrNoRow):
		return fmt.Errorf("%s row: %w", a.o.name, err)
	case err != nil:
		return a.o.acts.disagrees(ans, refund.ReasonEntryDisagrees, endpoint)
	}
	q := asked{AuthorizationID: a.ch.AuthorizationID, Amount: row.Amount, Currency: row.Currency, Final: row.Final()}
	return a.o.acts.check(ans, key, q, endpoint)
}

// Hold holds the record for an operator: the acquirer's answer disagrees
// with what was sent or with itself, or with what is stored of it. The
// reservation is kept and no row is written; held false when the hold
// could not be written. The entry is marked held first
// (Balances.MarkHeld), as a charge's held marker goes before its hold,
// so a capture or void refused behind it is told it waits for an
// operator (CaptureHeld, VoidHeld). When the mark is not written, the
// record is not held either: its lease is ended, and the next attempt
// asks the acquirer again; when the hold is not written, the mark is
// taken back (a crash between the two leaves it until the next attempt
// holds the record again or ends it, whose fold removes it).
func (a *attempt[A]) Hold(ctx context.Context, lease *idem.Lease, mismatch error) (Result, bool) {
	s := a.o.s
	key, q := lease.DownstreamKey(), a.asked()
	m, ok := a.o.acts.mismatch(mismatch, key, q)
	if !ok { // an acquirer that reports a mismatch of its own kind
		var none A
		m, _ = a.o.acts.mismatch(a.o.acts.disagrees(none, "unclassified", ""), key, q)
	}
	s.cfg.Logger.ErrorContext(ctx, "the acquirer's "+a.o.name+" disagrees with the request; the record is held for an operator",
		"reason", m.Reason, "endpoint", m.Endpoint, "http_status", m.HTTPStatus, "acquirer_status", m.Stated.Status,
		"acquirer_amount", m.Stated.Amount, "acquirer_currency", m.Stated.Currency, "amount", q.Amount, "currency", q.Currency,
		"attempt", lease.Attempt())
	err := idem.RetryConflicts(ctx, func() error {
		return s.balances.MarkHeld(ctx, a.ch.ID, s.intentOf(lease), lease.Attempt(), true)
	})
	if err != nil {
		s.cfg.Logger.ErrorContext(ctx, "the entry was not marked held; the record is not held, and the next attempt asks again", "error", err)
		s.abandonPending(ctx, lease)
		return Result{Outcome: op.Mismatch, RetryAfter: s.cfg.HeldRetryAfter}, false
	}
	e, held := s.frame.Hold(ctx, lease, m.Reason, m.Evidence)
	if !held { // the record stays in flight: take the mark back (until the entry folds, else)
		if err := s.balances.MarkHeld(ctx, a.ch.ID, s.intentOf(lease), lease.Attempt(), false); err != nil {
			s.cfg.Logger.WarnContext(ctx, "the entry's held mark stays until the next attempt ends it", "error", err)
		}
	}
	return endedEarly(e), held
}

// Finish stores the acquirer's checked answer (op.Store): the row, then
// the entry (succeeded, or released for a decline), then the completion.
func (a *attempt[A]) Finish(ctx context.Context, lease *idem.Lease, ans A) Result {
	s := a.o.s
	a.answer = ans
	st := a.o.acts.stated(ans)
	row := Row{
		Origin:   op.OriginOf(lease, a.o.id(lease.DownstreamKey()), s.cfg.Now(), s.cfg.Region),
		ChargeID: a.ch.ID, Kind: a.req.Kind, Status: st.Status, DeclineCode: st.DeclineCode, Amount: st.Amount,
		Currency: st.Currency, Reason: a.req.Reason, AcquirerActionID: st.ID,
	}
	return op.Store(ctx, s.frame, lease, a.o.rows, row, ErrVoided, a)
}

// ReasonRowDiffers: the acquirer's answer differs from the row an earlier
// attempt of the intent wrote from its answer.
const ReasonRowDiffers = "row_differs"

// Kept: a row an earlier attempt wrote must state what the acquirer
// answers now: it decides the entry's step, so a difference holds the
// record.
func (a *attempt[A]) Kept(ctx context.Context, lease *idem.Lease, stored, row Row) *Result {
	if sameAction(stored, row) {
		return nil
	}
	res, _ := a.Hold(ctx, lease, a.o.acts.disagrees(a.answer, ReasonRowDiffers, ""))
	return &res
}

// sameAction reports whether two rows record the same action: everything
// the acquirer decided.
func sameAction(a, b Row) bool {
	return a.Kind == b.Kind && a.Status == b.Status && a.DeclineCode == b.DeclineCode && a.Amount == b.Amount &&
		a.Currency == b.Currency && a.AcquirerActionID == b.AcquirerActionID
}

// Close moves the entry as the row says: a success folds it by its kind
// (a capture's amount captured, a final capture's or a void's closing),
// a decline gives it back. A decline that states the authorization
// expired also closes the balance as the sweeper would (Expire), when no
// other intent is in flight (else the sweeper closes it at its expiry).
// An entry that has moved the other way holds the record; one a later
// attempt holds leaves the answer to it.
func (a *attempt[A]) Close(ctx context.Context, lease *idem.Lease, row Row) *Result {
	s := a.o.s
	in := s.intentOf(lease)
	var err error
	if row.Succeeded() {
		err = s.balances.Succeed(ctx, row.ChargeID, in, lease.Attempt(), a.req.Kind)
	} else {
		err = s.balances.Release(ctx, row.ChargeID, in, lease.Attempt(), a.req.Kind)
		if err == nil && row.DeclineCode == acquirer.DeclineAuthorizationExpired {
			if _, _, err := s.balances.Expire(ctx, row.ChargeID, a.ch.Amount); err != nil {
				s.cfg.Logger.WarnContext(ctx, "the acquirer says the authorization expired; its balance is left to the sweeper", "error", err)
			}
		}
	}
	var res Result
	switch {
	case errors.Is(err, refund.ErrFenced):
		now, ok, readErr := s.balances.Entry(ctx, row.ChargeID, in)
		if readErr == nil && ok && (now.Fence == lease.Attempt() || now.State == refund.EntryReleased) {
			res, _ = a.Hold(ctx, lease, a.o.acts.disagrees(a.o.acts.ofRow(row, a.ch.AuthorizationID), refund.ReasonEntryDisagrees, ""))
		} else {
			res = s.pendingResult() // a later attempt owns the intent
		}
	case err != nil:
		s.cfg.Logger.ErrorContext(ctx, "moving the "+a.o.name+"'s entry failed; the record stays in flight", "error", err)
		res = s.abandonPending(ctx, lease)
	default:
		return nil
	}
	return &res
}

// Complete completes the record with the row's answer.
func (a *attempt[A]) Complete(ctx context.Context, lease *idem.Lease, row Row) Result {
	return a.o.complete(ctx, lease, Answer{Row: &row}, row.ID)
}

// row is the row an earlier attempt of the lease's intent wrote: found
// false when there is none (or a voided marker), err a failed read.
func (a *attempt[A]) row(ctx context.Context, lease *idem.Lease) (Row, bool, error) {
	row, err := a.o.rows.Get(ctx, a.o.id(lease.DownstreamKey()))
	if errors.Is(err, ErrNoRow) {
		return Row{}, false, nil
	}
	return row, err == nil, err
}

// fromRow answers from the row an earlier attempt wrote (op.FromRow);
// err, a failed read (or no row where one must be), leaves the record in
// flight.
func (a *attempt[A]) fromRow(ctx context.Context, lease *idem.Lease, row Row, err error) Result {
	if err != nil {
		a.o.s.cfg.Logger.ErrorContext(ctx, "the "+a.o.name+"'s row could not be read; the record stays in flight", "error", err)
		return a.o.s.abandonPending(ctx, lease)
	}
	return op.FromRow(ctx, lease, row, a)
}

// Stored reports whether res is a stored answer.
func (a *attempt[A]) Stored(res Result) bool {
	return res.Outcome == op.Executed || res.Outcome == op.Replayed
}

// Leftover: the acquirer has nothing of the intent. A row an earlier
// attempt wrote from the acquirer's answer completes the record, whatever
// the entry says; without one, the intent is released. An error is a
// failed read of the row.
func (a *attempt[A]) Leftover(ctx context.Context, lease *idem.Lease) (Result, bool, error) {
	row, found, err := a.row(ctx, lease)
	if err != nil || !found {
		return Result{}, false, err
	}
	return a.fromRow(ctx, lease, row, nil), true, nil
}

// complete stores the answer. A lost lease means another attempt resolved
// the key: answer with what it stored.
func (o *operation[A]) complete(ctx context.Context, lease *idem.Lease, a Answer, id string) Result {
	resp := a.Result(cmp.Or(id, o.answeredID(lease.DownstreamKey()))).With(o.s.answer(a))
	done, rec, pending := o.s.frame.Complete(ctx, lease, resp)
	switch {
	case done:
		return Result{Outcome: op.Executed, Response: resp, Refusal: a.Refusal(), ID: id}
	case rec != nil:
		return Result{Outcome: op.Replayed, Response: *rec.Response, Refusal: refusalOf(*rec.Response), ID: o.answeredID(rec.DownstreamKey),
			Source: rec.Source, ClaimedAt: rec.CreatedAt}
	}
	return endedEarly(pending)
}

// intentOf is the lease's intent on its charge's balance, for a step made
// now: a fold raises the balance's FoldedAt to the clock, and never below
// the lease's floor (idem.Lease.Floor).
func (s *Service) intentOf(lease *idem.Lease) refund.Intent {
	rec := lease.Record()
	foldAt := s.cfg.Now()
	if floor := lease.Floor(); floor.After(foldAt) {
		foldAt = floor
	}
	return refund.Intent{Key: rec.DownstreamKey, Claimed: rec.CreatedAt, FoldAt: foldAt, First: !lease.TakenOver()}
}

// abandonPending: the outcome is unknown. The record stays in flight, the
// amount reserved; the lease is ended so a retry can take over.
func (s *Service) abandonPending(ctx context.Context, lease *idem.Lease) Result {
	return endedEarly(s.frame.Abandon(ctx, lease))
}

func (s *Service) pendingResult() Result {
	return Result{Outcome: op.Pending, RetryAfter: s.cfg.RetryAfter}
}

// RetryAfter is the delay the service gives with a 503.
func (s *Service) RetryAfter() time.Duration { return s.cfg.RetryAfter }

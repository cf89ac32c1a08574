package refund

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
)

// Acquirer is what the refund service needs of the card acquirer.
type Acquirer interface {
	// Refund refunds req under key; the acquirer deduplicates by key.
	// Errors wrap acquirer.ErrNotSent or acquirer.ErrOutcomeUnknown.
	Refund(ctx context.Context, key string, req acquirer.RefundRequest) (acquirer.Refund, error)
	// LookupRefund returns the refund made under key, or
	// acquirer.ErrNotFound.
	LookupRefund(ctx context.Context, key string) (acquirer.Refund, error)
}

// Charges finds a caller's charge as GET /v1/charges/{id} does
// (charge.Service.Get): Found only once the charge's own record has
// completed.
type Charges interface {
	Get(ctx context.Context, account, id string) charge.Result
}

// Service refunds charges idempotently, each refund one intent of the
// engine (operation "refund"), and never more than a charge captured: the
// balance's conditional steps decide (DESIGN §7).
type Service struct {
	guard    *idem.Guard
	charges  Charges
	balances Balances
	ledger   Ledger
	acquirer Acquirer
	answer   Renderer
	cfg      charge.Config
	// frame is the frame its calls run in (charge.Config.Frame), made
	// once.
	frame op.Frame
}

// NewService returns a Service. The guard, the balances and the ledger
// must be on one table (dynamo.Open's); charges is the charge service of
// the same deployment; cfg is the charge service's, defaulted the same
// way. It panics on a nil guard, charges, balances, ledger or renderer, a
// wiring mistake.
func NewService(guard *idem.Guard, charges Charges, balances Balances, ledger Ledger, acq Acquirer, answer Renderer, cfg charge.Config) *Service {
	if guard == nil || charges == nil || balances == nil || ledger == nil || answer == nil {
		panic("refund.NewService: a nil dependency")
	}
	cfg = cfg.Defaulted()
	return &Service{guard: guard, charges: charges, balances: retrying{balances}, ledger: ledger, acquirer: acq, answer: answer,
		cfg: cfg, frame: cfg.Frame(guard)}
}

// Refund is the one door of a refund. The order of decisions is the
// API's: the account, the key, the body and the charge id's shape
// (nothing stored); then the key's record (a replay, in flight, reused);
// then the charge (no such charge, not refundable, or its outcome not
// known yet: the key is released, nothing stored); then the bound; then
// the acquirer.
func (s *Service) Refund(ctx context.Context, in Input) Result {
	key, early := op.Open(in.Account, in.Keys)
	if early != nil {
		return endedEarly(*early)
	}
	req, err := ParseRequest(in.ChargeID, in.Body, s.cfg.MaxAmount)
	if err != nil {
		return Result{Outcome: op.RequestInvalid, Errors: fieldErrors(err), Key: key}
	}
	if !charge.ValidID(in.ChargeID) {
		return Result{Outcome: op.NotFound, Key: key}
	}
	scope := idem.Scope{Operation: Operation, Account: in.Account, Key: key, Source: in.Source}
	record := idem.Ref(scope.PK())
	ctx = obs.WithAttrs(ctx, slog.String("record", record))
	res := s.claimAndExecute(ctx, scope, req)
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

func (s *Service) claimAndExecute(ctx context.Context, scope idem.Scope, req Request) Result {
	claim, early := s.frame.Claim(ctx, scope, req.Canonical())
	switch {
	case early != nil:
		return endedEarly(*early)
	case claim.Replay != nil:
		return Result{Outcome: op.Replayed, Response: *claim.Replay, Refusal: RefusalOf(*claim.Replay), ID: answeredID(claim.DownstreamKey), Source: claim.Source, ClaimedAt: claim.ClaimedAt}
	}
	a := &attempt{s: s, req: req}
	res := op.Run[acquirer.Refund, Result](ctx, s.frame, claim.Lease, a, a)
	res.Attempt = claim.Lease.Attempt()
	if res.Outcome == op.Executed {
		rec := claim.Lease.Record()
		res.Source, res.ClaimedAt, res.ID = rec.Source, rec.CreatedAt, answeredID(rec.DownstreamKey)
	}
	return res
}

// answeredID is the refund id a completed record's answer is of: none
// without a downstream key.
func answeredID(downstreamKey string) string {
	if downstreamKey == "" {
		return ""
	}
	return ID(downstreamKey)
}

// attempt is one owner's attempt at a refund: the steps op.Run takes in
// the one order (DESIGN §7, "The order of one attempt"), with the charge
// Ready read and the entry the balance holds for the intent (the bound).
type attempt struct {
	s   *Service
	req Request
	ch  charge.Charge
	// chargeAmount is what ch captured at creation: its amount, or 0 for
	// an authorization, whose captures' successes make it refundable.
	chargeAmount int64
	entry        Entry
	// nothingCaptured: ch is an authorization whose balance said nothing
	// was captured when Ready read it; Reserve then stores the bound's
	// refusal with nothing refundable, without writing.
	nothingCaptured bool
	// answer is the acquirer's checked answer Finish stores.
	answer acquirer.Refund
}

func (a *attempt) Ended(e op.Early) Result { return endedEarly(e) }

// Ready is step 2: the charge, as its GET answers it. Anything but a
// charge of this deployment's acquirer, captured at creation or
// authorized, ends the attempt (op.Run releases a first attempt's key:
// nothing was reserved or sent; a take-over's record is left in flight
// for the reconciler). An authorization's balance is read once more, to
// tell whether its captures took anything: what they took is then the
// reservation's condition to decide. With nothing captured yet, a first
// attempt's Reserve stores the bound's answer, nothing refundable
// (nothingCaptured), since a capture may come later and a refusal that
// stored nothing could be followed by a refund under the same key; a
// take-over goes on, and its re-fence finds no entry and releases it.
func (a *attempt) Ready(ctx context.Context, lease *idem.Lease) *Result {
	rec := lease.Record()
	got := a.s.charges.Get(ctx, rec.Account, a.req.ChargeID)
	var res Result
	switch got.Outcome {
	case op.Found:
		ch := got.Charge
		switch {
		case !ch.OfAcquirer(rec.Protocol.Downstream):
		case ch.Status == acquirer.StatusCaptured:
			a.ch, a.chargeAmount = ch, ch.Amount
			return nil
		case ch.Status == acquirer.StatusAuthorized:
			bal, err := a.s.balances.Get(ctx, ch.ID)
			if err != nil {
				a.s.cfg.Logger.ErrorContext(ctx, "the authorization's balance failed to read", "error", err)
				res = Result{Outcome: op.Unavailable, RetryAfter: a.s.cfg.RetryAfter}
				return &res
			}
			// Nothing captured at creation: chargeAmount 0. With nothing
			// captured yet, a first attempt stores the bound's answer,
			// nothing refundable (nothingCaptured). A take-over goes on:
			// what is captured only grows, so its first attempt read
			// nothing captured too and reserved nothing, and the take-over
			// finds no entry and releases the key.
			a.ch, a.nothingCaptured = ch, bal.Captured == 0 && !lease.TakenOver()
			return nil
		}
		res = Result{Outcome: op.NotRefundable}
	case op.NotFound:
		res = Result{Outcome: op.NotFound}
	case op.InFlight:
		res = Result{Outcome: op.ChargePending, RetryAfter: max(got.RetryAfter, a.s.cfg.RetryAfter), WaitOut: got.WaitOut}
	case op.Held:
		res = Result{Outcome: op.ChargeHeld, RetryAfter: max(got.RetryAfter, a.s.cfg.RetryAfter)}
	default:
		res = Result{Outcome: op.Unavailable, RetryAfter: a.s.cfg.RetryAfter}
	}
	if lease.TakenOver() {
		a.s.cfg.Logger.ErrorContext(ctx, "a taken-over refund's charge did not read as refundable; left for the reconciler", "charge_outcome", got.Outcome.String())
	}
	return &res
}

// Refence is step 3, a take-over's: re-fence the entry, so no earlier
// attempt can move it any more (an intent with none is released by the
// same step: no attempt reserved, so none sent); op.Run then asks the
// acquirer.
func (a *attempt) Refence(ctx context.Context, lease *idem.Lease) *Result {
	entry, err := a.s.balances.Refence(ctx, a.ch.ID, a.s.intentOf(lease), lease.Attempt())
	if err != nil {
		a.s.cfg.Logger.WarnContext(ctx, "re-fence failed", "attempt", lease.Attempt(), "error", err)
		res := a.s.abandonPending(ctx, lease)
		return &res
	}
	a.entry = entry
	return nil
}

// Unsent: the acquirer has no refund of the intent. Its row, when there
// is one, was written from the acquirer's answer, so the record completes
// from it (an acquirer that does not find a refund it made must never
// free the key of an intent whose row the books hold). Otherwise the
// take-over's entry decides: reserved, send it.
func (a *attempt) Unsent(ctx context.Context, lease *idem.Lease) *Result {
	var res Result
	if row, found, err := a.row(ctx, lease); err != nil || found {
		res = a.fromRow(ctx, lease, row, err)
		return &res
	}
	switch a.entry.State {
	case EntryReleased:
		// Released only by an attempt that proved nothing was sent (rule
		// 2), by the reconciler after the wait-out (rule 3), or by the
		// re-fence, which found nothing reserved; and never reserved
		// again: nothing is in transit, and the record may go.
		if err := lease.ReleaseReconciled(ctx); err != nil {
			a.s.cfg.Logger.ErrorContext(ctx, "release failed", "error", err)
			res = a.s.abandonPending(ctx, lease)
		} else {
			res = Result{Outcome: op.Released, RetryAfter: a.s.cfg.RetryAfter}
		}
	case EntrySucceeded:
		// Succeeded only after the row was written, which is not there.
		res = a.fromRow(ctx, lease, Refund{}, ErrNoRefund)
	default:
		return nil // reserved: send
	}
	return &res
}

// Reserve is step 4: the bound's one conditional write. No room and the
// limit are final answers for the key, and so is an authorization Ready
// read with nothing captured (422 REFUND_EXCEEDS_CHARGE, refundable 0,
// with nothing written); a fenced reservation means a later
// attempt owns the intent; a released one, that the intent can never
// reserve, and a first attempt releases the key (nothing was reserved or
// sent), so the client's retry is a new intent. A write that another
// action's end passed on its way (ErrStampPassed) is issued again with a
// new stamp, up to op.MaxReservationTries writes in all (op.Reserve).
func (a *attempt) Reserve(ctx context.Context, lease *idem.Lease) *Result {
	s := a.s
	if a.nothingCaptured {
		res := s.complete(ctx, lease, Answer{Exceeded: true}, "")
		return &res
	}
	entry, err := op.Reserve(ctx, lease, ErrStampPassed, func(ctx context.Context, stamp time.Time) (Entry, error) {
		return s.balances.Reserve(ctx, Reservation{
			ChargeID: a.ch.ID, ChargeAmount: a.chargeAmount, Intent: s.intentOf(lease), Fence: lease.Attempt(), Stamp: stamp, Amount: a.req.Amount,
		})
	})
	a.entry = entry
	var noRoom *NoRoomError
	var res Result
	switch {
	case err == nil:
		return nil
	case errors.As(err, &noRoom):
		res = s.complete(ctx, lease, Answer{Exceeded: true, Refundable: noRoom.Refundable}, "")
	case errors.Is(err, ErrLimitReached):
		res = s.complete(ctx, lease, Answer{LimitReached: true}, "")
	case errors.Is(err, ErrFenced):
		res = s.pendingResult()
	case errors.Is(err, ErrReleased), errors.Is(err, ErrStampPassed), errors.Is(err, op.ErrLeaseEnded):
		res = s.unavailable(ctx, lease)
	default:
		// The write may have landed: release the entry first, then the
		// key (nothing was sent; only a first attempt reserves).
		s.cfg.Logger.ErrorContext(ctx, "reserve failed", "error", err)
		if err := a.Release(ctx, lease); err != nil {
			s.cfg.Logger.ErrorContext(ctx, "releasing the reservation failed; the record stays in flight", "error", err)
			res = s.abandonPending(ctx, lease)
		} else {
			res = s.unavailable(ctx, lease)
		}
	}
	return &res
}

// Release gives the intent's entry back: nothing was sent.
func (a *attempt) Release(ctx context.Context, lease *idem.Lease) error {
	return a.s.balances.Release(ctx, a.ch.ID, a.s.intentOf(lease), lease.Attempt())
}

// Ask is the take-over's lookup, checked against what the entry says was
// sent.
func (a *attempt) Ask(ctx context.Context, lease *idem.Lease) (acquirer.Refund, error) {
	return a.s.lookup(ctx, lease, a.ch, a.entry)
}

// Send is step 5: the acquirer's refund of the entry's amount.
func (a *attempt) Send(ctx context.Context, lease *idem.Lease) (acquirer.Refund, error) {
	ctx, end := a.s.cfg.Tracer.Start(ctx, op.Step{Name: "acquirer.refund", Client: true})
	defer end(nil)
	return a.s.acquirer.Refund(ctx, lease.DownstreamKey(), acquirerRequest(a.ch, a.entry))
}

// Verify is step 6's check of the acquirer's answer.
func (a *attempt) Verify(ctx context.Context, lease *idem.Lease, r acquirer.Refund) error {
	return a.s.check(ctx, acquirer.EndpointRefund, r, lease.DownstreamKey(), a.ch, a.entry)
}

func (a *attempt) Hold(ctx context.Context, lease *idem.Lease, mismatch error) (Result, bool) {
	return a.s.hold(ctx, lease, acquirerRequest(a.ch, a.entry), mismatch)
}

// unavailable releases the key of a first attempt that reserved nothing
// and sent nothing (op.Frame.Release), and answers Unavailable: the store
// refused or failed the reservation.
func (s *Service) unavailable(ctx context.Context, lease *idem.Lease) Result {
	s.frame.Release(ctx, lease)
	return Result{Outcome: op.Unavailable, RetryAfter: s.cfg.RetryAfter}
}

// intentOf is the lease's refund intent on its charge's balance, for a
// step made now: a fold raises the balance's FoldedAt to the clock, and
// never below the lease's floor (idem.Lease.Floor).
func (s *Service) intentOf(lease *idem.Lease) Intent {
	rec := lease.Record()
	foldAt := s.cfg.Now()
	if floor := lease.Floor(); floor.After(foldAt) {
		foldAt = floor
	}
	return Intent{Key: rec.DownstreamKey, Claimed: rec.CreatedAt, FoldAt: foldAt, First: !lease.TakenOver()}
}

// acquirerRequest is what every attempt sends: the entry's amount, which
// the reservation resolved, of the charge's authorization.
func acquirerRequest(ch charge.Charge, entry Entry) acquirer.RefundRequest {
	return acquirer.RefundRequest{AuthorizationID: ch.AuthorizationID, Amount: entry.Amount, Currency: ch.Currency}
}

// lookup asks the acquirer for the lease's refund, checked against what
// the entry says was sent (check).
func (s *Service) lookup(ctx context.Context, lease *idem.Lease, ch charge.Charge, entry Entry) (acquirer.Refund, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.AcquirerTimeout)
	defer cancel()
	ctx, end := s.cfg.Tracer.Start(ctx, op.Step{Name: "acquirer.refund_lookup", Client: true})
	r, err := s.acquirer.LookupRefund(ctx, lease.DownstreamKey())
	end(nil)
	if err == nil {
		err = s.check(ctx, acquirer.EndpointRefundLookup, r, lease.DownstreamKey(), ch, entry)
	}
	return r, err
}

// check compares the acquirer's refund under key with what the intent's
// entry reserved of ch (acquirer.CheckRefundTerms), naming the endpoint
// that answered. An intent with no entry has ended (its entry folded by
// its success or its release) or never reserved: the only refund that
// agrees with it is one its row states (an earlier attempt wrote the
// row, then moved the entry), checked against the row's terms (Kept then
// compares the rest); one without a row was made against an entry that
// holds nothing (ReasonEntryDisagrees). An error that is not a mismatch
// is a failed read of the row.
func (s *Service) check(ctx context.Context, endpoint string, r acquirer.Refund, key string, ch charge.Charge, entry Entry) error {
	var err error
	if entry.State == EntryReserved || entry.State == EntrySucceeded {
		err = acquirer.CheckRefundTerms(r, key, acquirerRequest(ch, entry))
	} else {
		switch row, readErr := s.ledger.Get(ctx, ID(key)); {
		case readErr != nil && !errors.Is(readErr, ErrNoRefund):
			return fmt.Errorf("refund row: %w", readErr)
		case readErr == nil:
			err = acquirer.CheckRefundTerms(r, key, acquirer.RefundRequest{AuthorizationID: ch.AuthorizationID, Amount: row.Amount, Currency: row.Currency})
		default:
			err = &acquirer.RefundMismatchError{Reason: ReasonEntryDisagrees, Stated: r}
		}
	}
	var m *acquirer.RefundMismatchError
	if errors.As(err, &m) {
		m.Endpoint = endpoint
	}
	return err
}

// Finish is step 6 with the acquirer's checked answer (op.Store): the
// row, then the entry (succeeded, or released for a decline), then the
// completion.
func (a *attempt) Finish(ctx context.Context, lease *idem.Lease, r acquirer.Refund) Result {
	a.answer = r
	row := Refund{
		Origin:   op.OriginOf(lease, ID(lease.DownstreamKey()), a.s.cfg.Now(), a.s.cfg.Region),
		ChargeID: a.ch.ID, Status: r.Status, DeclineCode: r.DeclineCode, Amount: r.Amount, Currency: r.Currency,
		Reason: a.req.Reason, AcquirerRefundID: r.ID,
	}
	return op.Store(ctx, a.s.frame, lease, a.s.ledger, row, ErrVoided, a)
}

// Kept: a row an earlier attempt wrote must state what the acquirer
// answers now: it decides the entry's step, so a difference holds the
// record.
func (a *attempt) Kept(ctx context.Context, lease *idem.Lease, stored, row Refund) *Result {
	if sameRefund(stored, row) {
		return nil
	}
	res, _ := a.Hold(ctx, lease, &acquirer.RefundMismatchError{Reason: ReasonRowDiffers, Stated: a.answer})
	return &res
}

// The reasons a refund is held for that are the refund's own, beside the
// acquirer's (acquirer.Reason*).
const (
	// ReasonRowDiffers: the acquirer's answer differs from the refund row
	// an earlier attempt of the intent wrote from its answer.
	ReasonRowDiffers = "refund_row_differs"
	// ReasonEntryDisagrees: the acquirer has a refund that the intent's
	// entry does not hold: made after the entry was released (the acquirer
	// processed a request later than T allows), or the row says one thing
	// and the entry has moved the other way.
	ReasonEntryDisagrees = "entry_disagrees_with_row"
)

// sameRefund reports whether two rows record the same refund: everything
// the acquirer decided.
func sameRefund(a, b Refund) bool {
	return a.Status == b.Status && a.DeclineCode == b.DeclineCode && a.Amount == b.Amount &&
		a.Currency == b.Currency && a.AcquirerRefundID == b.AcquirerRefundID
}

// Close moves the entry as the row says (succeeded, or released for a
// decline); op.FromRow then completes the record with the row's answer.
// An intent whose entry is folded already is done (its success or its
// release was made; the row says which). An entry an earlier version
// left that has moved the other way (a released tombstone, or a
// succeeded entry the row says was declined) holds the record; one a
// later attempt holds leaves the answer to it.
func (a *attempt) Close(ctx context.Context, lease *idem.Lease, row Refund) *Result {
	s := a.s
	var err error
	if row.Status == acquirer.RefundSucceeded {
		err = s.balances.Succeed(ctx, row.ChargeID, s.intentOf(lease), lease.Attempt())
	} else {
		err = s.balances.Release(ctx, row.ChargeID, s.intentOf(lease), lease.Attempt())
	}
	var res Result
	switch {
	case errors.Is(err, ErrFenced):
		now, ok, readErr := s.balances.Entry(ctx, row.ChargeID, s.intentOf(lease))
		if readErr == nil && ok && (now.Fence == lease.Attempt() || now.State == EntryReleased) {
			res, _ = a.Hold(ctx, lease, &acquirer.RefundMismatchError{Reason: ReasonEntryDisagrees,
				Stated: acquirer.Refund{ID: row.AcquirerRefundID, Status: row.Status, AuthorizationID: a.ch.AuthorizationID, Amount: row.Amount, Currency: row.Currency}})
		} else {
			res = s.pendingResult() // a later attempt owns the intent
		}
	case err != nil:
		s.cfg.Logger.ErrorContext(ctx, "moving the refund's entry failed; the record stays in flight", "error", err)
		res = s.abandonPending(ctx, lease)
	default:
		return nil
	}
	return &res
}

// Complete completes the record with the row's answer.
func (a *attempt) Complete(ctx context.Context, lease *idem.Lease, row Refund) Result {
	return a.s.complete(ctx, lease, Answer{Refund: &row}, row.ID)
}

// row is the refund row an earlier attempt of the lease's intent wrote:
// found false when there is none (or a voided marker), err a failed read.
func (a *attempt) row(ctx context.Context, lease *idem.Lease) (Refund, bool, error) {
	row, err := a.s.ledger.Get(ctx, ID(lease.DownstreamKey()))
	if errors.Is(err, ErrNoRefund) {
		return Refund{}, false, nil
	}
	return row, err == nil, err
}

// fromRow answers from the row an earlier attempt wrote (op.FromRow), as
// row read it; err, a failed read (or no row where one must be), leaves
// the record in flight.
func (a *attempt) fromRow(ctx context.Context, lease *idem.Lease, row Refund, err error) Result {
	if err != nil {
		a.s.cfg.Logger.ErrorContext(ctx, "the refund's row could not be read; the record stays in flight", "error", err)
		return a.s.abandonPending(ctx, lease)
	}
	return op.FromRow(ctx, lease, row, a)
}

// complete stores the answer. A lost lease means another attempt resolved
// the key: answer with what it stored.
func (s *Service) complete(ctx context.Context, lease *idem.Lease, a Answer, refundID string) Result {
	resp := a.Result(cmp.Or(refundID, answeredID(lease.DownstreamKey()))).With(s.answer(a))
	done, rec, pending := s.frame.Complete(ctx, lease, resp)
	switch {
	case done:
		return Result{Outcome: op.Executed, Response: resp, Refusal: a.Refusal(), ID: refundID}
	case rec != nil:
		return Result{Outcome: op.Replayed, Response: *rec.Response, Refusal: RefusalOf(*rec.Response), ID: answeredID(rec.DownstreamKey), Source: rec.Source, ClaimedAt: rec.CreatedAt}
	}
	return endedEarly(pending)
}

// hold: the acquirer's refund disagrees with what was sent (ask) or with
// itself, or with what is stored of it. The record is held for an
// operator, the reservation kept, and no row written; held false when the
// hold could not be written.
func (s *Service) hold(ctx context.Context, lease *idem.Lease, ask acquirer.RefundRequest, mismatch error) (res Result, held bool) {
	var m *acquirer.RefundMismatchError
	if !errors.As(mismatch, &m) { // an acquirer that reports a mismatch of its own kind
		m = &acquirer.RefundMismatchError{Reason: "unclassified"}
	}
	s.cfg.Logger.ErrorContext(ctx, "the acquirer's refund disagrees with the request; the record is held for an operator",
		"reason", m.Reason, "endpoint", m.Endpoint, "http_status", m.HTTPStatus, "acquirer_status", m.Stated.Status,
		"acquirer_amount", m.Stated.Amount, "acquirer_currency", m.Stated.Currency, "amount", ask.Amount, "currency", ask.Currency,
		"attempt", lease.Attempt())
	e, held := s.frame.Hold(ctx, lease, m.Reason, m.Evidence(lease.DownstreamKey(), ask))
	return endedEarly(e), held
}

// abandonPending: the outcome is unknown. The record stays in flight, the
// amount reserved; the lease is ended so a retry can take over.
func (s *Service) abandonPending(ctx context.Context, lease *idem.Lease) Result {
	return endedEarly(s.frame.Abandon(ctx, lease))
}

func (s *Service) pendingResult() Result {
	return Result{Outcome: op.Pending, RetryAfter: s.cfg.RetryAfter}
}

// RetryAfter is the delay the service gives with a 503 (a held record's
// aside): an entry point that fails on the service's behalf gives it too.
func (s *Service) RetryAfter() time.Duration { return s.cfg.RetryAfter }

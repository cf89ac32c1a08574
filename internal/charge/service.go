package charge

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/obs"
	"github.com/idempotent-payments/idempay/internal/op"
)

// Acquirer is what the service needs of the card acquirer.
type Acquirer interface {
	// Authorize charges req under key; the acquirer deduplicates by key.
	// Errors wrap acquirer.ErrNotSent or acquirer.ErrOutcomeUnknown.
	Authorize(ctx context.Context, key string, req acquirer.Request) (acquirer.Authorization, error)
	// Lookup returns the authorization made under key, or acquirer.ErrNotFound.
	Lookup(ctx context.Context, key string) (acquirer.Authorization, error)
}

// Defaults for the zero fields of Config. The in-transit bound T, the
// skew and the acquirer's id are the guard's (idem.Config.Protocol), stored
// on every record it claims. DefaultAcquirerTimeout is deployed as
// deploy.Deployed().Protocol.AcquirerTimeout, written again there because
// deploy imports nothing (the CDK app reads it and may link no charge
// code): deploy's TestProtocolIsTheCodes holds the two equal.
const (
	DefaultAcquirerTimeout = 3 * time.Second
	DefaultStoreReserve    = time.Second
	DefaultRetryAfter      = 2 * time.Second
	DefaultHeldRetryAfter  = time.Minute
	// DefaultAuthorizationWindow is how long an authorization made
	// without its capture stays capturable when the acquirer's answer
	// states no expiry: 7 days, as Stripe's and Checkout.com's.
	DefaultAuthorizationWindow = 7 * 24 * time.Hour
)

// Config tunes a Service; zero fields take the defaults above.
type Config struct {
	// AcquirerTimeout caps one acquirer call. It must be below the guard's
	// in-transit bound T: the acquirer can finish after we gave up.
	AcquirerTimeout time.Duration
	// StoreReserve is kept back from the invocation deadline to store the
	// outcome after the acquirer answers.
	StoreReserve time.Duration
	// RetryAfter is the delay given with every 503 but Held's.
	RetryAfter time.Duration
	// HeldRetryAfter is the delay given with a held record's 503: only a
	// person settles it, so retrying sooner learns nothing.
	HeldRetryAfter time.Duration
	// MaxAmount caps a charge, in minor units (DefaultMaxAmount).
	MaxAmount int64
	// AuthorizationWindow is how long an authorization made without its
	// capture stays capturable, from its intent's claim, when the
	// acquirer's answer states no expiry (DefaultAuthorizationWindow).
	// Card schemes differ by scheme and by kind of authorization, so a
	// deployment sets its acquirer's; a stated expiry wins.
	AuthorizationWindow time.Duration
	// Logger receives one line per anomaly; never card data or keys.
	Logger *slog.Logger
	// Tracer makes the claim, acquirer and completion spans (none when
	// nil): injected (setup.Spans), so the domain imports no tracing.
	Tracer op.Tracer
	// Now is the clock (time.Now when nil). Give it the guard's: leases are
	// compared with it.
	Now func() time.Time
	// Region is the region the service runs in, in the multi-region mode,
	// written on each ledger row it writes (Charge.Region); empty in one
	// region.
	Region string
}

// Renderer renders the stored answer of a charge the acquirer decided: what
// the first request receives and every replay returns (the body byte for
// byte), whichever entry point executed it. The service stores it and never reads
// it; the HTTP API owns its shape (httpapi.Render).
type Renderer func(Charge) idem.Response

// Service charges cards idempotently. Both entry points, HTTP and SQS, call
// its one door, Charge, with what they received, so parsing, validation and
// limits are the same on both by construction.
type Service struct {
	guard    *idem.Guard
	ledger   Ledger
	acquirer Acquirer
	answer   Renderer
	cfg      Config
	// frame is the frame its calls run in (Config.Frame), made once.
	frame op.Frame
}

// NewService returns a Service with cfg's zero fields defaulted. The
// ledger must be on the guard's store, since its rows are written with the
// completions: a deployment takes both from the table it opens once
// (dynamo.Open's Store and Ledger). answer renders the stored answers (both entry points must
// be given the same). It panics when ledger or answer is nil, a wiring
// mistake no request should find.
func NewService(guard *idem.Guard, ledger Ledger, acq Acquirer, answer Renderer, cfg Config) *Service {
	if ledger == nil || answer == nil {
		panic("charge.NewService: nil Ledger or Renderer")
	}
	cfg = cfg.Defaulted()
	return &Service{guard: guard, ledger: ledger, acquirer: acq, answer: answer, cfg: cfg, frame: cfg.Frame(guard)}
}

// Defaulted is cfg with its zero fields given the defaults. The refund
// service takes the same configuration.
func (cfg Config) Defaulted() Config {
	if cfg.AcquirerTimeout <= 0 {
		cfg.AcquirerTimeout = DefaultAcquirerTimeout
	}
	if cfg.StoreReserve <= 0 {
		cfg.StoreReserve = DefaultStoreReserve
	}
	if cfg.RetryAfter <= 0 {
		cfg.RetryAfter = DefaultRetryAfter
	}
	if cfg.HeldRetryAfter <= 0 {
		cfg.HeldRetryAfter = DefaultHeldRetryAfter
	}
	if cfg.MaxAmount <= 0 {
		cfg.MaxAmount = DefaultMaxAmount
	}
	if cfg.AuthorizationWindow <= 0 {
		cfg.AuthorizationWindow = DefaultAuthorizationWindow
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Tracer == nil {
		cfg.Tracer = op.NoTracer
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return cfg
}

// Input is one charge request as an entry point received it, nothing parsed.
type Input struct {
	// Account is the authenticated caller: the verified token's account
	// claim, or the charge command's account.
	Account string
	// Keys are the Idempotency-Key values as received, one per occurrence of
	// the header (or the command's member); none when it is absent.
	Keys []string
	// Body is the charge request JSON as received.
	Body []byte
	// Source is the entry point, as the outcome events name it
	// (event.SourceHTTP, or event.SourceQueue of the producer whose queue
	// the command came on); the service does not read it. The record keeps it from
	// the claim and the ledger row carries it, so whoever completes the
	// charge (a retry, the reconciler) keeps where it came from.
	Source string
}

// stored is the answer a record of ch stores: its rendering, and beside
// it the typed result (op.Result): ch's id, and CHARGE_DECLINED for a
// decline.
func (s *Service) stored(ch Charge) idem.Response {
	r := op.Result{ID: ch.ID}
	if ch.Status == acquirer.StatusDeclined {
		r.Code = op.CodeChargeDeclined
	}
	return r.With(s.answer(ch))
}

// endedEarly is the result of a call that ended before its answer.
func endedEarly(e op.Early) Result {
	return Result{Outcome: e.Outcome, Reason: e.Reason, RetryAfter: e.RetryAfter, WaitOut: e.WaitOut}
}

// Codes are how a charge's outcomes read: its own pending code.
var Codes = op.Codes{Pending: op.CodeChargeOutcomePending}

// Frame is the frame every operation's calls run in (op.Frame),
// with cfg's delays.
func (cfg Config) Frame(guard *idem.Guard) op.Frame {
	return op.Frame{Guard: guard, RetryAfter: cfg.RetryAfter, HeldRetryAfter: cfg.HeldRetryAfter,
		AcquirerTimeout: cfg.AcquirerTimeout, StoreReserve: cfg.StoreReserve, Logger: cfg.Logger, Tracer: cfg.Tracer}
}

// Result is what one call came to; Outcome says which fields are set.
type Result struct {
	Outcome op.Outcome
	// Response is the stored answer, and ChargeID the id of the charge it
	// answers with (Executed, Replayed).
	Response idem.Response
	ChargeID string
	// Errors lists everything wrong with the request (RequestInvalid).
	Errors []FieldError
	// Reason says why the key or the account was refused, without echoing it.
	Reason string
	// RetryAfter is when to retry with the same key (InFlight, Released,
	// Pending, Unavailable, Mismatch, Held).
	RetryAfter time.Duration
	// WaitOut is how long until the attempt holding the key has finished or
	// its record can be taken over: the lease's time left plus the in-transit
	// bound and the skew margin (InFlight; idem.InFlightError.WaitOut). A queue consumer hides the
	// message this long, so waiting never uses up its receives; an HTTP
	// client gets the shorter RetryAfter.
	WaitOut time.Duration
	// Charge is the charge Get found (Found).
	Charge Charge
	// Record is the record's reference (idem.Ref), once the request got as
	// far as a valid scope; empty before that.
	Record string
	// Key is the idempotency key as parsed, once it parsed: the bare key,
	// whichever form (bare or the quoted sf-string) carried it. Whoever
	// acts on the key afterwards (a lookup by key, a rejection's event, a
	// log line) takes this one, never the input's, so every form of one key
	// behaves as the bare key.
	Key string
	// Attempt is the lease's attempt when this request owned the key (else 0);
	// AcquirerLatency the time spent in acquirer calls, AcquirerErrors how
	// many of them failed (a lookup's "not found" is an answer, not a
	// failure): AcquirerNotSent proved nothing was sent, AcquirerUnknown left
	// the outcome unknown (the rest of the failures).
	Attempt         int
	AcquirerLatency time.Duration
	AcquirerErrors  int
	AcquirerNotSent int
	AcquirerUnknown int
}

// Charge is the one door: it parses in (the account, then the key, then
// the body with the configured MaxAmount) and charges at most once per
// (account, key). Every outcome of DESIGN §3 is a Result; there is no error
// return because every failure has an answer. Refused input writes nothing.
func (s *Service) Charge(ctx context.Context, in Input) Result {
	key, early := op.Open(in.Account, in.Keys)
	if early != nil {
		return endedEarly(*early)
	}
	req, err := ParseRequest(in.Body, s.cfg.MaxAmount)
	if err != nil {
		return Result{Outcome: op.RequestInvalid, Errors: fieldErrors(err), Key: key}
	}
	scope := idem.Scope{Operation: Operation, Account: in.Account, Key: key, Source: in.Source}
	record := idem.Ref(scope.PK())
	res := s.claimAndExecute(obs.WithAttrs(ctx, slog.String("record", record)), scope, req)
	res.Record, res.Key = record, key
	return res
}

func fieldErrors(err error) []FieldError {
	var v *ValidationError
	if errors.As(err, &v) {
		return v.Errors
	}
	return []FieldError{{Field: "body", Message: "invalid"}}
}

// claimAndExecute claims scope and, as the owner, executes. The scope is
// valid.
func (s *Service) claimAndExecute(ctx context.Context, scope idem.Scope, req Request) Result {
	claimCtx, end := s.cfg.Tracer.Start(ctx, op.Step{Name: "idem.claim"})
	claim, early := s.frame.Claim(claimCtx, scope, req.Canonical())
	end(nil)
	switch {
	case early != nil:
		return endedEarly(*early)
	case claim.Replay != nil:
		return Result{Outcome: op.Replayed, Response: *claim.Replay, ChargeID: AnsweredID(claim.DownstreamKey)}
	}
	a := &attempt{s: s, req: req}
	res := op.Run[acquirer.Authorization, Result](ctx, s.frame, claim.Lease, a, nil)
	res.Attempt, res.AcquirerLatency = claim.Lease.Attempt(), a.calls.spent
	res.AcquirerErrors, res.AcquirerNotSent, res.AcquirerUnknown = a.calls.notSent+a.calls.unknown, a.calls.notSent, a.calls.unknown
	return res
}

// acquirerCalls adds up the acquirer calls of one request.
type acquirerCalls struct {
	spent            time.Duration
	notSent, unknown int
}

func (c *acquirerCalls) add(start time.Time, err error) {
	c.spent += time.Since(start)
	switch {
	case err == nil || errors.Is(err, acquirer.ErrNotFound):
	case errors.Is(err, acquirer.ErrNotSent):
		c.notSent++
	default:
		c.unknown++
	}
}

// attempt is one owner's attempt at a charge: the steps op.Run takes in
// the one order (a charge reads nothing first and has no bound), and the
// acquirer calls they made, added up in calls.
type attempt struct {
	s     *Service
	req   Request
	calls acquirerCalls
}

func (a *attempt) Ended(e op.Early) Result { return endedEarly(e) }

// Ready: a charge needs nothing read before it is sent.
func (a *attempt) Ready(context.Context, *idem.Lease) *Result { return nil }

// Ask is a take-over's lookup, checked against the request.
func (a *attempt) Ask(ctx context.Context, lease *idem.Lease) (acquirer.Authorization, error) {
	start := time.Now()
	auth, err := a.s.lookup(ctx, lease, a.req)
	a.calls.add(start, err)
	return auth, err
}

// Send sends one authorization under the lease's downstream key.
func (a *attempt) Send(ctx context.Context, lease *idem.Lease) (acquirer.Authorization, error) {
	start := time.Now()
	ctx, end := a.s.cfg.Tracer.Start(ctx, op.Step{Name: "acquirer.authorize", Client: true, Attempt: lease.Attempt()})
	auth, err := a.s.acquirer.Authorize(ctx, lease.DownstreamKey(), acquirerRequest(a.req))
	end(err)
	a.calls.add(start, err)
	return auth, err
}

// Verify checks the authorization against the request
// (acquirer.CheckTerms).
func (a *attempt) Verify(_ context.Context, lease *idem.Lease, auth acquirer.Authorization) error {
	return checkTerms(acquirer.EndpointAuthorize, auth, lease, a.req)
}

func (a *attempt) Finish(ctx context.Context, lease *idem.Lease, auth acquirer.Authorization) Result {
	return a.s.finish(ctx, lease, a.req, auth)
}

func (a *attempt) Hold(ctx context.Context, lease *idem.Lease, mismatch error) (Result, bool) {
	return a.s.hold(ctx, lease, a.req, mismatch)
}

func acquirerRequest(req Request) acquirer.Request {
	return acquirer.Request{
		Amount: req.Amount, Currency: req.Currency, PaymentMethod: req.PaymentMethod,
		OrderID: req.OrderID, Description: req.Description, Capture: req.Capture.member(),
	}
}

// checkTerms is acquirer.CheckTerms for the lease's downstream key,
// naming the endpoint that answered.
func checkTerms(endpoint string, auth acquirer.Authorization, lease *idem.Lease, req Request) error {
	err := acquirer.CheckTerms(auth, lease.DownstreamKey(), acquirerRequest(req))
	var m *acquirer.MismatchError
	if errors.As(err, &m) {
		m.Endpoint = endpoint
	}
	return err
}

// abandonPending: the outcome is unknown. The record stays in flight; the
// lease is ended so the client's retry can take over and ask the acquirer.
func (s *Service) abandonPending(ctx context.Context, lease *idem.Lease) Result {
	return endedEarly(s.frame.Abandon(ctx, lease))
}

func (s *Service) held() Result {
	return Result{Outcome: op.Held, RetryAfter: s.cfg.HeldRetryAfter}
}

// hold: the acquirer's answer (mismatch, an acquirer.ErrMismatch)
// disagrees with req. Money may have moved on terms nobody asked for, and
// the service cannot know which side is right: the record is held for an
// operator with what was asked and what was answered, and nothing is
// stored as an outcome. The held marker goes first, at the charge's row
// key (Ledger.Hold), so the charge's id leads to the held record on
// every route although it has no row. The ERROR line and the Mismatch
// outcome (its alarm) say so whether or not the hold is written (held
// false). If it is not (the marker's write failed, and then the lease is
// ended, or the hold's), the record stays in flight until its lease ends,
// and the next attempt asks the acquirer again: its lookup may find the
// same answer and hold the record, or agree, or find what another
// attempt stored meanwhile.
func (s *Service) hold(ctx context.Context, lease *idem.Lease, req Request, mismatch error) (res Result, held bool) {
	var m *acquirer.MismatchError
	errors.As(mismatch, &m)
	s.cfg.Logger.ErrorContext(ctx, "the acquirer's answer disagrees with the request; the record is held for an operator",
		"reason", m.Reason, "endpoint", m.Endpoint, "http_status", m.HTTPStatus, "acquirer_status", m.Stated.Status,
		"acquirer_amount", m.Stated.Amount, "acquirer_currency", m.Stated.Currency, "amount", req.Amount, "currency", req.Currency,
		"authorization_id", m.Stated.ID, "attempt", lease.Attempt())
	rec := lease.Record()
	err := idem.RetryConflicts(ctx, func() error {
		return s.ledger.Hold(ctx, ID(lease.DownstreamKey()), HeldMarker{Account: rec.Account, Key: rec.Key})
	})
	if err != nil {
		s.cfg.Logger.ErrorContext(ctx, "the held marker was not written; the record is not held, and the next attempt asks again", "error", err)
		s.abandonPending(ctx, lease)
		return Result{Outcome: op.Mismatch, RetryAfter: s.cfg.HeldRetryAfter}, false
	}
	e, held := s.frame.Hold(ctx, lease, m.Reason, m.Evidence(lease.DownstreamKey(), acquirerRequest(req)))
	return endedEarly(e), held
}

// chargeOf is the ledger row of an authorization the acquirer gave for
// req: its terms are the acquirer's (checked equal to the request's, or
// accepted by an operator), the rest the request's, and the client's key
// and the source the record kept from its claim.
func (s *Service) chargeOf(lease *idem.Lease, req Request, auth acquirer.Authorization) Charge {
	ch := Charge{
		Origin: op.OriginOf(lease, ID(lease.DownstreamKey()), s.cfg.Now(), s.cfg.Region),
		Status: auth.Status, Amount: auth.Amount, Currency: auth.Currency, OrderID: req.OrderID,
		Description: req.Description, DeclineCode: auth.DeclineCode, AuthorizationID: auth.ID,
	}
	if auth.Status == acquirer.StatusAuthorized {
		ch.AuthorizationExpiresAt = s.expiryOf(lease, auth)
	}
	return ch
}

// expiryOf is when the authorization auth, of the lease's intent, lapses:
// the acquirer's stated expiry wins, else the intent's claim plus the
// deployment's window; to the millisecond, as the row keeps it. The claim
// came before every request of the intent, so the window never ends
// after the acquirer's own, however late the row is written (a
// reconciler's, an operator's accept days later).
func (s *Service) expiryOf(lease *idem.Lease, auth acquirer.Authorization) time.Time {
	if !auth.ExpiresAt.IsZero() {
		return auth.ExpiresAt.UTC().Truncate(time.Millisecond)
	}
	return lease.Record().CreatedAt.Add(s.cfg.AuthorizationWindow).UTC().Truncate(time.Millisecond)
}

// finish stores the acquirer's outcome, checked: the ledger row first, then
// the record's answer, rendered from the row as stored (DESIGN §4). A crash
// or a failure between the two leaves the record in flight; the next
// attempt or the reconciler finds the row and answers from it. A lost
// lease means another attempt resolved the key: answer with what it stored.
func (s *Service) finish(ctx context.Context, lease *idem.Lease, req Request, auth acquirer.Authorization) Result {
	return s.store(ctx, lease, s.chargeOf(lease, req, auth))
}

// store writes ch's ledger row, then completes the record with the row's
// answer (op.Store; an operator's accept, for a held record). A row
// already there that does not read (ErrUnreadableCharge) leaves the
// record in flight for an operator, as a failed write does.
func (s *Service) store(ctx context.Context, lease *idem.Lease, ch Charge) Result {
	return op.Store(ctx, s.frame, lease, s.ledger, ch, ErrVoided, storing{s})
}

// storing is how a charge stores its row (op.Storing): a charge has no
// bound to close.
type storing struct{ s *Service }

func (storing) Ended(e op.Early) Result { return endedEarly(e) }

// Kept: the row is this intent's (its id comes from the downstream key),
// and the acquirer deduplicates by that key: a row that differs is an
// anomaly for an operator. The row was first and stays the answer.
func (st storing) Kept(ctx context.Context, _ *idem.Lease, stored, ch Charge) *Result {
	if !sameCharge(stored, ch) {
		st.s.cfg.Logger.ErrorContext(ctx, "the ledger row differs from this attempt's authorization; answering with the row",
			"row_status", stored.Status, "status", ch.Status, "same_authorization", stored.AuthorizationID == ch.AuthorizationID,
			"same_amount", stored.Amount == ch.Amount && stored.Currency == ch.Currency)
	}
	return nil
}

func (storing) Close(context.Context, *idem.Lease, Charge) *Result { return nil }

func (st storing) Complete(ctx context.Context, lease *idem.Lease, ch Charge) Result {
	return st.s.complete(ctx, lease, ch)
}

// complete completes the lease's record with the answer of its stored
// row ch (op.Frame.Complete).
func (s *Service) complete(ctx context.Context, lease *idem.Lease, ch Charge) Result {
	resp := s.stored(ch)
	done, rec, pending := s.frame.Complete(ctx, lease, resp)
	switch {
	case done:
		return Result{Outcome: op.Executed, Response: resp, ChargeID: ch.ID}
	case rec != nil:
		return Result{Outcome: op.Replayed, Response: *rec.Response, ChargeID: AnsweredID(rec.DownstreamKey)}
	}
	return endedEarly(pending)
}

// AnsweredID is the id of the charge a completed record's answer is of,
// given the record's downstream key: the charge sent under it, and none
// ("") without a key, so the answer then gets no Location.
func AnsweredID(downstreamKey string) string {
	if downstreamKey == "" {
		return ""
	}
	return ID(downstreamKey)
}

// sameCharge reports whether two rows record the same charge: everything
// but the time, the expiry derived from it and the region each attempt
// would have stamped it with, and
// who asked and where (the key, the source and the acquirer id, which rows
// written before they were kept lack).
func sameCharge(a, b Charge) bool {
	a.CreatedAt, a.IdempotencyKey, a.Source, a.Region, a.AcquirerID = b.CreatedAt, b.IdempotencyKey, b.Source, b.Region, b.AcquirerID
	a.AuthorizationExpiresAt = b.AuthorizationExpiresAt
	return a == b
}

// Healthy makes one strongly consistent read of the table (idem.Probe)
// and reports whether the table answered: the health route's one
// question. It reads no account's data.
func (s *Service) Healthy(ctx context.Context) error {
	return s.guard.Probe(ctx)
}

// Get finds account's charge id: Found with the charge, NotFound for a
// charge that does not exist or belongs to another account (the two are
// indistinguishable), AccountInvalid, or Unavailable when the store failed.
//
// A charge has one status on every route: its ledger row is the answer
// only once the row's record has completed (or is gone). A row is written
// before its record completes (DESIGN §4), so the row's record is read
// too, by the account and key the row names (idem.Guard.Find): while it
// is held for an operator the answer is Held, and while it is in flight
// InFlight, as the POST and the lookup by key answer. The record read
// costs one more GetItem per lookup; none when the row names no key (rows
// written before rows kept it) or the warm cache holds the record
// completed. A record that is gone (past its retention) or that the key's
// later intent replaced leaves the row as the answer.
//
// A charge held for an operator before it had a row has the held marker
// at its row's key instead (Ledger.Hold): it names the record, which is
// read as above, so the charge answers Held (or InFlight) on every route
// too; once the record is gone or completed, the row answers if one has
// replaced the marker, and NotFound if not. A voided marker is NotFound.
func (s *Service) Get(ctx context.Context, account, id string) Result {
	res := s.row(ctx, account, id)
	if res.Outcome != op.Found {
		return res
	}
	return s.settled(ctx, res.Charge)
}

// completedRow is the row of rec, a completed record, when it reads.
func (s *Service) completedRow(ctx context.Context, rec *idem.Record) (Charge, bool) {
	res := s.Get(ctx, rec.Account, ID(rec.DownstreamKey))
	return res.Charge, res.Outcome == op.Found
}

// row is account's ledger row id, as Get finds it, without its record.
func (s *Service) row(ctx context.Context, account, id string) Result {
	if err := idem.ValidateAccount(account); err != nil {
		return Result{Outcome: op.AccountInvalid, Reason: err.Error()}
	}
	if !ValidID(id) {
		return Result{Outcome: op.NotFound}
	}
	ctx = obs.WithAttrs(ctx, slog.String("record", idem.Ref(id)))
	ch, err := s.ledger.Get(ctx, id)
	var marked *HeldMarkerError
	if errors.As(err, &marked) {
		return s.heldWithoutRow(ctx, account, id, marked.Marker)
	}
	return s.rowResult(ctx, account, ch, err)
}

// rowResult is what a read of a ledger row (ch, err) answers account: a
// marker, another account's row and an unreadable one are NotFound.
func (s *Service) rowResult(ctx context.Context, account string, ch Charge, err error) Result {
	if early := s.frame.Answer(ctx, Operation, account, op.RowRead{Account: ch.Account, Err: err, None: ErrNoCharge, Unreadable: ErrUnreadableCharge}); early != nil {
		return endedEarly(*early)
	}
	return Result{Outcome: op.Found, Charge: ch}
}

// heldWithoutRow is what account's charge id answers when its key holds
// the held marker m: what the record m names says while it holds the
// intent (held or in flight); once it is completed, gone or replaced, the
// row, read again, if one replaced the marker, and NotFound if not.
// Another account's marker is NotFound.
func (s *Service) heldWithoutRow(ctx context.Context, account, id string, m HeldMarker) Result {
	if m.Account != account {
		return Result{Outcome: op.NotFound}
	}
	if res, holds := s.recordOf(ctx, account, m.Key, id); holds {
		return res
	}
	ch, err := s.ledger.Get(ctx, id) // a marker still there is NotFound (a *HeldMarkerError is ErrNoCharge)
	return s.rowResult(ctx, account, ch, err)
}

// settled is Found with ch once ch's record has completed or is gone,
// and otherwise what its record says (Get).
func (s *Service) settled(ctx context.Context, ch Charge) Result {
	if ch.IdempotencyKey == "" {
		return Result{Outcome: op.Found, Charge: ch}
	}
	if res, holds := s.recordOf(ctx, ch.Account, ch.IdempotencyKey, ch.ID); holds {
		return res
	}
	return Result{Outcome: op.Found, Charge: ch}
}

// recordOf is what the record of account's key says of charge id while
// it holds the intent: Held, InFlight, or Unavailable when it failed to
// read. holds is false once the record has completed, is gone, or the
// key's later intent replaced it: then the row answers.
func (s *Service) recordOf(ctx context.Context, account, key, id string) (res Result, holds bool) {
	rec, err := s.guard.Find(ctx, idem.Scope{Operation: Operation, Account: account, Key: key})
	var inFlight *idem.InFlightError
	switch {
	case err == nil || errors.Is(err, idem.ErrNotFound) || errors.Is(err, idem.ErrKeyInvalid):
		return Result{}, false
	case rec != nil && ID(rec.DownstreamKey) != id: // the key's later intent
		return Result{}, false
	case errors.Is(err, idem.ErrHeld):
		return s.held(), true
	case errors.As(err, &inFlight):
		return Result{Outcome: op.InFlight, RetryAfter: inFlight.RetryAfter, WaitOut: max(inFlight.WaitOut, inFlight.RetryAfter)}, true
	}
	s.cfg.Logger.ErrorContext(ctx, "get charge: its record failed to read", "error", err)
	return Result{Outcome: op.Unavailable, RetryAfter: s.cfg.RetryAfter}, true
}

// ByKey finds account's charge by the client's idempotency key, as a
// client that missed its answer or its event asks: the key's record (no
// read when the warm cache holds it completed), then the ledger row its
// downstream key names, so one or two reads, and nothing written or sent.
// Found with the charge, captured or declined; NotFound when the key has
// no live record (none, expired, or another account's: keys are scoped per
// account) or its row is not there; while the key is in flight, InFlight
// as a POST would answer; Held for a record held for an operator; and
// AccountInvalid, KeyMissing or KeyInvalid as Charge refuses them. A key's
// event can arrive before its record completes (the row is written
// first): a lookup just after it may still answer InFlight.
func (s *Service) ByKey(ctx context.Context, account, key string) Result {
	return op.ByKey(ctx, s.frame, Operation, account, key, endedEarly, func(ctx context.Context, rec *idem.Record) Result {
		// The record completed: its row is the answer (no second look at
		// the record, as Get takes).
		res := s.row(ctx, account, ID(rec.DownstreamKey))
		res.Record = idem.Ref(rec.PK)
		return res
	})
}

// lookup asks the acquirer what it knows of the lease's downstream key,
// within AcquirerTimeout like every acquirer call: the take-over's question
// and the reconciler's. The answer is checked against req
// (acquirer.CheckTerms: an acquirer.ErrMismatch when it disagrees).
func (s *Service) lookup(ctx context.Context, lease *idem.Lease, req Request) (acquirer.Authorization, error) {
	auth, err := s.ask(ctx, lease.DownstreamKey())
	if err == nil {
		err = checkTerms(acquirer.EndpointLookup, auth, lease, req)
	}
	return auth, err
}

// ask is the acquirer's lookup of downstreamKey, unchecked.
func (s *Service) ask(ctx context.Context, downstreamKey string) (acquirer.Authorization, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.AcquirerTimeout)
	defer cancel()
	ctx, end := s.cfg.Tracer.Start(ctx, op.Step{Name: "acquirer.lookup", Client: true})
	auth, err := s.acquirer.Lookup(ctx, downstreamKey)
	end(err)
	return auth, err
}

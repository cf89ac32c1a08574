package charge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/problem"
)

// Acquirer is what the service needs of the card acquirer.
type Acquirer interface {
	// Authorize charges req under key; the acquirer deduplicates by key.
	// Errors wrap acquirer.ErrNotSent or acquirer.ErrOutcomeUnknown.
	Authorize(ctx context.Context, key string, req acquirer.Request) (acquirer.Authorization, error)
	// Lookup returns the authorization made under key, or acquirer.ErrNotFound.
	Lookup(ctx context.Context, key string) (acquirer.Authorization, error)
}

// Defaults for the zero fields of Config.
const (
	DefaultInTransitBound  = 5 * time.Second
	DefaultClockSkew       = time.Second
	DefaultAcquirerTimeout = 3 * time.Second
	DefaultStoreReserve    = time.Second
	DefaultRetryAfter      = 2 * time.Second
)

// Config tunes a Service; zero fields take the defaults above.
type Config struct {
	// InTransitBound (T) is the longest the acquirer may take to process a
	// request it received. It must exceed AcquirerTimeout: the acquirer can
	// finish after we gave up. DESIGN §4 rule 3.
	InTransitBound time.Duration
	// ClockSkew is the margin added to T for clocks that disagree.
	ClockSkew time.Duration
	// AcquirerTimeout caps one acquirer call.
	AcquirerTimeout time.Duration
	// StoreReserve is kept back from the invocation deadline to store the
	// outcome after the acquirer answers.
	StoreReserve time.Duration
	// RetryAfter is the delay given with every 503.
	RetryAfter time.Duration
	// MaxAmount caps a charge, in minor units (DefaultMaxAmount).
	MaxAmount int64
	// Logger receives one line per anomaly; never card data or keys.
	Logger *slog.Logger
	// Tracer makes the claim, acquirer and completion spans (none when nil).
	Tracer trace.Tracer
}

// Service charges cards idempotently. It is shared by the HTTP and the SQS
// entry points, so both behave identically.
type Service struct {
	guard    *idem.Guard
	acquirer Acquirer
	cfg      Config
}

// NewService returns a Service with cfg's zero fields defaulted.
func NewService(guard *idem.Guard, acq Acquirer, cfg Config) *Service {
	if cfg.InTransitBound <= 0 {
		cfg.InTransitBound = DefaultInTransitBound
	}
	if cfg.ClockSkew <= 0 {
		cfg.ClockSkew = DefaultClockSkew
	}
	if cfg.AcquirerTimeout <= 0 {
		cfg.AcquirerTimeout = DefaultAcquirerTimeout
	}
	if cfg.StoreReserve <= 0 {
		cfg.StoreReserve = DefaultStoreReserve
	}
	if cfg.RetryAfter <= 0 {
		cfg.RetryAfter = DefaultRetryAfter
	}
	if cfg.MaxAmount <= 0 {
		cfg.MaxAmount = DefaultMaxAmount
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Tracer == nil {
		cfg.Tracer = noop.NewTracerProvider().Tracer("")
	}
	return &Service{guard: guard, acquirer: acq, cfg: cfg}
}

// Result is an HTTP-shaped answer. Replay is true when Response is the stored
// answer of an earlier attempt.
type Result struct {
	idem.Response
	Replay bool
	// Outcome names what happened, for logs and metrics: executed, replayed,
	// in_flight, key_reused, released, pending, rejected, error, read or
	// not_found.
	Outcome string
	// Record is the record's reference (idem.Ref), once the request got as
	// far as a valid scope; empty before that.
	Record string
	// Attempt is the lease's attempt when this request owned the key (else 0);
	// AcquirerLatency the time spent in acquirer calls, AcquirerErrors how
	// many of them failed (a lookup's "not found" is an answer, not a failure).
	Attempt         int
	AcquirerLatency time.Duration
	AcquirerErrors  int
}

func (r Result) with(outcome string) Result {
	r.Outcome = outcome
	return r
}

// Charge executes one charge request for account at most once per key. The
// key is the raw Idempotency-Key header. Every outcome of DESIGN §3 is a
// Result; Charge has no error return because every failure has an answer.
func (s *Service) Charge(ctx context.Context, account, keyHeader string, body []byte) Result {
	key, err := idem.ParseKey(keyHeader)
	switch {
	case errors.Is(err, idem.ErrKeyMissing):
		return Problem(problem.Details{Code: problem.IdempotencyKeyMissing, Detail: "send an Idempotency-Key header, the same on every retry of this charge"})
	case err != nil:
		return Problem(problem.Details{Code: problem.IdempotencyKeyInvalid, Detail: "an Idempotency-Key is 8 to 128 visible ASCII characters"})
	}
	req, err := ParseRequest(body, s.cfg.MaxAmount)
	if err != nil {
		return validationFailed(err)
	}
	return s.ChargeParsed(ctx, idem.Scope{Operation: Operation, Account: account, Key: key}, req)
}

// ChargeParsed is Charge for an already parsed key and request (the SQS
// path). A bad scope is answered, never written.
func (s *Service) ChargeParsed(ctx context.Context, scope idem.Scope, req Request) Result {
	res := s.chargeParsed(ctx, scope, req)
	if scope.Validate() == nil {
		res.Record = idem.Ref(scope.PK())
	}
	return res
}

func (s *Service) chargeParsed(ctx context.Context, scope idem.Scope, req Request) Result {
	claimCtx, span := s.cfg.Tracer.Start(ctx, "idem.claim")
	claim, err := s.guard.Begin(claimCtx, scope, req.Canonical())
	span.End()
	var inFlight *idem.InFlightError
	switch {
	case errors.Is(err, idem.ErrAccountInvalid):
		return Problem(problem.Details{Code: problem.Unauthenticated, Detail: "the token does not name a usable account"})
	case errors.Is(err, idem.ErrKeyInvalid), errors.Is(err, idem.ErrKeyMissing):
		return Problem(problem.Details{Code: problem.IdempotencyKeyInvalid, Detail: "an Idempotency-Key is 8 to 128 visible ASCII characters"})
	case errors.As(err, &inFlight):
		return Problem(problem.Details{Code: problem.IdempotencyInFlight, Detail: "retry with the same key after Retry-After", RetryAfter: inFlight.RetryAfter}).with("in_flight")
	case errors.Is(err, idem.ErrKeyReused):
		return Problem(problem.Details{Code: problem.IdempotencyKeyReused, Detail: "use a new Idempotency-Key for a different charge"}).with("key_reused")
	case err != nil:
		// The claim may or may not have been written; either way nothing was
		// sent, and a retry with the same key is safe (a written claim's lease
		// expires and is taken over).
		s.cfg.Logger.ErrorContext(ctx, "claim failed", "error", err)
		return Problem(problem.Details{Code: problem.ServiceUnavailable, Detail: "retry with the same key", RetryAfter: s.cfg.RetryAfter}).with("error")
	case claim.Replay != nil:
		return Result{Response: *claim.Replay, Replay: true, Outcome: "replayed"}
	}
	var calls acquirerCalls
	res := s.execute(ctx, claim.Lease, req, &calls)
	res.Attempt, res.AcquirerLatency, res.AcquirerErrors = claim.Lease.Attempt(), calls.spent, calls.failed
	return res
}

// acquirerCalls adds up the acquirer calls of one request.
type acquirerCalls struct {
	spent  time.Duration
	failed int
}

func (c *acquirerCalls) add(start time.Time, err error) {
	c.spent += time.Since(start)
	if err != nil && !errors.Is(err, acquirer.ErrNotFound) {
		c.failed++
	}
}

// execute runs the owner's path: after a take-over, ask the acquirer first;
// then authorize within the lease and store the outcome. The acquirer calls
// are added up in calls.
func (s *Service) execute(ctx context.Context, lease *idem.Lease, req Request, calls *acquirerCalls) Result {
	if lease.TakenOver() {
		start := time.Now()
		lookupCtx, span := s.cfg.Tracer.Start(ctx, "acquirer.lookup", trace.WithSpanKind(trace.SpanKindClient))
		auth, err := s.acquirer.Lookup(lookupCtx, lease.DownstreamKey())
		endSpan(span, err)
		calls.add(start, err)
		switch {
		case err == nil:
			return s.finish(ctx, lease, req, auth)
		case !errors.Is(err, acquirer.ErrNotFound):
			s.cfg.Logger.WarnContext(ctx, "acquirer lookup failed", "attempt", lease.Attempt(), "error", err)
			return s.pending(ctx, lease)
		}
	}
	callCtx, cancel, ok := s.callContext(ctx, lease)
	if !ok {
		return s.notSent(ctx, lease)
	}
	start := time.Now()
	callCtx, span := s.cfg.Tracer.Start(callCtx, "acquirer.authorize", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.Int("idem.attempt", lease.Attempt())))
	auth, err := s.acquirer.Authorize(callCtx, lease.DownstreamKey(), acquirer.Request{
		Amount: req.Amount, Currency: req.Currency, PaymentMethod: req.PaymentMethod,
		OrderID: req.OrderID, Description: req.Description,
	})
	endSpan(span, err)
	calls.add(start, err)
	cancel()
	switch {
	case err == nil:
		return s.finish(ctx, lease, req, auth)
	case errors.Is(err, acquirer.ErrNotSent):
		return s.notSent(ctx, lease)
	default:
		s.cfg.Logger.WarnContext(ctx, "acquirer outcome unknown", "attempt", lease.Attempt(), "error", err)
		return s.pending(ctx, lease)
	}
}

// callContext bounds the acquirer call: the acquirer timeout, the invocation
// deadline less the time to store the outcome, and the lease. It refuses
// (ok false) when the lease has less than T plus the skew margin left
// (DESIGN §4 rule 3) or no time is left for the call.
func (s *Service) callContext(ctx context.Context, lease *idem.Lease) (context.Context, context.CancelFunc, bool) {
	if lease.TimeLeft() < s.cfg.InTransitBound+s.cfg.ClockSkew {
		return nil, nil, false
	}
	now := s.guard.Now()
	deadline := now.Add(s.cfg.AcquirerTimeout)
	if d, ok := ctx.Deadline(); ok && d.Add(-s.cfg.StoreReserve).Before(deadline) {
		deadline = d.Add(-s.cfg.StoreReserve)
	}
	if lease.ExpiresAt().Before(deadline) {
		deadline = lease.ExpiresAt()
	}
	if !deadline.After(now) {
		return nil, nil, false
	}
	callCtx, cancel := context.WithDeadline(ctx, deadline)
	return callCtx, cancel, true
}

// notSent: nothing left this attempt. Only a first attempt may release
// (DESIGN §4 rule 2); after a take-over an earlier request may be in transit.
func (s *Service) notSent(ctx context.Context, lease *idem.Lease) Result {
	if lease.TakenOver() {
		return s.pending(ctx, lease)
	}
	if err := lease.Release(ctx); err != nil {
		s.cfg.Logger.ErrorContext(ctx, "release failed", "error", err)
		return s.pending(ctx, lease)
	}
	return Problem(problem.Details{Code: problem.AcquirerUnavailable, Detail: "nothing was charged; retry with the same key", RetryAfter: s.cfg.RetryAfter}).with("released")
}

// pending: the outcome is unknown. The record stays in flight; the lease is
// ended so the client's retry can take over and ask the acquirer.
func (s *Service) pending(ctx context.Context, lease *idem.Lease) Result {
	if err := lease.Abandon(ctx); err != nil && !errors.Is(err, idem.ErrLeaseLost) {
		s.cfg.Logger.ErrorContext(ctx, "abandon failed; the lease will expire by itself", "error", err)
	}
	return outcomePending(s.cfg.RetryAfter)
}

func outcomePending(retryAfter time.Duration) Result {
	return Problem(problem.Details{Code: problem.ChargeOutcomePending, Detail: "retry with the same key to learn the outcome", RetryAfter: retryAfter}).with("pending")
}

// finish stores the acquirer's outcome with its ledger row. A lost lease
// means another attempt resolved the key: answer with what it stored.
func (s *Service) finish(ctx context.Context, lease *idem.Lease, req Request, auth acquirer.Authorization) Result {
	ch := Charge{
		ID: ChargeID(lease.DownstreamKey()), Account: lease.Record().Account,
		Status: auth.Status, Amount: req.Amount, Currency: req.Currency,
		OrderID: req.OrderID, Description: req.Description,
		DeclineCode: auth.DeclineCode, AuthorizationID: auth.ID,
		CreatedAt: s.guard.Now().UTC().Truncate(time.Millisecond),
	}
	resp := ch.response()
	completeCtx, span := s.cfg.Tracer.Start(ctx, "idem.complete")
	err := lease.Complete(completeCtx, resp, ch.item())
	endSpan(span, err)
	if err == nil {
		return Result{Response: resp, Outcome: "executed"}
	}
	if !errors.Is(err, idem.ErrLeaseLost) {
		s.cfg.Logger.ErrorContext(ctx, "complete failed; the record stays in flight", "error", err)
		return outcomePending(s.cfg.RetryAfter)
	}
	rec, lookupErr := s.guard.Lookup(ctx, lease.PK())
	if lookupErr == nil && rec.Status == idem.StatusCompleted {
		return Result{Response: *rec.Response, Replay: true, Outcome: "replayed"}
	}
	return outcomePending(s.cfg.RetryAfter)
}

// Get returns account's charge id: 200 with the charge, or 404 for a charge
// that does not exist or belongs to another account (indistinguishable).
func (s *Service) Get(ctx context.Context, account, id string) Result {
	notFound := Problem(problem.Details{Code: problem.NotFound, Detail: "no such charge"}).with("not_found")
	if !validChargeID(id) || account == "" {
		return notFound
	}
	item, err := s.guard.Item(ctx, ledgerPK(id))
	if errors.Is(err, idem.ErrNotFound) {
		return notFound
	}
	if err != nil {
		s.cfg.Logger.ErrorContext(ctx, "get charge failed", "error", err)
		return Problem(problem.Details{Code: problem.ServiceUnavailable, RetryAfter: s.cfg.RetryAfter}).with("error")
	}
	ch, err := chargeFromItem(item)
	if err != nil || ch.Account != account {
		return notFound
	}
	return Result{Response: idem.Response{StatusCode: 200, Headers: map[string]string{"Content-Type": "application/json"}, Body: ch.json()}, Outcome: "read"}
}

func endSpan(span trace.Span, err error) {
	if err != nil {
		span.SetStatus(codes.Error, "failed") // the cause stays in the logs: it may name a record
	}
	span.End()
}

// Problem renders d as a Result (never a replay), with the outcome
// "rejected" unless the caller names another.
func Problem(d problem.Details) Result {
	status, headers, body := problem.Render(d)
	return Result{Response: idem.Response{StatusCode: status, Headers: headers, Body: body}, Outcome: "rejected"}
}

func validationFailed(err error) Result {
	var v *ValidationError
	if !errors.As(err, &v) {
		v = invalid("body", "invalid")
	}
	return Problem(problem.Details{Code: problem.ValidationFailed, Detail: v.Error(), Extensions: map[string]any{"errors": v.Errors}})
}

// Charge is the ledger row of one charge and its JSON form.
type Charge struct {
	ID              string
	Account         string
	Status          string
	Amount          int64
	Currency        string
	OrderID         string
	Description     string
	DeclineCode     string
	AuthorizationID string
	CreatedAt       time.Time
}

// ChargeID derives the charge id from the record's downstream key: the same
// for every attempt of one intent.
func ChargeID(downstreamKey string) string { return "ch_" + downstreamKey }

func validChargeID(id string) bool {
	if len(id) != 3+40 || id[:3] != "ch_" {
		return false
	}
	for _, c := range id[3:] {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func ledgerPK(id string) string { return "CHARGE#" + id }

func (c Charge) item() idem.Item {
	return idem.Item{PK: ledgerPK(c.ID), Attributes: map[string]string{
		"type": "charge", "id": c.ID, "account": c.Account, "status": c.Status,
		"amount": strconv.FormatInt(c.Amount, 10), "currency": c.Currency,
		"order_id": c.OrderID, "description": c.Description, "decline_code": c.DeclineCode,
		"authorization_id": c.AuthorizationID, "created_at": c.CreatedAt.Format(time.RFC3339Nano),
	}}
}

func chargeFromItem(it *idem.Item) (Charge, error) {
	a := it.Attributes
	amount, err := strconv.ParseInt(a["amount"], 10, 64)
	if err != nil {
		return Charge{}, fmt.Errorf("ledger row %s: amount: %w", it.PK, err)
	}
	created, err := time.Parse(time.RFC3339Nano, a["created_at"])
	if err != nil {
		return Charge{}, fmt.Errorf("ledger row %s: created_at: %w", it.PK, err)
	}
	return Charge{
		ID: a["id"], Account: a["account"], Status: a["status"], Amount: amount, Currency: a["currency"],
		OrderID: a["order_id"], Description: a["description"], DeclineCode: a["decline_code"],
		AuthorizationID: a["authorization_id"], CreatedAt: created,
	}, nil
}

// chargeJSON is the public shape of a charge. The account is not in it: the
// caller is the account.
type chargeJSON struct {
	ID              string `json:"id"`
	Object          string `json:"object"`
	Status          string `json:"status"`
	Amount          int64  `json:"amount"`
	Currency        string `json:"currency"`
	OrderID         string `json:"order_id"`
	Description     string `json:"description,omitempty"`
	DeclineCode     string `json:"decline_code,omitempty"`
	AuthorizationID string `json:"authorization_id"`
	CreatedAt       string `json:"created_at"`
}

func (c Charge) json() []byte {
	b, _ := json.Marshal(chargeJSON{
		ID: c.ID, Object: "charge", Status: c.Status, Amount: c.Amount, Currency: c.Currency,
		OrderID: c.OrderID, Description: c.Description, DeclineCode: c.DeclineCode,
		AuthorizationID: c.AuthorizationID, CreatedAt: c.CreatedAt.Format(time.RFC3339Nano),
	})
	return b
}

// response is the answer stored for the charge: 201 with the charge, or
// 402 CHARGE_DECLINED with its id and decline code.
func (c Charge) response() idem.Response {
	if c.Status == acquirer.StatusDeclined {
		status, headers, body := problem.Render(problem.Details{
			Code: problem.ChargeDeclined, Detail: "the card was declined; a new attempt needs a new Idempotency-Key",
			Extensions: map[string]any{"charge_id": c.ID, "decline_code": c.DeclineCode},
		})
		return idem.Response{StatusCode: status, Headers: headers, Body: body}
	}
	return idem.Response{StatusCode: 201, Headers: map[string]string{
		"Content-Type": "application/json",
		"Location":     "/v1/charges/" + c.ID,
	}, Body: c.json()}
}

package httpapi

import (
	"cmp"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/obs"
	"github.com/idempotent-payments/idempay/internal/refund"
)

// Code is a stable, machine-readable error code: a problem's "code"
// member. The service's outcomes carry theirs (charge.Outcome.Code), which
// the queue consumer renders too; the adapter's own refusals are the rest.
type Code string

// The codes of the API. Each is answered as the problems table says.
const (
	IdempotencyKeyMissing Code = "IDEMPOTENCY_KEY_MISSING"
	IdempotencyKeyInvalid Code = "IDEMPOTENCY_KEY_INVALID"
	ValidationFailed      Code = "VALIDATION_FAILED"
	UnsupportedMediaType  Code = "UNSUPPORTED_MEDIA_TYPE"
	Unauthenticated       Code = "UNAUTHENTICATED"
	NotFound              Code = "NOT_FOUND"
	ChargeDeclined        Code = "CHARGE_DECLINED"
	IdempotencyInFlight   Code = "IDEMPOTENCY_IN_FLIGHT"
	IdempotencyKeyReused  Code = "IDEMPOTENCY_KEY_REUSED"
	AcquirerUnavailable   Code = "ACQUIRER_UNAVAILABLE"
	ChargeOutcomePending  Code = "CHARGE_OUTCOME_PENDING"
	ServiceUnavailable    Code = "SERVICE_UNAVAILABLE"
	Internal              Code = "INTERNAL"

	RefundExceedsCharge  Code = "REFUND_EXCEEDS_CHARGE"
	RefundLimitReached   Code = "REFUND_LIMIT_REACHED"
	RefundDeclined       Code = "REFUND_DECLINED"
	RefundOutcomePending Code = refund.CodeOutcomePending
	ChargeNotRefundable  Code = refund.CodeNotRefundable
)

// answeredDeclined and answeredInternal name the two problems that are no
// outcome of their own: a declined charge's stored answer (the outcome is
// Executed or Replayed) and the answer to an outcome the table lacks. They
// key the table only: no log line or metric ever carries them.
const (
	answeredDeclined obs.Outcome = "declined"
	answeredInternal obs.Outcome = "internal"
	// A refund's stored answers that are problems: the acquirer declined
	// it, or the bound refused it.
	answeredRefundDeclined obs.Outcome = "refund_declined"
	answeredRefundExceeds  obs.Outcome = "refund_exceeds_charge"
	answeredRefundLimit    obs.Outcome = "refund_limit_reached"
)

// problemType is how one outcome is answered: its code, its HTTP status
// and title (one of each per code, as RFC 9457 gives a problem type), and
// what to do about it.
type problemType struct {
	code   Code
	status int
	title  string
	detail string
}

// problems is every problem the API answers, by the outcome it answers:
// the service's outcomes by name (charge.Outcome.Name), with the code the
// outcome carries, and the adapter's own refusals. The codes are written
// in charge too, which may not import this package and whose queue
// consumer renders the same codes: TestProblemsMatchTheOutcomes holds the
// two equal.
var problems = map[obs.Outcome]problemType{
	obs.OutcomeAccountInvalid: {Unauthenticated, 401, "Authentication is required", "a bearer token naming a usable account is required"},
	obs.OutcomeKeyMissing: {IdempotencyKeyMissing, 400, "Idempotency-Key header is required",
		"send an Idempotency-Key header, the same on every retry of this charge"},
	obs.OutcomeKeyInvalid: {IdempotencyKeyInvalid, 400, "Idempotency-Key is invalid",
		"send one Idempotency-Key header of " + strconv.Itoa(idem.MinKeyLen) + " to " + strconv.Itoa(idem.MaxKeyLen) +
			" visible ASCII characters, quoted if it holds a comma"},
	obs.OutcomeRequestInvalid: {ValidationFailed, 400, "The request body is invalid", ""},
	obs.OutcomeInFlight:       {IdempotencyInFlight, 409, "A request with this Idempotency-Key is in progress", "retry with the same key after Retry-After"},
	obs.OutcomeKeyReused: {IdempotencyKeyReused, 422, "This Idempotency-Key was used with a different request",
		"use a new Idempotency-Key for a different charge"},
	obs.OutcomeReleased: {AcquirerUnavailable, 503, "The acquirer is unavailable; nothing was sent", "nothing was charged; retry with the same key"},
	obs.OutcomePending:  {ChargeOutcomePending, 503, "The outcome of the charge is not known yet", "retry with the same key to learn the outcome"},
	obs.OutcomeAcquirerMismatch: {ChargeOutcomePending, 503, "The outcome of the charge is not known yet",
		"the charge is under review; retry with the same key to learn the outcome"},
	obs.OutcomeHeld: {ChargeOutcomePending, 503, "The outcome of the charge is not known yet",
		"the charge is under review; retry with the same key to learn the outcome"},
	obs.OutcomeUnavailable: {ServiceUnavailable, 503, "The service is unavailable", "retry with the same key"},
	obs.OutcomeNotFound:    {NotFound, 404, "Not found", "no such charge"},

	obs.OutcomeUnsupportedMediaType: {UnsupportedMediaType, 415, "The request body must be JSON",
		"send the body as Content-Type: application/json (charset utf-8 if given), without Content-Encoding"},
	obs.OutcomeNoRoute: {NotFound, 404, "Not found", "no such route"},
	answeredDeclined:   {ChargeDeclined, 402, "The charge was declined", "the card was declined; a new attempt needs a new Idempotency-Key"},
	answeredInternal:   {Internal, 500, "Internal error", ""},

	obs.OutcomeNotRefundable: {ChargeNotRefundable, 422, "The charge cannot be refunded",
		"only a captured charge of this deployment's acquirer can be refunded"},
	obs.OutcomeChargePending: {ChargeOutcomePending, 503, "The outcome of the charge is not known yet",
		"retry the refund with the same key once the charge's outcome is known"},
	obs.OutcomeChargeHeld: {ChargeOutcomePending, 503, "The outcome of the charge is not known yet",
		"the charge is under review; retry the refund with the same key once its outcome is known"},
	answeredRefundDeclined: {RefundDeclined, 402, "The refund was declined", "the acquirer declined the refund; nothing was refunded"},
	answeredRefundExceeds: {RefundExceedsCharge, 422, "The refund exceeds what remains refundable",
		"refundable is what remained when this refund was decided; a smaller refund needs a new Idempotency-Key"},
	answeredRefundLimit: {RefundLimitReached, 422, "The charge has the most refunds allowed",
		"the charge holds " + strconv.Itoa(refund.MaxEntries) + " refunds, succeeded or in flight"},
}

// refundProblems are the rows a refund's routes answer in place of
// problems' for the same outcome: a refund's outcome is pending, not a
// charge's, and what is not found is a charge or a refund.
var refundProblems = map[obs.Outcome]problemType{
	obs.OutcomePending: {RefundOutcomePending, 503, "The outcome of the refund is not known yet", "retry with the same key to learn the outcome"},
	obs.OutcomeAcquirerMismatch: {RefundOutcomePending, 503, "The outcome of the refund is not known yet",
		"the refund is under review; retry with the same key to learn the outcome"},
	obs.OutcomeHeld: {RefundOutcomePending, 503, "The outcome of the refund is not known yet",
		"the refund is under review; retry with the same key to learn the outcome"},
	obs.OutcomeReleased: {AcquirerUnavailable, 503, "The acquirer is unavailable; nothing was sent", "nothing was refunded; retry with the same key"},
	obs.OutcomeKeyReused: {IdempotencyKeyReused, 422, "This Idempotency-Key was used with a different request",
		"use a new Idempotency-Key for a different refund"},
}

// ProblemContentType is the content type of every problem document.
const ProblemContentType = "application/problem+json"

// TypeURI is the stable type of code: a relative reference under /problems/.
func TypeURI(code Code) string {
	return "/problems/" + strings.ToLower(strings.ReplaceAll(string(code), "_", "-"))
}

// problem is one problem document to answer.
type problem struct {
	// outcome picks the row of problems (of refundProblems first, for a
	// refund); one it lacks answers as Internal.
	outcome obs.Outcome
	refund  bool
	// detail, when set, replaces the row's.
	detail string
	// extensions are members beside the standard ones (field errors, a
	// charge id).
	extensions map[string]any
	// retryAfter, when positive, becomes a Retry-After header in whole
	// seconds.
	retryAfter time.Duration
}

// response renders p: its status, its content type (and Retry-After), and
// its RFC 9457 document, whose code and title are the row's.
func (p problem) response() idem.Response {
	t, ok := refundProblems[p.outcome]
	if !p.refund || !ok {
		t, ok = problems[p.outcome]
	}
	if !ok {
		p = problem{outcome: answeredInternal}
		t = problems[answeredInternal]
	}
	doc := map[string]any{}
	for k, v := range p.extensions {
		doc[k] = v
	}
	doc["type"] = TypeURI(t.code)
	doc["title"] = t.title
	doc["status"] = t.status
	doc["code"] = t.code
	if detail := cmp.Or(p.detail, t.detail); detail != "" {
		doc["detail"] = detail
	}
	body, err := json.Marshal(doc)
	if err != nil { // extensions are plain values; a failure is a programming error
		return problem{outcome: answeredInternal}.response()
	}
	headers := map[string]string{"Content-Type": ProblemContentType}
	if p.retryAfter > 0 {
		secs := int64((p.retryAfter + time.Second - 1) / time.Second)
		headers["Retry-After"] = strconv.FormatInt(secs, 10)
	}
	return idem.Response{StatusCode: t.status, Headers: headers, Body: body}
}

// outcomeProblem is the problem that answers a result of the service: the
// outcome's row, with the field errors of an invalid request and the
// reason of a refused key or account before what to do about it.
func outcomeProblem(res charge.Result) problem {
	return resultProblem(problem{outcome: res.Outcome.Name(), retryAfter: res.RetryAfter}, res.Errors, res.Reason)
}

// refundProblem is outcomeProblem for a refund's result.
func refundProblem(res refund.Result) problem {
	return resultProblem(problem{outcome: res.Outcome.Name(), retryAfter: res.RetryAfter, refund: true}, res.Errors, res.Reason)
}

// resultProblem adds to p the field errors of an invalid request and the
// reason of a refused key or account, before what to do about it.
func resultProblem(p problem, errs []charge.FieldError, reason string) problem {
	switch {
	case p.outcome == obs.OutcomeRequestInvalid:
		p.detail = (&charge.ValidationError{Errors: errs}).Error()
		p.extensions = map[string]any{"errors": errs}
	case reason != "":
		p.detail = reason + "; " + problems[p.outcome].detail
	}
	return p
}

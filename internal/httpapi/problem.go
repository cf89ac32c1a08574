package httpapi

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/refund"
)

// form is how one code is answered: its HTTP status and title (one of
// each per code, as RFC 9457 gives a problem type). The codes themselves
// are op's (op.Code), the one list every adapter maps.
type form struct {
	status int
	title  string
}

// forms maps every code the API answers with to its form: the codes of
// the operations' outcomes (op.Codes), their stored answers' (a declined
// charge or refund, a refund the bound refused), and the adapter's own.
// TestEveryCodeHasAForm holds it whole.
var forms = map[op.Code]form{
	op.CodeUnauthenticated:             {401, "Authentication is required"},
	op.CodeIdempotencyKeyMissing:       {400, "Idempotency-Key header is required"},
	op.CodeIdempotencyKeyInvalid:       {400, "Idempotency-Key is invalid"},
	op.CodeValidationFailed:            {400, "The request body is invalid"},
	op.CodeIdempotencyInFlight:         {409, "A request with this Idempotency-Key is in progress"},
	op.CodeIdempotencyKeyReused:        {422, "This Idempotency-Key was used with a different request"},
	op.CodeAcquirerUnavailable:         {503, "The acquirer is unavailable; nothing was sent"},
	op.CodeServiceUnavailable:          {503, "The service is unavailable"},
	op.CodeNotFound:                    {404, "Not found"},
	op.CodeUnsupportedMediaType:        {415, "The request body must be JSON"},
	op.CodeInternal:                    {500, "Internal error"},
	op.CodeChargeOutcomePending:        {503, "The outcome of the charge is not known yet"},
	op.CodeChargeDeclined:              {402, "The charge was declined"},
	op.CodeRefundOutcomePending:        {503, "The outcome of the refund is not known yet"},
	op.CodeChargeNotRefundable:         {422, "The charge cannot be refunded"},
	op.CodeRefundDeclined:              {402, "The refund was declined"},
	op.CodeRefundExceedsCharge:         {422, "The refund exceeds what remains refundable"},
	op.CodeRefundLimitReached:          {422, "The charge has the most refunds allowed"},
	op.CodeCaptureOutcomePending:       {503, "The outcome of the capture is not known yet"},
	op.CodeVoidOutcomePending:          {503, "The outcome of the void is not known yet"},
	op.CodeCaptureDeclined:             {402, "The capture was declined"},
	op.CodeVoidDeclined:                {402, "The void was declined"},
	op.CodeChargeNotCapturable:         {422, "The charge cannot be captured or voided"},
	op.CodeAuthorizationExpired:        {422, "The authorization has expired"},
	op.CodeCaptureInFlight:             {409, "A capture of the charge is in flight"},
	op.CodeVoidInFlight:                {409, "A void of the charge is in flight"},
	op.CodeCaptureExceedsAuthorization: {422, "The capture exceeds what remains capturable"},
}

// words are an operation's words in the details of its problems: what it
// makes ("charge") and what making it did ("charged").
type words struct{ noun, done string }

var (
	chargeWords = words{"charge", "charged"}
	refundWords = words{"refund", "refunded"}
)

// detailOf is what to do about outcome o of an operation that speaks w:
// "" where the problem has no standing detail.
func detailOf(o op.Outcome, w words) string {
	switch o {
	case op.AccountInvalid:
		return "a bearer token naming a usable account is required"
	case op.KeyMissing:
		return "send an Idempotency-Key header, the same on every retry of this charge"
	case op.KeyInvalid:
		return "send one Idempotency-Key header of " + strconv.Itoa(idem.MinKeyLen) + " to " + strconv.Itoa(idem.MaxKeyLen) +
			" visible ASCII characters, quoted if it holds a comma"
	case op.InFlight:
		return "retry with the same key after Retry-After"
	case op.KeyReused:
		return "use a new Idempotency-Key for a different " + w.noun
	case op.Released:
		return "nothing was " + w.done + "; retry with the same key"
	case op.Pending:
		return "retry with the same key to learn the outcome"
	case op.Mismatch, op.Held:
		return "the " + w.noun + " is under review; retry with the same key to learn the outcome"
	case op.Unavailable:
		return "retry with the same key"
	case op.NotFound:
		return "no such charge"
	case op.NotRefundable:
		return "only a captured charge of this deployment's acquirer can be refunded"
	case op.ChargePending:
		return "retry the " + w.noun + " with the same key once the charge's outcome is known"
	case op.ChargeHeld:
		return "the charge is under review; retry the " + w.noun + " with the same key once its outcome is known"
	case op.NotCapturable:
		return "only an open authorization of this deployment's acquirer with something left can be captured or voided"
	case op.AuthorizationExpired:
		return "the authorization has lapsed and released its amount; nothing can be captured"
	case op.CaptureInFlight:
		return "a capture of this charge is in flight; retry with the same key after Retry-After"
	case op.VoidInFlight:
		return "a void of this charge is in flight; retry with the same key after Retry-After"
	case op.CaptureHeld:
		return "a capture of this charge is under review; retry with the same key once it is settled"
	case op.VoidHeld:
		return "a void of this charge is under review; retry with the same key once it is settled"
	}
	return ""
}

// The details of the answers that are no outcome of their own.
const (
	detailUnsupportedMediaType = "send the body as Content-Type: application/json (charset utf-8 if given), without Content-Encoding"
	detailChargeDeclined       = "the card was declined; a new attempt needs a new Idempotency-Key"
	detailRefundDeclined       = "the acquirer declined the refund; nothing was refunded"
	detailRefundExceeds        = "refundable is what remained when this refund was decided; a smaller refund needs a new Idempotency-Key"
)

// detailRefundLimit is the detail of REFUND_LIMIT_REACHED.
var detailRefundLimit = "the charge holds " + strconv.Itoa(refund.MaxEntries) + " refunds, succeeded or in flight"

// ProblemContentType is the content type of every problem document.
const ProblemContentType = "application/problem+json"

// TypeURI is the stable type of code: a relative reference under /problems/.
func TypeURI(code op.Code) string {
	return "/problems/" + strings.ToLower(strings.ReplaceAll(string(code), "_", "-"))
}

// problem is one problem document to answer.
type problem struct {
	// code picks the form (forms); one it lacks answers as INTERNAL.
	code op.Code
	// detail says what to do about it ("" for none).
	detail string
	// extensions are members beside the standard ones (field errors, a
	// charge id).
	extensions map[string]any
	// retryAfter, when positive, becomes a Retry-After header in whole
	// seconds.
	retryAfter time.Duration
}

// response renders p: its status, its content type (and Retry-After), and
// its RFC 9457 document, whose status and title are its code's form.
func (p problem) response() idem.Response {
	f, ok := forms[p.code]
	if !ok {
		p = problem{code: op.CodeInternal}
		f = forms[op.CodeInternal]
	}
	doc := map[string]any{}
	for k, v := range p.extensions {
		doc[k] = v
	}
	doc["type"] = TypeURI(p.code)
	doc["title"] = f.title
	doc["status"] = f.status
	doc["code"] = p.code
	if p.detail != "" {
		doc["detail"] = p.detail
	}
	body, err := json.Marshal(doc)
	if err != nil { // extensions are plain values; a failure is a programming error
		return problem{code: op.CodeInternal}.response()
	}
	headers := map[string]string{"Content-Type": ProblemContentType}
	if p.retryAfter > 0 {
		secs := int64((p.retryAfter + time.Second - 1) / time.Second)
		headers["Retry-After"] = strconv.FormatInt(secs, 10)
	}
	return idem.Response{StatusCode: f.status, Headers: headers, Body: body}
}

// outcomeProblem is the problem that answers a charge's result: its
// outcome's code and detail, with the field errors of an invalid request
// and the reason of a refused key or account before what to do about it.
func outcomeProblem(res charge.Result) problem {
	return resultProblem(res.Outcome, charge.Codes, chargeWords, res.RetryAfter, res.Errors, res.Reason)
}

// resultProblem is the problem of outcome o of an operation with codes c
// and words w.
func resultProblem(o op.Outcome, c op.Codes, w words, retryAfter time.Duration, errs []charge.FieldError, reason string) problem {
	p := problem{code: c.Of(o), detail: detailOf(o, w), retryAfter: retryAfter}
	switch {
	case o == op.RequestInvalid:
		p.detail = (&charge.ValidationError{Errors: errs}).Error()
		p.extensions = map[string]any{"errors": errs}
	case reason != "":
		p.detail = reason + "; " + p.detail
	}
	return p
}

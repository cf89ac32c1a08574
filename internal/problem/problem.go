// Package problem renders RFC 9457 problem details. One table maps each
// stable code to its HTTP status and title; internal error text never reaches
// a client.
package problem

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// Code is a stable, machine-readable error code (the "code" member).
type Code string

// The codes of the API. Their statuses and titles are in the table below.
const (
	IdempotencyKeyMissing Code = "IDEMPOTENCY_KEY_MISSING"
	IdempotencyKeyInvalid Code = "IDEMPOTENCY_KEY_INVALID"
	ValidationFailed      Code = "VALIDATION_FAILED"
	UnsupportedMediaType  Code = "UNSUPPORTED_MEDIA_TYPE"
	Unauthenticated       Code = "UNAUTHENTICATED"
	NotFound              Code = "NOT_FOUND"
	MethodNotAllowed      Code = "METHOD_NOT_ALLOWED"
	ChargeDeclined        Code = "CHARGE_DECLINED"
	IdempotencyInFlight   Code = "IDEMPOTENCY_IN_FLIGHT"
	IdempotencyKeyReused  Code = "IDEMPOTENCY_KEY_REUSED"
	AcquirerUnavailable   Code = "ACQUIRER_UNAVAILABLE"
	ChargeOutcomePending  Code = "CHARGE_OUTCOME_PENDING"
	ServiceUnavailable    Code = "SERVICE_UNAVAILABLE"
	Internal              Code = "INTERNAL"
)

type entry struct {
	status int
	title  string
}

var table = map[Code]entry{
	IdempotencyKeyMissing: {400, "Idempotency-Key header is required"},
	IdempotencyKeyInvalid: {400, "Idempotency-Key is invalid"},
	ValidationFailed:      {400, "The request body is invalid"},
	UnsupportedMediaType:  {415, "The request body must be JSON"},
	Unauthenticated:       {401, "Authentication is required"},
	NotFound:              {404, "Not found"},
	MethodNotAllowed:      {405, "Method not allowed"},
	ChargeDeclined:        {402, "The charge was declined"},
	IdempotencyInFlight:   {409, "A request with this Idempotency-Key is in progress"},
	IdempotencyKeyReused:  {422, "This Idempotency-Key was used with a different request"},
	AcquirerUnavailable:   {503, "The acquirer is unavailable; nothing was charged"},
	ChargeOutcomePending:  {503, "The outcome of the charge is not known yet"},
	ServiceUnavailable:    {503, "The service is unavailable"},
	Internal:              {500, "Internal error"},
}

// Status is the HTTP status of code (500 for an unknown code).
func Status(code Code) int {
	if e, ok := table[code]; ok {
		return e.status
	}
	return 500
}

// Details is one problem document. Extra members (field errors, a charge
// id) go in Extensions and are rendered beside the standard ones.
type Details struct {
	Code       Code
	Detail     string
	Extensions map[string]any
	// RetryAfter, when positive, becomes a Retry-After header in whole seconds.
	RetryAfter time.Duration
}

// ContentType of every problem document.
const ContentType = "application/problem+json"

// TypeURI is the stable type of code: a relative reference under /problems/.
func TypeURI(code Code) string {
	return "/problems/" + strings.ToLower(strings.ReplaceAll(string(code), "_", "-"))
}

// Render returns the status, headers and body of d.
func Render(d Details) (int, map[string]string, []byte) {
	e, ok := table[d.Code]
	if !ok {
		d = Details{Code: Internal}
		e = table[Internal]
	}
	doc := map[string]any{}
	for k, v := range d.Extensions {
		doc[k] = v
	}
	doc["type"] = TypeURI(d.Code)
	doc["title"] = e.title
	doc["status"] = e.status
	doc["code"] = d.Code
	if d.Detail != "" {
		doc["detail"] = d.Detail
	}
	body, err := json.Marshal(doc)
	if err != nil { // extensions are plain values; a failure is a programming error
		return Render(Details{Code: Internal})
	}
	headers := map[string]string{"Content-Type": ContentType}
	if d.RetryAfter > 0 {
		secs := int64((d.RetryAfter + time.Second - 1) / time.Second)
		headers["Retry-After"] = strconv.FormatInt(secs, 10)
	}
	return e.status, headers, body
}

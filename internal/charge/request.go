package charge

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/strictjson"
)

// Operation is the idempotency operation of a charge. The HTTP route and the
// SQS charge commands both use it, so they share one key space.
const Operation = "charge"

// Limits of a charge request.
const (
	MaxBodyBytes         = 16 << 10
	DefaultMaxAmount     = 100_000_000 // minor units: 1,000,000.00 in a two-decimal currency
	MaxOrderIDLen        = 64
	MaxPaymentMethodLen  = 128
	MaxDescriptionLength = 500
)

// Request is a validated charge request.
type Request struct {
	// Amount in minor units of Currency, positive.
	Amount int64
	// Currency is an ISO 4217 alpha-3 code.
	Currency      string
	OrderID       string
	PaymentMethod string
	Description   string
	// Capture is the request's "capture" member. It is part of the
	// fingerprint only when present, so "capture": true and no member
	// are two requests under one key.
	Capture Capture
}

// Capture is what a charge request's "capture" member said, as it said
// it: CaptureAbsent, CaptureTrue or CaptureFalse.
type Capture string

// The values of Capture; each but CaptureAbsent is the member's JSON.
const (
	// CaptureAbsent: no member; authorized and captured in one call, as
	// before the member existed.
	CaptureAbsent Capture = ""
	// CaptureTrue: authorized and captured in one call.
	CaptureTrue Capture = "true"
	// CaptureFalse: authorized only, captured later (AuthorizeOnly).
	CaptureFalse Capture = "false"
)

// AuthorizeOnly reports whether the request asks for the authorization
// alone, captured later.
func (r Request) AuthorizeOnly() bool { return r.Capture == CaptureFalse }

// member is the capture member as the acquirer's request and the
// canonical body carry it: nil when absent.
func (c Capture) member() *bool {
	if c == CaptureAbsent {
		return nil
	}
	b := c == CaptureTrue
	return &b
}

// FieldError is one problem with one field of a request: the one type
// every operation's door lists (op.FieldError).
type FieldError = op.FieldError

// ValidationError lists everything wrong with a request body (a charge's
// or a refund's).
// errors.Is(err, ErrValidation) is true.
type ValidationError struct {
	Errors []FieldError
}

// ErrValidation is the sentinel of every *ValidationError.
var ErrValidation = errors.New("request invalid")

func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Errors))
	for i, fe := range e.Errors {
		parts[i] = fe.Field + ": " + fe.Message
	}
	return fmt.Sprintf("%v: %s", ErrValidation, strings.Join(parts, "; "))
}

// Is makes errors.Is(err, ErrValidation) true.
func (e *ValidationError) Is(target error) bool { return target == ErrValidation }

func invalid(field, message string) *ValidationError {
	return &ValidationError{Errors: []FieldError{{Field: field, Message: message}}}
}

// wire is the JSON shape of a request. Pointers tell absent from zero; the
// amount stays raw so that only a number literal is accepted.
type wire struct {
	Amount        jsontext.Value `json:"amount"`
	Currency      *string        `json:"currency"`
	OrderID       *string        `json:"order_id"`
	PaymentMethod *string        `json:"payment_method"`
	Description   *string        `json:"description"`
	Capture       jsontext.Value `json:"capture"`
}

// ParseRequest decodes and validates a charge request body strictly: one
// JSON object of at most MaxBodyBytes, every member name exactly as in the
// schema and at most once, no unknown members, valid UTF-8 without lone
// surrogates, nothing after the object (see strictjson.Unmarshal); amount a
// positive integer literal no larger than maxAmount (DefaultMaxAmount when
// maxAmount <= 0); capture, when present, true or false; identifiers without white space, control or format
// characters; a description without control characters or bidirectional
// controls. It returns a *ValidationError listing every field error; it never
// panics.
func ParseRequest(body []byte, maxAmount int64) (Request, error) {
	if maxAmount <= 0 {
		maxAmount = DefaultMaxAmount
	}
	if len(body) > MaxBodyBytes {
		return Request{}, invalid("body", fmt.Sprintf("larger than %d bytes", MaxBodyBytes))
	}
	var w wire
	if err := strictjson.Unmarshal(body, &w); err != nil {
		return Request{}, DecodeError(err)
	}

	var errs []FieldError
	add := func(field, msg string) { errs = append(errs, FieldError{Field: field, Message: msg}) }
	var req Request

	if w.Amount == nil || w.Amount.Kind() == 'n' {
		add("amount", "required")
	} else if n, problem := ParseAmount(w.Amount, maxAmount); problem != "" {
		add("amount", problem)
	} else {
		req.Amount = n
	}
	switch {
	case w.Currency == nil:
		add("currency", "required")
	case !IsCurrency(*w.Currency):
		add("currency", "must be an ISO 4217 alpha-3 code in upper case")
	default:
		req.Currency = *w.Currency
	}
	req.OrderID = identifier(w.OrderID, "order_id", MaxOrderIDLen, add)
	req.PaymentMethod = identifier(w.PaymentMethod, "payment_method", MaxPaymentMethodLen, add)
	req.Description = description(w.Description, add)
	switch w.Capture.Kind() {
	case 0: // absent
	case 't':
		req.Capture = CaptureTrue
	case 'f':
		req.Capture = CaptureFalse
	default:
		add("capture", "must be true or false")
	}
	if errs != nil {
		return Request{}, &ValidationError{Errors: errs}
	}
	return req, nil
}

// ParseAmount reads an amount in minor units as a request states it: a
// positive integer literal no larger than maxAmount (a string, a fraction,
// an exponent, null or any other value is refused). problem says what is
// wrong, "" when nothing is. A refund's amount follows the same rule.
func ParseAmount(raw jsontext.Value, maxAmount int64) (n int64, problem string) {
	if raw.Kind() != '0' {
		return 0, "must be an integer number of minor units"
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	switch {
	case err != nil:
		return 0, "must be an integer number of minor units"
	case n <= 0:
		return 0, "must be positive"
	case n > maxAmount:
		return 0, fmt.Sprintf("must be at most %d", maxAmount)
	}
	return n, ""
}

// identifier validates a required id: at most maxLen characters, none of
// them white space, a control character, a format character (category Cf:
// zero-width characters, bidirectional controls, the byte order mark), any
// other default-ignorable code point (variation selectors, the combining
// grapheme joiner, Hangul fillers) or U+FFFD (a byte someone upstream could
// not decode), so an id reads the same wherever it is shown.
func identifier(v *string, field string, maxLen int, add func(string, string)) string {
	switch {
	case v == nil || *v == "":
		add(field, "required")
	case utf8.RuneCountInString(*v) > maxLen:
		add(field, fmt.Sprintf("at most %d characters", maxLen))
	case strings.IndexFunc(*v, invisible) >= 0:
		add(field, "must not contain control or invisible format characters")
	case strings.IndexFunc(*v, unicode.IsSpace) >= 0:
		add(field, "must not contain white space")
	default:
		return *v
	}
	return ""
}

// description validates the optional free text: at most
// MaxDescriptionLength characters, no control characters, none of the
// bidirectional embedding, override and isolate characters that make text
// display in another order than it is stored, and no U+FFFD.
func description(v *string, add func(string, string)) string {
	switch {
	case v == nil || *v == "":
	case utf8.RuneCountInString(*v) > MaxDescriptionLength:
		add("description", fmt.Sprintf("at most %d characters", MaxDescriptionLength))
	case strings.IndexFunc(*v, func(r rune) bool { return unicode.IsControl(r) || isBidiControl(r) || r == utf8.RuneError }) >= 0:
		add("description", "must not contain control characters, bidirectional overrides or U+FFFD")
	default:
		return *v
	}
	return ""
}

// invisible reports the characters an identifier must not hold.
func invisible(r rune) bool {
	return unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Variation_Selector, unicode.Other_Default_Ignorable_Code_Point) ||
		r == utf8.RuneError
}

// isBidiControl reports the embedding, override and isolate characters
// U+202A–U+202E and U+2066–U+2069.
func isBidiControl(r rune) bool {
	return (r >= '\u202a' && r <= '\u202e') || (r >= '\u2066' && r <= '\u2069')
}

// DecodeError turns a strict decoding error of a charge request into the
// field error ParseRequest returns; the document as a whole is the field
// "body". The queue consumer answers a request the envelope's decoder
// refused with it, so the same bytes get the same error on both doors.
func DecodeError(err error) *ValidationError {
	var e *strictjson.Error
	if !errors.As(err, &e) {
		return invalid("body", "invalid JSON")
	}
	if e.Field == "" {
		return invalid("body", e.Message)
	}
	return invalid(e.Field, e.Message)
}

// JSON is the request as a canonical body: the members in the schema's
// order, description only when set, capture only when present. It parses back to the same request.
func (r Request) JSON() []byte {
	b, err := json.Marshal(canonicalJSON{
		Amount: r.Amount, Currency: r.Currency, OrderID: r.OrderID, PaymentMethod: r.PaymentMethod,
		Description: r.Description, Capture: r.Capture.member(),
	})
	if err != nil { // cannot happen: a number and strings
		panic(err)
	}
	return b
}

type canonicalJSON struct {
	Amount        int64  `json:"amount"`
	Currency      string `json:"currency"`
	OrderID       string `json:"order_id"`
	PaymentMethod string `json:"payment_method"`
	Description   string `json:"description,omitempty"`
	Capture       *bool  `json:"capture,omitempty"`
}

// Canonical is the request in the fixed field order the fingerprint
// hashes. Capture is last, and only when present, so a request without
// it has the fingerprint it had before the member existed.
func (r Request) Canonical() idem.Canonical {
	c := idem.Canonical{
		{Name: "amount", Value: strconv.FormatInt(r.Amount, 10)},
		{Name: "currency", Value: r.Currency},
		{Name: "order_id", Value: r.OrderID},
		{Name: "payment_method", Value: r.PaymentMethod},
		{Name: "description", Value: r.Description},
	}
	if r.Capture != CaptureAbsent {
		c = append(c, idem.Field{Name: "capture", Value: string(r.Capture)})
	}
	return c
}

// RequestFromCanonical rebuilds a request from its stored canonical form, for
// a reconciler that has only the record.
func RequestFromCanonical(c idem.Canonical) (Request, error) {
	var r Request
	for _, f := range c {
		switch f.Name {
		case "amount":
			n, err := strconv.ParseInt(f.Value, 10, 64)
			if err != nil {
				return Request{}, fmt.Errorf("canonical amount %q: %w", f.Value, err)
			}
			r.Amount = n
		case "currency":
			r.Currency = f.Value
		case "order_id":
			r.OrderID = f.Value
		case "payment_method":
			r.PaymentMethod = f.Value
		case "description":
			r.Description = f.Value
		case "capture":
			if r.Capture = Capture(f.Value); r.Capture != CaptureTrue && r.Capture != CaptureFalse {
				return Request{}, fmt.Errorf("canonical capture %q: want true or false", f.Value)
			}
		default:
			return Request{}, fmt.Errorf("canonical request: unknown field %q", f.Name)
		}
	}
	return r, nil
}

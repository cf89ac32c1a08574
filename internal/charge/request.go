package charge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/idempotent-payments/idempay/internal/idem"
)

// Operation is the idempotency operation of a charge. The HTTP route and the
// SQS charge commands both use it, so they share one key space.
const Operation = "charge"

// Limits of a charge request.
const (
	MaxBodyBytes         = 16 << 10
	DefaultMaxAmount     = 100_000_000 // minor units: 1,000,000.00 in a two-decimal currency
	maxOrderIDLen        = 64
	maxPaymentMethodLen  = 128
	maxDescriptionLength = 500
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
}

// FieldError is one problem with one field of a request.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// ValidationError lists everything wrong with a request body.
// errors.Is(err, ErrValidation) is true.
type ValidationError struct {
	Errors []FieldError
}

// ErrValidation is the sentinel of every *ValidationError.
var ErrValidation = errors.New("charge request invalid")

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

// wire is the JSON shape of a request. Pointers tell absent from zero.
type wire struct {
	Amount        json.RawMessage `json:"amount"` // a number literal, never a string
	Currency      *string         `json:"currency"`
	OrderID       *string         `json:"order_id"`
	PaymentMethod *string         `json:"payment_method"`
	Description   *string         `json:"description"`
}

// ParseRequest decodes and validates a charge request body: one JSON object
// of at most MaxBodyBytes, no unknown fields, amount a positive integer no
// larger than maxAmount (DefaultMaxAmount when maxAmount <= 0). It returns a
// *ValidationError listing every field error; it never panics.
func ParseRequest(body []byte, maxAmount int64) (Request, error) {
	if maxAmount <= 0 {
		maxAmount = DefaultMaxAmount
	}
	if len(body) > MaxBodyBytes {
		return Request{}, invalid("body", fmt.Sprintf("larger than %d bytes", MaxBodyBytes))
	}
	var w wire
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return Request{}, decodeError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Request{}, invalid("body", "must be a single JSON object")
	}

	var errs []FieldError
	add := func(field, msg string) { errs = append(errs, FieldError{Field: field, Message: msg}) }
	var req Request

	switch {
	case w.Amount == nil || string(w.Amount) == "null":
		add("amount", "required")
	default:
		n, err := strconv.ParseInt(string(w.Amount), 10, 64)
		switch {
		case err != nil:
			add("amount", "must be an integer number of minor units")
		case n <= 0:
			add("amount", "must be positive")
		case n > maxAmount:
			add("amount", fmt.Sprintf("must be at most %d", maxAmount))
		default:
			req.Amount = n
		}
	}
	switch {
	case w.Currency == nil:
		add("currency", "required")
	case !IsCurrency(*w.Currency):
		add("currency", "must be an ISO 4217 alpha-3 code in upper case")
	default:
		req.Currency = *w.Currency
	}
	req.OrderID = text(w.OrderID, "order_id", maxOrderIDLen, true, add)
	req.PaymentMethod = text(w.PaymentMethod, "payment_method", maxPaymentMethodLen, true, add)
	req.Description = text(w.Description, "description", maxDescriptionLength, false, add)
	if errs != nil {
		return Request{}, &ValidationError{Errors: errs}
	}
	return req, nil
}

// text validates a bounded string field: printable UTF-8, no control
// characters; identifiers (required fields) also without white space.
func text(v *string, field string, maxLen int, required bool, add func(string, string)) string {
	switch {
	case v == nil || *v == "":
		if required {
			add(field, "required")
		}
		return ""
	case utf8.RuneCountInString(*v) > maxLen:
		add(field, fmt.Sprintf("at most %d characters", maxLen))
	case strings.IndexFunc(*v, unicode.IsControl) >= 0 || !utf8.ValidString(*v):
		add(field, "must be printable text")
	case required && strings.IndexFunc(*v, unicode.IsSpace) >= 0:
		add(field, "must not contain white space")
	default:
		return *v
	}
	return ""
}

// decodeError turns a JSON decoding error into a field error without echoing
// the client's bytes back.
func decodeError(err error) *ValidationError {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) && typeErr.Field != "" {
		return invalid(typeErr.Field, "wrong type: want "+typeName(typeErr.Field))
	}
	if msg := err.Error(); strings.HasPrefix(msg, "json: unknown field ") {
		name := strings.Trim(strings.TrimPrefix(msg, "json: unknown field "), `"`)
		if utf8.RuneCountInString(name) > 64 || !utf8.ValidString(name) {
			name = "(a long or unprintable name)"
		}
		return invalid(name, "unknown field")
	}
	return invalid("body", "must be a JSON object")
}

func typeName(field string) string {
	if field == "amount" {
		return "integer"
	}
	return "string"
}

// Canonical is the request in the fixed field order the fingerprint hashes.
func (r Request) Canonical() idem.Canonical {
	return idem.Canonical{
		{Name: "amount", Value: strconv.FormatInt(r.Amount, 10)},
		{Name: "currency", Value: r.Currency},
		{Name: "order_id", Value: r.OrderID},
		{Name: "payment_method", Value: r.PaymentMethod},
		{Name: "description", Value: r.Description},
	}
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
		default:
			return Request{}, fmt.Errorf("canonical request: unknown field %q", f.Name)
		}
	}
	return r, nil
}

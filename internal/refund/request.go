package refund

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/strictjson"
)

// Operation is the idempotency operation of a refund: a key used for a
// charge and for a refund names two intents.
const Operation = "refund"

// MaxBodyBytes caps a refund request's body.
const MaxBodyBytes = 4 << 10

// The reasons a refund may give.
const (
	ReasonRequestedByCustomer = "requested_by_customer"
	ReasonDuplicate           = "duplicate"
	ReasonFraudulent          = "fraudulent"
)

// Reasons are the reasons a refund may give, in the API's order.
func Reasons() []string {
	return []string{ReasonRequestedByCustomer, ReasonDuplicate, ReasonFraudulent}
}

// Request is a validated refund request: the body, and the charge the
// route names.
type Request struct {
	// ChargeID is the charge to refund (the route's {id}).
	ChargeID string
	// Amount in minor units of the charge's currency; 0 when the body has
	// none, which refunds what remains refundable when the refund is
	// accepted (resolved by the reservation, and sent on every attempt).
	Amount int64
	// Reason is one of Reasons, or "" when the body has none.
	Reason string
}

// wire is the JSON shape of a refund body; the amount stays raw so that
// only a number literal is accepted.
type wire struct {
	Amount jsontext.Value `json:"amount"`
	Reason jsontext.Value `json:"reason"`
}

// ParseRequest decodes and validates a refund body for chargeID as
// strictly as charge.ParseRequest does a charge's: one JSON object of at
// most MaxBodyBytes, member names exactly as in the schema and at most
// once, no unknown members, valid UTF-8, nothing after the object;
// amount, when present, a positive integer literal no larger than
// maxAmount (charge.DefaultMaxAmount when maxAmount <= 0); reason, when
// present, one of Reasons. It returns a *charge.ValidationError listing
// every field error; it never panics. chargeID is taken as given: the
// service checks it.
func ParseRequest(chargeID string, body []byte, maxAmount int64) (Request, error) {
	if maxAmount <= 0 {
		maxAmount = charge.DefaultMaxAmount
	}
	if len(body) > MaxBodyBytes {
		return Request{}, &charge.ValidationError{Errors: []charge.FieldError{{Field: "body", Message: fmt.Sprintf("larger than %d bytes", MaxBodyBytes)}}}
	}
	var w wire
	if err := strictjson.Unmarshal(body, &w); err != nil {
		return Request{}, charge.DecodeError(err)
	}
	var errs []charge.FieldError
	add := func(field, msg string) { errs = append(errs, charge.FieldError{Field: field, Message: msg}) }
	req := Request{ChargeID: chargeID}
	if w.Amount != nil {
		if n, problem := charge.ParseAmount(w.Amount, maxAmount); problem != "" {
			add("amount", problem)
		} else {
			req.Amount = n
		}
	}
	if w.Reason != nil {
		// The strict decoder checked the value; a string is only unquoted.
		reason, err := jsontext.AppendUnquote(nil, w.Reason)
		if w.Reason.Kind() != '"' || err != nil || !slices.Contains(Reasons(), string(reason)) {
			add("reason", "must be one of "+strings.Join(Reasons(), ", "))
		} else {
			req.Reason = string(reason)
		}
	}
	if errs != nil {
		return Request{}, &charge.ValidationError{Errors: errs}
	}
	return req, nil
}

// Canonical is the request as the fingerprint hashes it: the charge, and
// the body as sent. An absent amount is "", so {} and {"amount": 777} are
// two requests even when 777 is what {} resolved to.
func (r Request) Canonical() idem.Canonical {
	amount := ""
	if r.Amount > 0 {
		amount = strconv.FormatInt(r.Amount, 10)
	}
	return idem.Canonical{
		{Name: "charge_id", Value: r.ChargeID},
		{Name: "amount", Value: amount},
		{Name: "reason", Value: r.Reason},
	}
}

// RequestFromCanonical rebuilds a request from its stored canonical form,
// for a reconciler that has only the record.
func RequestFromCanonical(c idem.Canonical) (Request, error) {
	var r Request
	for _, f := range c {
		switch f.Name {
		case "charge_id":
			r.ChargeID = f.Value
		case "amount":
			if f.Value == "" {
				continue
			}
			n, err := strconv.ParseInt(f.Value, 10, 64)
			if err != nil || n <= 0 {
				return Request{}, fmt.Errorf("canonical refund amount %q", f.Value)
			}
			r.Amount = n
		case "reason":
			r.Reason = f.Value
		default:
			return Request{}, fmt.Errorf("canonical refund: unknown field %q", f.Name)
		}
	}
	if !charge.ValidID(r.ChargeID) {
		return Request{}, fmt.Errorf("canonical refund: charge id %q", r.ChargeID)
	}
	return r, nil
}

package capture

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

// The idempotency operations of a capture and of a void: a key used for
// a charge, a refund, a capture and a void names four intents.
const (
	OperationCapture = "capture"
	OperationVoid    = "void"
)

// MaxBodyBytes caps a capture's or a void's body.
const MaxBodyBytes = 4 << 10

// FinalFlag is what a capture request's "final" member said, as it said
// it.
type FinalFlag string

// The values of FinalFlag; each but FinalAbsent is the member's JSON.
const (
	// FinalAbsent: no member; the capture is final, as with true.
	FinalAbsent FinalFlag = ""
	FinalTrue   FinalFlag = "true"
	// FinalFalse leaves the rest of the authorization capturable.
	FinalFalse FinalFlag = "false"
)

// Request is a validated capture request: the body, and the charge the
// route names.
type Request struct {
	// ChargeID is the authorization's charge (the route's {id}).
	ChargeID string
	// Amount in minor units of the charge's currency; 0 when the body has
	// none, which captures all that remains capturable when the capture
	// is reserved (resolved by the reservation, and sent on every
	// attempt).
	Amount int64
	// Final is the body's "final" as sent: part of the fingerprint only
	// when present, so {} and {"final": true} are two requests under one
	// key.
	Final FinalFlag
}

// Kind is what the capture does on the balance: Final unless the body
// said "final": false.
func (r Request) Kind() Kind {
	if r.Final == FinalFalse {
		return Partial
	}
	return Final
}

// The reasons a void may give: Stripe's cancellation reasons.
const (
	ReasonRequestedByCustomer = "requested_by_customer"
	ReasonDuplicate           = "duplicate"
	ReasonFraudulent          = "fraudulent"
	ReasonAbandoned           = "abandoned"
)

// VoidReasons are the reasons a void may give, in the API's order.
func VoidReasons() []string {
	return []string{ReasonRequestedByCustomer, ReasonDuplicate, ReasonFraudulent, ReasonAbandoned}
}

// VoidRequest is a validated void request.
type VoidRequest struct {
	// ChargeID is the authorization's charge (the route's {id}).
	ChargeID string
	// Reason is one of VoidReasons, or "" when the body has none.
	Reason string
}

// wire is the JSON shape of a capture's body and of a void's: the amount
// and the flag stay raw, so that only a number literal and a boolean
// literal are accepted.
type wire struct {
	Amount jsontext.Value `json:"amount"`
	Final  jsontext.Value `json:"final"`
}

type voidWire struct {
	Reason jsontext.Value `json:"reason"`
}

// ParseRequest decodes and validates a capture body for chargeID as
// strictly as charge.ParseRequest does a charge's: one JSON object of at
// most MaxBodyBytes, member names exactly as in the schema and at most
// once, no unknown members, valid UTF-8, nothing after the object;
// amount, when present, a positive integer literal no larger than
// maxAmount (charge.DefaultMaxAmount when maxAmount <= 0); final, when
// present, true or false. It returns a *charge.ValidationError listing
// every field error; it never panics. chargeID is taken as given: the
// service checks it.
func ParseRequest(chargeID string, body []byte, maxAmount int64) (Request, error) {
	if maxAmount <= 0 {
		maxAmount = charge.DefaultMaxAmount
	}
	var w wire
	if err := decode(body, &w); err != nil {
		return Request{}, err
	}
	var errs []charge.FieldError
	req := Request{ChargeID: chargeID}
	if w.Amount != nil {
		if n, problem := charge.ParseAmount(w.Amount, maxAmount); problem != "" {
			errs = append(errs, charge.FieldError{Field: "amount", Message: problem})
		} else {
			req.Amount = n
		}
	}
	switch w.Final.Kind() {
	case 0: // absent
	case 't':
		req.Final = FinalTrue
	case 'f':
		req.Final = FinalFalse
	default:
		errs = append(errs, charge.FieldError{Field: "final", Message: "must be true or false"})
	}
	if errs != nil {
		return Request{}, &charge.ValidationError{Errors: errs}
	}
	return req, nil
}

// ParseVoidRequest decodes and validates a void body for chargeID as
// strictly: {} or {"reason": one of VoidReasons}.
func ParseVoidRequest(chargeID string, body []byte) (VoidRequest, error) {
	var w voidWire
	if err := decode(body, &w); err != nil {
		return VoidRequest{}, err
	}
	req := VoidRequest{ChargeID: chargeID}
	if w.Reason != nil {
		// The strict decoder checked the value; a string is only unquoted.
		reason, err := jsontext.AppendUnquote(nil, w.Reason)
		if w.Reason.Kind() != '"' || err != nil || !slices.Contains(VoidReasons(), string(reason)) {
			return VoidRequest{}, &charge.ValidationError{Errors: []charge.FieldError{
				{Field: "reason", Message: "must be one of " + strings.Join(VoidReasons(), ", ")}}}
		}
		req.Reason = string(reason)
	}
	return req, nil
}

// decode is the strict decoding both bodies share.
func decode(body []byte, into any) error {
	if len(body) > MaxBodyBytes {
		return &charge.ValidationError{Errors: []charge.FieldError{{Field: "body", Message: fmt.Sprintf("larger than %d bytes", MaxBodyBytes)}}}
	}
	if err := strictjson.Unmarshal(body, into); err != nil {
		return charge.DecodeError(err)
	}
	return nil
}

// Canonical is the request as the fingerprint hashes it: the charge, and
// the body as sent. An absent amount or final is "", so {} and
// {"amount": 700} are two requests even when 700 is what {} resolved to.
func (r Request) Canonical() idem.Canonical {
	amount := ""
	if r.Amount > 0 {
		amount = strconv.FormatInt(r.Amount, 10)
	}
	return idem.Canonical{
		{Name: "charge_id", Value: r.ChargeID},
		{Name: "amount", Value: amount},
		{Name: "final", Value: string(r.Final)},
	}
}

// Canonical is the void request as the fingerprint hashes it.
func (r VoidRequest) Canonical() idem.Canonical {
	return idem.Canonical{{Name: "charge_id", Value: r.ChargeID}, {Name: "reason", Value: r.Reason}}
}

// RequestFromCanonical rebuilds a capture request from its stored
// canonical form, for a reconciler that has only the record.
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
				return Request{}, fmt.Errorf("canonical capture amount %q", f.Value)
			}
			r.Amount = n
		case "final":
			if r.Final = FinalFlag(f.Value); r.Final != FinalAbsent && r.Final != FinalTrue && r.Final != FinalFalse {
				return Request{}, fmt.Errorf("canonical capture final %q", f.Value)
			}
		default:
			return Request{}, fmt.Errorf("canonical capture: unknown field %q", f.Name)
		}
	}
	if !charge.ValidID(r.ChargeID) {
		return Request{}, fmt.Errorf("canonical capture: charge id %q", r.ChargeID)
	}
	return r, nil
}

// VoidRequestFromCanonical rebuilds a void request from its stored
// canonical form.
func VoidRequestFromCanonical(c idem.Canonical) (VoidRequest, error) {
	var r VoidRequest
	for _, f := range c {
		switch f.Name {
		case "charge_id":
			r.ChargeID = f.Value
		case "reason":
			if f.Value != "" && !slices.Contains(VoidReasons(), f.Value) {
				return VoidRequest{}, fmt.Errorf("canonical void reason %q", f.Value)
			}
			r.Reason = f.Value
		default:
			return VoidRequest{}, fmt.Errorf("canonical void: unknown field %q", f.Name)
		}
	}
	if !charge.ValidID(r.ChargeID) {
		return VoidRequest{}, fmt.Errorf("canonical void: charge id %q", r.ChargeID)
	}
	return r, nil
}

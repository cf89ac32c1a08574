// Package command is the schema of the messages on the command queues:
// charge, refund, capture and void commands from producers (each on its own queue, see
// Inbox) and reconcile commands from the sweeper (on the reconcile queue).
// Senders encode with Encode and the consumer decodes with Decode; nothing
// else spells the format.
//
//	{"type": "charge", "account": "acct_7Hq2", "idempotency_key": "order-123-attempt",
//	 "request": {"amount": 25000, "currency": "BRL", "order_id": "123", "payment_method": "pm_card_visa"}}
//	{"type": "refund", "account": "acct_7Hq2", "charge_id": "ch_…", "idempotency_key": "order-123-refund-1",
//	 "request": {"amount": 5000, "reason": "requested_by_customer"}}
//	{"type": "capture", "account": "acct_7Hq2", "charge_id": "ch_…", "idempotency_key": "order-123-capture-1",
//	 "request": {"amount": 15000}}
//	{"type": "void", "account": "acct_7Hq2", "charge_id": "ch_…", "idempotency_key": "order-123-void",
//	 "request": {"reason": "abandoned"}}
//	{"type": "reconcile", "pk": "IDEM#6:charge9:acct_7Hq217:order-123-attempt"}
package command

import (
	"errors"
	"fmt"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/strictjson"
)

// Type tells the commands apart (the "type" member).
type Type string

// The command types.
const (
	TypeCharge    Type = "charge"
	TypeRefund    Type = "refund"
	TypeCapture   Type = "capture"
	TypeVoid      Type = "void"
	TypeReconcile Type = "reconcile"
)

// shape is what a command of an operation carries beside its account,
// key and request: the charge it acts on (a refund's, a capture's, a
// void's) or not (a charge's). The operations' commands are the types listed here; Encode,
// Decode and Inbox.Admits read this table and never an operation's name.
type shape struct{ chargeID bool }

var shapes = map[Type]shape{TypeCharge: {}, TypeRefund: {chargeID: true}, TypeCapture: {chargeID: true}, TypeVoid: {chargeID: true}}

// Command is one message. Type says which of the other fields are set.
type Command struct {
	Type Type
	// Account, IdempotencyKey and Request make a charge command: the same
	// operation and key space as POST /v1/charges. The key is as sent (""
	// when absent) and Request the charge request JSON as sent; the consumer
	// parses both with the HTTP request's rules.
	Account        string
	IdempotencyKey string
	Request        []byte
	// ChargeID, with the three above, makes a refund, a capture or a
	// void command: the same operation and key space as POST
	// /v1/charges/{id}/refunds, /captures or /void, the request being
	// that route's body.
	ChargeID string
	// PK makes a reconcile command: the record to resolve.
	PK string
}

// Charge returns a charge command.
func Charge(account, idempotencyKey string, request []byte) Command {
	return Command{Type: TypeCharge, Account: account, IdempotencyKey: idempotencyKey, Request: request}
}

// Refund returns a refund command of chargeID.
func Refund(account, chargeID, idempotencyKey string, request []byte) Command {
	return Command{Type: TypeRefund, Account: account, ChargeID: chargeID, IdempotencyKey: idempotencyKey, Request: request}
}

// Capture returns a capture command of chargeID.
func Capture(account, chargeID, idempotencyKey string, request []byte) Command {
	return Command{Type: TypeCapture, Account: account, ChargeID: chargeID, IdempotencyKey: idempotencyKey, Request: request}
}

// Void returns a void command of chargeID.
func Void(account, chargeID, idempotencyKey string, request []byte) Command {
	return Command{Type: TypeVoid, Account: account, ChargeID: chargeID, IdempotencyKey: idempotencyKey, Request: request}
}

// Reconcile returns a reconcile command for the record pk.
func Reconcile(pk string) Command { return Command{Type: TypeReconcile, PK: pk} }

// wire is the JSON shape. Pointers tell an absent member from an empty one.
type wire struct {
	Type           string         `json:"type"`
	Account        *string        `json:"account,omitzero"`
	ChargeID       *string        `json:"charge_id,omitzero"`
	IdempotencyKey *string        `json:"idempotency_key,omitzero"`
	Request        jsontext.Value `json:"request,omitzero"`
	PK             *string        `json:"pk,omitzero"`
}

// Encode returns the message body of c. A charge command's Request is
// written as given, so a producer's malformed request meets the consumer's
// refusal rather than being re-encoded into something it did not send; it
// must still be one JSON value, or Encode fails (nothing can be smuggled
// into the envelope). An absent key is left out. Errors: an unknown type,
// a PK that is not an idempotency record's, a Request that is not one JSON value.
func (c Command) Encode() (string, error) {
	w := wire{Type: string(c.Type)}
	sh, operation := shapes[c.Type]
	switch {
	case operation:
		if !jsontext.Value(c.Request).IsValid(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)) {
			return "", fmt.Errorf("encode %s command: the request is not one JSON value", c.Type)
		}
		w.Account = &c.Account
		if c.IdempotencyKey != "" {
			w.IdempotencyKey = &c.IdempotencyKey
		}
		if sh.chargeID {
			w.ChargeID = &c.ChargeID
		}
	case c.Type == TypeReconcile:
		if _, err := idem.ParsePK(c.PK); err != nil {
			return "", fmt.Errorf("encode reconcile command: pk: %w", err)
		}
		w.PK = &c.PK
	default:
		return "", fmt.Errorf("encode command: unknown type %q", c.Type)
	}
	b, err := json.Marshal(w)
	if err != nil {
		return "", fmt.Errorf("encode %s command: %w", c.Type, err)
	}
	if operation {
		// The request goes last and byte for byte: the marshaler would
		// compact it and rewrite what it cannot represent.
		b = append(append(append(b[:len(b)-1], `,"request":`...), c.Request...), '}')
	}
	return string(b), nil
}

// Decode parses a message body strictly (strictjson.Unmarshal: no
// duplicate, case-variant or unknown member, valid UTF-8, one object),
// then by its type: a charge command has an account and a request and may
// have an idempotency_key; a refund, a capture or a void command has those
// and a charge_id; a
// reconcile command has a pk that is an idempotency record's
// (idem.ParsePK); none has another's members. The charge id is taken as
// given: the refund service checks it. Every refusal is a *strictjson.Error; one whose
// Field starts with "request/" lies inside the charge request (see
// RequestError), and comes with the command's Type when the type was read
// before the request.
func Decode(body string) (Command, error) {
	var w wire
	if err := strictjson.Unmarshal([]byte(body), &w); err != nil {
		// The decoder reads in order: a charge or refund command's type,
		// which Encode writes before the request, comes with an error
		// inside the request (RequestError), so its refusal is told as
		// that operation's; nothing else read before an error is kept.
		if t := Type(w.Type); isOperation(t) && isRequestError(err) {
			return Command{Type: t}, err
		}
		return Command{}, err
	}
	refuse := func(field, message string) (Command, error) {
		return Command{}, &strictjson.Error{Field: field, Message: message}
	}
	t := Type(w.Type)
	sh, operation := shapes[t]
	switch {
	case operation:
		switch {
		case w.PK != nil:
			return refuse("pk", "not a member of a "+string(t)+" command")
		case !sh.chargeID && w.ChargeID != nil:
			return refuse("charge_id", "not a member of a "+string(t)+" command")
		case w.Account == nil:
			return refuse("account", "required")
		case sh.chargeID && w.ChargeID == nil:
			return refuse("charge_id", "required")
		case w.Request == nil:
			return refuse("request", "required")
		}
		c := Command{Type: t, Account: *w.Account, Request: w.Request}
		if w.IdempotencyKey != nil {
			c.IdempotencyKey = *w.IdempotencyKey
		}
		if w.ChargeID != nil {
			c.ChargeID = *w.ChargeID
		}
		return c, nil
	case t == TypeReconcile:
		switch {
		case w.Account != nil:
			return refuse("account", "not a member of a reconcile command")
		case w.ChargeID != nil:
			return refuse("charge_id", "not a member of a reconcile command")
		case w.IdempotencyKey != nil:
			return refuse("idempotency_key", "not a member of a reconcile command")
		case w.Request != nil:
			return refuse("request", "not a member of a reconcile command")
		case w.PK == nil || *w.PK == "":
			return refuse("pk", "required")
		}
		if _, err := idem.ParsePK(*w.PK); err != nil {
			return refuse("pk", err.Error())
		}
		return Reconcile(*w.PK), nil
	case t == "":
		return refuse("type", "required")
	}
	return refuse("type", `must be "charge", "refund", "capture", "void" or "reconcile"`)
}

// RequestError reports whether err, from Decode, lies inside a charge or
// refund command's request, and returns it relative to the request ("amount"
// rather than "request/amount"; "" for the request as a whole): the
// consumer answers it as an invalid request, as the HTTP route answers the
// same bytes (VALIDATION_FAILED). The request is embedded raw, so a syntax
// error the decoder met while inside its value ({not json}, a trailing
// comma, "amount":01) is the request's; one in the envelope around it is
// not.
func RequestError(err error) (*strictjson.Error, bool) {
	var e *strictjson.Error
	if !errors.As(err, &e) {
		return nil, false
	}
	if rest, in := strings.CutPrefix(e.Field, "request/"); in {
		return &strictjson.Error{Field: rest, Message: e.Message, Syntax: e.Syntax}, true
	}
	if e.Field == "request" && e.Syntax {
		return &strictjson.Error{Message: e.Message, Syntax: true}, true
	}
	return nil, false
}

// isRequestError reports whether err lies inside a command's request
// (RequestError).
func isRequestError(err error) bool {
	_, in := RequestError(err)
	return in
}

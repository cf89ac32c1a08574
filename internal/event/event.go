// Package event is the schema of the outcome events, version 1: what a
// producer or a merchant backend receives when a charge is captured,
// authorized, declined, held for an operator or released by one, when a
// refund, a capture or a void (an action, of its Kind) succeeds, is
// declined, is held or is released, or when a queue command is rejected. Publishers build events with the constructors
// here and encode them with Encode; nothing else spells the format, which
// docs/events.schema.json describes (a test holds them equal).
//
// Delivery is at least once and unordered: an event may arrive twice, and
// a charge's held event may arrive after its captured one, as an
// action's held event after its succeeded or declined one. Every event has
// an id that is the same on every delivery of it and differs between any
// two events, so a consumer deduplicates by ID, and orders by what it
// already has (a charge that is captured or declined stays so).
package event

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/idempotent-payments/idempay/internal/strictjson"
)

// Version is the schema's version, carried by every event. A change that
// a consumer could misread is a new version.
const Version = 1

// Type names what happened.
type Type string

// The event types.
const (
	// Captured: the acquirer captured the charge (its ledger row).
	Captured Type = "charge.captured"
	// Authorized: the acquirer authorized the charge without its
	// capture, as it was asked (its ledger row): the amount is held on
	// the card until it is captured, voided or lapses at
	// Charge.AuthorizationExpiresAt.
	Authorized Type = "charge.authorized"
	// Declined: the acquirer declined it (its ledger row).
	Declined Type = "charge.declined"
	// Expired: an authorization still open at its expiry lapsed: the
	// sweeper closed it and released what it left capturable, if
	// anything (its ledger row marked expired), and nothing more can be
	// captured. Its CreatedAt is the authorization's expiry.
	Expired Type = "charge.expired"
	// Held: the acquirer's answer disagreed with the request; the charge is
	// held for an operator (Reason says why). Its outcome follows as
	// captured (the operator accepted it) or released.
	Held Type = "charge.held"
	// Released: an operator voided a held charge at the acquirer and
	// released its key: nothing was charged, and the producer sends the
	// command again to charge.
	Released Type = "charge.released"
	// Rejected: the consumer refused a queue command (Reason is its code);
	// nothing was charged or written. Sent to that queue's producer only.
	Rejected Type = "charge.rejected"

	// RefundSucceeded: the acquirer refunded (the refund's row).
	RefundSucceeded Type = "refund.succeeded"
	// RefundDeclined: the acquirer declined the refund (its row); the
	// amount is refundable again.
	RefundDeclined Type = "refund.declined"
	// RefundHeld: the acquirer's answer to a refund disagreed with what was
	// sent; the refund is held for a person (Reason says why), its amount
	// reserved.
	RefundHeld Type = "refund.held"
	// RefundReleased: a held refund's record was released by an operator:
	// nothing was refunded.
	RefundReleased Type = "refund.released"
	// RefundRejected: a refund command was refused (Reason is its code);
	// nothing was refunded. Refused at the door, nothing was written and
	// the event has no Refund; refused by the bound (the amount exceeds
	// what remains, or the charge has the most refunds), the refusal is
	// the key's stored answer and the event names the refund. Sent to the
	// producer whose command was refused first.
	RefundRejected Type = "refund.rejected"

	// The capture's events, as the refund's: a capture's row succeeded
	// (the acquirer captured Action.Amount; Action.Final when it released
	// the rest) or declined, its record held or released, its command
	// rejected.
	CaptureSucceeded Type = "capture.succeeded"
	CaptureDeclined  Type = "capture.declined"
	CaptureHeld      Type = "capture.held"
	CaptureReleased  Type = "capture.released"
	CaptureRejected  Type = "capture.rejected"

	// The void's events, as the refund's: the acquirer released what the
	// authorization left capturable (Action.Amount), or declined to.
	VoidSucceeded Type = "void.succeeded"
	VoidDeclined  Type = "void.declined"
	VoidHeld      Type = "void.held"
	VoidReleased  Type = "void.released"
	VoidRejected  Type = "void.rejected"
)

// ProducerHTTP is the Producer of a charge requested over the HTTP API:
// a merchant backend subscribes for it.
const ProducerHTTP = "http"

// Subscribers are the outcome topic's subscribers, each with an outcome
// queue of its own: ProducerHTTP's (a merchant backend's), then each
// producer's.
func Subscribers(producers ...string) []string {
	return append([]string{ProducerHTTP}, producers...)
}

// The message attributes every published event carries, which
// subscription filter policies select on: each subscriber's outcome queue
// on AttrProducer (a producer's name, or ProducerHTTP).
const (
	AttrProducer = "producer"
	AttrType     = "type"
)

// FilterPolicy is the subscription filter policy of subscriber's outcome
// queue: the events whose AttrProducer is subscriber. One value per
// policy, far inside SNS's limit of 150 value combinations, whatever the
// accounts.
func FilterPolicy(subscriber string) string {
	return fmt.Sprintf(`{%q:[%q]}`, AttrProducer, subscriber)
}

// Event is one outcome.
type Event struct {
	// ID is stable: the same on every delivery, different for every event.
	// It names the charge or the refund and the type (a rejection: the
	// queue message).
	ID      string `json:"id"`
	Type    Type   `json:"type"`
	Version int    `json:"version"`
	// Producer is the producer whose queue the command came on, or
	// ProducerHTTP; Source is where the request came from: SourceHTTP or
	// SourceQueue(Producer).
	Producer string `json:"producer"`
	Source   string `json:"source"`
	// Account and IdempotencyKey are the caller's, as it sent them (empty
	// for a rejected command that did not name them; the key is empty too
	// for a charge whose ledger row predates keys on rows).
	Account        string `json:"account,omitempty"`
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// Charge is the charge, for every charge type but Rejected.
	Charge *Charge `json:"charge,omitempty"`
	// Refund, Capture and Void are the action an action's event is about
	// (Refunds, Captures, Voids), one of them, for every type but a
	// rejection refused at the door.
	Refund  *Action `json:"refund,omitempty"`
	Capture *Action `json:"capture,omitempty"`
	Void    *Action `json:"void,omitempty"`
	// Reason is why a charge or an action was held (the mismatch's
	// reason) or a command rejected (its reject code, or the bound's
	// refusal).
	Reason string `json:"reason,omitempty"`
	// CreatedAt is when it happened: the ledger row's, the hold's or the
	// settlement's time, or the rejection's.
	CreatedAt time.Time `json:"created_at"`
}

// Charge is the charge an event is about, with the acquirer's terms.
type Charge struct {
	ID              string `json:"id"`
	Status          string `json:"status"`
	Amount          int64  `json:"amount,omitempty"`
	Currency        string `json:"currency,omitempty"`
	AuthorizationID string `json:"authorization_id,omitempty"`
	DeclineCode     string `json:"decline_code,omitempty"`
	// AuthorizationExpiresAt is an authorization's only (Authorized).
	AuthorizationExpiresAt *time.Time `json:"authorization_expires_at,omitempty"`
}

// Action is the refund, the capture or the void an event is about, with
// the acquirer's terms.
type Action struct {
	ID          string `json:"id"`
	ChargeID    string `json:"charge_id"`
	Status      string `json:"status"`
	Amount      int64  `json:"amount,omitempty"`
	Currency    string `json:"currency,omitempty"`
	DeclineCode string `json:"decline_code,omitempty"`
	// Final is a capture's only: it released what the authorization
	// left capturable beyond its amount.
	Final bool `json:"final,omitempty"`
}

// Refund is the refund an event is about.
type Refund = Action

// The statuses of Charge.Status and Refund.Status beyond the acquirer's.
const (
	StatusHeld     = "held"
	StatusReleased = "released"
	StatusExpired  = "expired"  // an authorization that lapsed (Expired)
	StatusRejected = "rejected" // an action the bound refused
)

// SourceHTTP is the Source of a charge requested over the HTTP API.
const SourceHTTP = "http"

// SourceQueue is the Source of a charge command from producer's queue.
// Producer names are lower-case letters, digits and dashes, so the prefix
// keeps a producer named "http" apart from the HTTP API.
func SourceQueue(producer string) string { return sourceQueuePrefix + producer }

const sourceQueuePrefix = "queue:"

// id derives an event's id from its type and what it is about.
func id(t Type, about string) string {
	sum := sha256.Sum256([]byte("event/v1\n" + string(t) + "\n" + about))
	return "evt_" + hex.EncodeToString(sum[:16])
}

// producerOf is the producer a source names.
func producerOf(source string) string {
	if p, ok := strings.CutPrefix(source, sourceQueuePrefix); ok {
		return p
	}
	return ProducerHTTP
}

// Row is what the captured, authorized and declined events say of a
// ledger row.
type Row struct {
	// Charge is the row's charge: its id, its status (captured,
	// authorized or declined) and the acquirer's terms.
	Charge                          Charge
	Account, IdempotencyKey, Source string
	CreatedAt                       time.Time
}

// OfRow is the event of a ledger row: Captured, Authorized (with its
// expiry) or Declined, with the row's terms. A row without a source
// (written before rows kept it) is an HTTP charge's.
func OfRow(r Row) (Event, error) {
	t := Captured
	switch r.Charge.Status {
	case "captured":
	case "authorized":
		t = Authorized
	case "declined":
		t = Declined
	default:
		return Event{}, fmt.Errorf("ledger row %s: status %q is not captured, authorized or declined", r.Charge.ID, r.Charge.Status)
	}
	if (r.Charge.AuthorizationExpiresAt != nil) != (t == Authorized) {
		return Event{}, fmt.Errorf("ledger row %s: an expiry belongs to an authorization only (status %q)", r.Charge.ID, r.Charge.Status)
	}
	source := r.Source
	if source == "" {
		source = SourceHTTP
	}
	c := r.Charge
	return Event{
		ID: id(t, c.ID), Type: t, Version: Version, Producer: producerOf(source), Source: source,
		Account: r.Account, IdempotencyKey: r.IdempotencyKey, CreatedAt: r.CreatedAt.UTC(), Charge: &c,
	}, nil
}

// OfExpiry is the Expired event of an authorization's ledger row the
// sweeper marked expired: the row's charge, of status expired, with its
// expiry, at its expiry. Everything in it is the row's, so every region
// publishes the same body under its id.
func OfExpiry(r Row) (Event, error) {
	if r.Charge.Status != "authorized" || r.Charge.AuthorizationExpiresAt == nil {
		return Event{}, fmt.Errorf("ledger row %s: only an authorization with its expiry expires (status %q)", r.Charge.ID, r.Charge.Status)
	}
	source := r.Source
	if source == "" {
		source = SourceHTTP
	}
	c := r.Charge
	c.Status = StatusExpired
	return Event{
		ID: id(Expired, c.ID), Type: Expired, Version: Version, Producer: producerOf(source), Source: source,
		Account: r.Account, IdempotencyKey: r.IdempotencyKey, CreatedAt: c.AuthorizationExpiresAt.UTC(), Charge: &c,
	}, nil
}

// Kind is what an action's events say it is: a refund, a capture or a
// void, each with its five types and its member of Event.
type Kind struct {
	Succeeded, Declined, Held, Released, Rejected Type
	member                                        func(*Event) **Action
}

// The kinds of action.
var (
	Refunds = Kind{RefundSucceeded, RefundDeclined, RefundHeld, RefundReleased, RefundRejected,
		func(e *Event) **Action { return &e.Refund }}
	Captures = Kind{CaptureSucceeded, CaptureDeclined, CaptureHeld, CaptureReleased, CaptureRejected,
		func(e *Event) **Action { return &e.Capture }}
	Voids = Kind{VoidSucceeded, VoidDeclined, VoidHeld, VoidReleased, VoidRejected,
		func(e *Event) **Action { return &e.Void }}
)

// ActionOf is the action e is about, as an event of this kind says it
// (nil when e is of another kind).
func (k Kind) ActionOf(e *Event) *Action { return *k.member(e) }

// Types are the kind's five types.
func (k Kind) Types() []Type { return []Type{k.Succeeded, k.Declined, k.Held, k.Released, k.Rejected} }

// ActionRow is what the succeeded and declined events say of an action's
// row.
type ActionRow struct {
	Action                          Action
	Account, IdempotencyKey, Source string
	CreatedAt                       time.Time
}

// OfRow is the event of an action's row: Succeeded or Declined, with the
// row's terms. Its id derives from the action's id, as a charge event's
// from the charge id.
func (k Kind) OfRow(r ActionRow) (Event, error) {
	t := k.Succeeded
	switch r.Action.Status {
	case "succeeded":
	case "declined":
		t = k.Declined
	default:
		return Event{}, fmt.Errorf("row %s: status %q is neither succeeded nor declined", r.Action.ID, r.Action.Status)
	}
	return k.event(t, r.Action, r.Account, r.IdempotencyKey, r.Source, "", r.CreatedAt), nil
}

// ActionHold is what an action's held and released events say of its
// record.
type ActionHold struct {
	ActionID, ChargeID, Account, IdempotencyKey, Source, Reason string
	// At is the hold's time (Held) or the settlement's (Released).
	At time.Time
}

// OfHold is the Held event of an action's record just held.
func (k Kind) OfHold(h ActionHold) Event { return k.ofHold(k.Held, StatusHeld, h) }

// OfRelease is the Released event of a held action's record an operator
// released: nothing was done.
func (k Kind) OfRelease(h ActionHold) Event { return k.ofHold(k.Released, StatusReleased, h) }

func (k Kind) ofHold(t Type, status string, h ActionHold) Event {
	return k.event(t, Action{ID: h.ActionID, ChargeID: h.ChargeID, Status: status}, h.Account, h.IdempotencyKey, h.Source, h.Reason, h.At)
}

// OfRejection is the Rejected event of the queue message messageID from
// producer's queue, an action's command refused at the door with code:
// nothing was written, so its id derives from the message, and it names
// no action.
func (k Kind) OfRejection(messageID, producer, account, idempotencyKey, code string, at time.Time) Event {
	e := OfRejection(messageID, producer, account, idempotencyKey, code, at)
	e.ID, e.Type = id(k.Rejected, messageID), k.Rejected
	return e
}

// Refusal is what the Rejected event of an action the bound refused
// says: every field is the key's record's, so each telling of it is the
// same event.
type Refusal struct {
	ActionID, ChargeID, Account, IdempotencyKey, Source, Code string
	// At is when the action's key was claimed.
	At time.Time
}

// OfRefusal is the Rejected event of an action the bound refused; its id
// derives from the action's id.
func (k Kind) OfRefusal(r Refusal) Event {
	return k.event(k.Rejected, Action{ID: r.ActionID, ChargeID: r.ChargeID, Status: StatusRejected}, r.Account, r.IdempotencyKey, r.Source, r.Code, r.At)
}

// event is the event of type t about action a.
func (k Kind) event(t Type, a Action, account, idempotencyKey, source, reason string, at time.Time) Event {
	source = cmp.Or(source, SourceHTTP)
	e := Event{
		ID: id(t, a.ID), Type: t, Version: Version, Producer: producerOf(source), Source: source,
		Account: account, IdempotencyKey: idempotencyKey, Reason: reason, CreatedAt: at.UTC(),
	}
	*k.member(&e) = &a
	return e
}

// Hold is what the held and released events say of a record: whose it is
// and why it was held.
type Hold struct {
	ChargeID, Account, IdempotencyKey, Source, Reason string
	// At is the hold's time (Held) or the settlement's (Released).
	At time.Time
}

// OfHold is the Held event of a record that was just held.
func OfHold(h Hold) Event { return ofHold(Held, StatusHeld, h) }

// OfRelease is the Released event of a held record an operator released.
func OfRelease(h Hold) Event { return ofHold(Released, StatusReleased, h) }

func ofHold(t Type, status string, h Hold) Event {
	source := h.Source
	if source == "" {
		source = SourceHTTP
	}
	return Event{
		ID: id(t, h.ChargeID), Type: t, Version: Version, Producer: producerOf(source), Source: source,
		Account: h.Account, IdempotencyKey: h.IdempotencyKey, Reason: h.Reason, CreatedAt: h.At.UTC(),
		Charge: &Charge{ID: h.ChargeID, Status: status},
	}
}

// OfRejection is the Rejected event of the queue message messageID from
// producer's queue, refused with code.
func OfRejection(messageID, producer, account, idempotencyKey, code string, at time.Time) Event {
	return Event{
		ID: id(Rejected, messageID), Type: Rejected, Version: Version, Producer: producer, Source: SourceQueue(producer),
		Account: account, IdempotencyKey: idempotencyKey, Reason: code, CreatedAt: at.UTC(),
	}
}

// Decode reads an event as Encode writes it, strictly (strictjson): an
// unknown, duplicate or case-variant member, invalid UTF-8 or anything after
// the object is refused, so a reader never guesses what an event says.
func Decode(b []byte) (Event, error) {
	var e Event
	if err := strictjson.Unmarshal(b, &e); err != nil {
		return Event{}, fmt.Errorf("decode event: %w", err)
	}
	return e, nil
}

// Encode is the event's JSON, as published.
func (e Event) Encode() ([]byte, error) {
	b, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("encode event %s: %w", e.ID, err)
	}
	return b, nil
}

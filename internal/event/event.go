// Package event is the schema of the outcome events, version 1: what a
// producer or a merchant backend receives when a charge is captured,
// declined, held for an operator or released by one, when a refund
// succeeds, is declined, is held or is released, or when a queue command
// is rejected. Publishers build events with the constructors
// here and encode them with Encode; nothing else spells the format, which
// docs/events.schema.json describes (a test holds them equal).
//
// Delivery is at least once and unordered: an event may arrive twice, and
// a charge's held event may arrive after its captured one, as a refund's
// held event after its succeeded or declined one. Every event has
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
	// Refund is the refund, for every refund type but a RefundRejected
	// refused at the door.
	Refund *Refund `json:"refund,omitempty"`
	// Reason is why a charge or a refund was held (the mismatch's reason)
	// or a command rejected (its reject code, or the bound's refusal).
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

// Refund is the refund an event is about, with the acquirer's terms.
type Refund struct {
	ID          string `json:"id"`
	ChargeID    string `json:"charge_id"`
	Status      string `json:"status"`
	Amount      int64  `json:"amount,omitempty"`
	Currency    string `json:"currency,omitempty"`
	DeclineCode string `json:"decline_code,omitempty"`
}

// The statuses of Charge.Status and Refund.Status beyond the acquirer's.
const (
	StatusHeld     = "held"
	StatusReleased = "released"
	StatusRejected = "rejected" // a refund the bound refused
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

// RefundRow is what the succeeded and declined events say of a refund's
// row.
type RefundRow struct {
	Refund                          Refund
	Account, IdempotencyKey, Source string
	CreatedAt                       time.Time
}

// OfRefundRow is the event of a refund's row: RefundSucceeded or
// RefundDeclined, with the row's terms. Its id derives from the refund
// id, as a charge event's from the charge id.
func OfRefundRow(r RefundRow) (Event, error) {
	t := RefundSucceeded
	switch r.Refund.Status {
	case "succeeded":
	case "declined":
		t = RefundDeclined
	default:
		return Event{}, fmt.Errorf("refund row %s: status %q is neither succeeded nor declined", r.Refund.ID, r.Refund.Status)
	}
	source := cmp.Or(r.Source, SourceHTTP)
	ref := r.Refund
	return Event{
		ID: id(t, ref.ID), Type: t, Version: Version, Producer: producerOf(source), Source: source,
		Account: r.Account, IdempotencyKey: r.IdempotencyKey, CreatedAt: r.CreatedAt.UTC(), Refund: &ref,
	}, nil
}

// RefundHold is what the refund's held and released events say of its
// record.
type RefundHold struct {
	RefundID, ChargeID, Account, IdempotencyKey, Source, Reason string
	// At is the hold's time (RefundHeld) or the settlement's
	// (RefundReleased).
	At time.Time
}

// OfRefundHold is the RefundHeld event of a refund's record just held.
func OfRefundHold(h RefundHold) Event { return ofRefundHold(RefundHeld, StatusHeld, h) }

// OfRefundRelease is the RefundReleased event of a held refund's record
// an operator released.
func OfRefundRelease(h RefundHold) Event { return ofRefundHold(RefundReleased, StatusReleased, h) }

func ofRefundHold(t Type, status string, h RefundHold) Event {
	source := cmp.Or(h.Source, SourceHTTP)
	return Event{
		ID: id(t, h.RefundID), Type: t, Version: Version, Producer: producerOf(source), Source: source,
		Account: h.Account, IdempotencyKey: h.IdempotencyKey, Reason: h.Reason, CreatedAt: h.At.UTC(),
		Refund: &Refund{ID: h.RefundID, ChargeID: h.ChargeID, Status: status},
	}
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

// OfRefundRejection is the RefundRejected event of the queue message
// messageID from producer's queue, a refund command refused at the door
// with code: nothing was written, so its id derives from the message.
func OfRefundRejection(messageID, producer, account, idempotencyKey, code string, at time.Time) Event {
	e := OfRejection(messageID, producer, account, idempotencyKey, code, at)
	e.ID, e.Type = id(RefundRejected, messageID), RefundRejected
	return e
}

// RefundRefusal is what the RefundRejected event of a refund the bound
// refused says: every field is the key's record's, so each telling of it
// is the same event.
type RefundRefusal struct {
	RefundID, ChargeID, Account, IdempotencyKey, Source, Code string
	// At is when the refund's key was claimed.
	At time.Time
}

// OfRefundRefusal is the RefundRejected event of a refund the bound
// refused; its id derives from the refund id.
func OfRefundRefusal(r RefundRefusal) Event {
	source := cmp.Or(r.Source, SourceHTTP)
	return Event{
		ID: id(RefundRejected, r.RefundID), Type: RefundRejected, Version: Version, Producer: producerOf(source), Source: source,
		Account: r.Account, IdempotencyKey: r.IdempotencyKey, Reason: r.Code, CreatedAt: r.At.UTC(),
		Refund: &Refund{ID: r.RefundID, ChargeID: r.ChargeID, Status: StatusRejected},
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

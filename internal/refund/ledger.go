package refund

import (
	"context"
	"errors"
	"time"

	"github.com/idempotent-payments/idempay/internal/idem"
)

// Refund is the row of one refund the acquirer decided, succeeded or
// declined: written before the completion that answers its intent and
// never changed after. Its id derives from the intent's downstream key,
// so every attempt of one intent names the same row.
type Refund struct {
	ID       string
	Account  string
	ChargeID string
	// IdempotencyKey and Source are who asked: the client's key and the
	// entry point its record was claimed with.
	IdempotencyKey string
	Source         string
	// Status is acquirer.RefundSucceeded or acquirer.RefundDeclined, and
	// DeclineCode the acquirer's reason for a decline.
	Status      string
	DeclineCode string
	// Amount and Currency are the acquirer's terms, checked equal to what
	// was sent (acquirer.CheckRefundTerms).
	Amount   int64
	Currency string
	// Reason is the request's, "" when it gave none.
	Reason string
	// AcquirerRefundID is the acquirer's id of the refund, and AcquirerID
	// the acquirer's (the record's idem.Protocol.Downstream).
	AcquirerRefundID string
	AcquirerID       string
	CreatedAt        time.Time
	// Region is the region whose service wrote the row, in the
	// multi-region mode (charge.Config.Region); empty in one region. As a
	// ledger row's (charge.Charge.Region), it names the region that
	// publishes the row's event, and the row is listed unpublished
	// (charge.Books) until one has.
	Region string
}

// Ledger keeps the refund rows. Its implementations sit beside the
// stores (dynamo on DynamoDB, refundtest in memory). An operator's
// void-confirmed puts the voided marker at a row's key before it
// releases the refund (Void), as charge.Ledger's does for a charge: after
// it no row of that refund is ever written.
type Ledger interface {
	// Write writes r's row unless a row for r.ID exists, and returns the
	// row as stored: r, or the existing row, which an earlier attempt of
	// the same intent wrote from the same refund and which wins. Fenced by
	// no lease, it may land at any time after the acquirer answered; one
	// that meets the voided marker writes nothing (ErrVoided).
	Write(ctx context.Context, r Refund) (Refund, error)
	// Get returns refund id, ErrNoRefund when there is none (also, with
	// ErrVoided, when its key holds the voided marker),
	// ErrUnreadableRefund when its row does not decode, or a store error.
	Get(ctx context.Context, id string) (Refund, error)
	// Void writes refund id's voided marker, over nothing or a voided
	// marker (a void again), unless the refund has its row: ErrRowExists,
	// nothing written. It may fail with idem.ErrWriteConflict, without
	// effect.
	Void(ctx context.Context, id string) error
}

// Errors of a Ledger.
var (
	ErrNoRefund         = errors.New("no such refund")
	ErrUnreadableRefund = errors.New("unreadable refund row")
	// ErrVoided: an operator's void-confirmed put the voided marker at
	// the refund's key: its row is never written, and it reads as no
	// refund. A writer that meets it leaves the record as it is: the void
	// releases it.
	ErrVoided = errors.New("the refund was confirmed void by an operator")
)

// ID is the id of the refund sent under downstreamKey (a record's): the
// same for every attempt of one intent.
func ID(downstreamKey string) string { return IDPrefix + downstreamKey }

// IDPrefix starts every refund id, as "ch_" every charge id.
const IDPrefix = "re_"

// IDPattern is the shape of a refund id, as api/openapi.yaml states it.
const IDPattern = "^re_[0-9a-f]{40}$"

// ValidID reports whether id has IDPattern's shape.
func ValidID(id string) bool { return idem.IsDerivedID(IDPrefix, id) }

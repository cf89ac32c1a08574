package refund

import (
	"errors"

	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/op"
)

// Refund is the row of one refund the acquirer decided, succeeded or
// declined: written before the completion that answers its intent and
// never changed after. Its id derives from the intent's downstream key,
// so every attempt of one intent names the same row.
type Refund struct {
	op.Origin
	ChargeID string
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
	// AcquirerRefundID is the acquirer's id of the refund.
	AcquirerRefundID string
}

// Ledger keeps the refund rows. Its implementations sit beside the
// stores (dynamo on DynamoDB, refundtest in memory). An operator's
// void-confirmed puts the voided marker at a row's key before it
// releases the refund (Void), as charge.Ledger's does for a charge: after
// it no row of that refund is ever written.
type Ledger interface {
	// The rows (op.Rows): Get reads a voided marker as ErrNoRefund and
	// ErrVoided, an unreadable row as ErrUnreadableRefund; a late Write
	// that meets the voided marker fails with ErrVoided; Void is refused
	// by a row with ErrRowExists.
	op.Rows[Refund]
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

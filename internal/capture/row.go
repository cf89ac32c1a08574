package capture

import (
	"errors"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/op"
)

// Row is the row of one capture or one void the acquirer decided,
// succeeded or declined: written before the completion that answers its
// intent and never changed after. Its id derives from the intent's
// downstream key (CaptureID, VoidID), so every attempt of one intent names
// the same row.
type Row struct {
	op.Origin
	ChargeID string
	// Kind is what the intent did: Partial or Final for a capture, Void.
	Kind Kind
	// Status is succeeded or declined (acquirer.CaptureSucceeded, …), and
	// DeclineCode the acquirer's reason for a decline.
	Status      string
	DeclineCode string
	// Amount is what a capture captured, or what a void released, and
	// Currency the authorization's: the acquirer's terms, checked equal to
	// what was sent (acquirer.CheckCaptureTerms, CheckVoidTerms).
	Amount   int64
	Currency string
	// Reason is a void's, "" when it gave none.
	Reason string
	// AcquirerActionID is the acquirer's id of the capture or the void.
	AcquirerActionID string
}

// Succeeded reports whether the acquirer made the capture or the void.
func (r Row) Succeeded() bool {
	if r.Kind == Void {
		return r.Status == acquirer.VoidSucceeded
	}
	return r.Status == acquirer.CaptureSucceeded
}

// Final reports whether the row's capture released the rest of the
// authorization (always false for a void).
func (r Row) Final() bool { return r.Kind == Final }

// Ledger keeps the rows of one of the two operations (captures, or voids).
// Its implementations sit beside the stores (dynamo on DynamoDB, capturetest
// in memory). An operator's void-confirmed puts the voided marker at a
// row's key before it releases the intent (Void): after it no row of that
// intent is ever written.
type Ledger interface {
	// The rows (op.Rows): Get reads a voided marker as ErrNoRow and
	// ErrVoided, an unreadable row as ErrUnreadableRow; a late Write that
	// meets the voided marker fails with ErrVoided; Void is refused by a
	// row with ErrRowExists.
	op.Rows[Row]
}

// Errors of a Ledger.
var (
	ErrNoRow         = errors.New("no such capture or void")
	ErrUnreadableRow = errors.New("unreadable capture or void row")
	// ErrVoided: an operator's void-confirmed put the voided marker at the
	// intent's key: its row is never written, and it reads as no row.
	ErrVoided = errors.New("the intent was confirmed void by an operator")
	// ErrRowExists: the held intent already has its row. A row is never
	// deleted or changed, so a void-confirmed is refused.
	ErrRowExists = errors.New("the held intent already has its row")
)

// The prefixes of the two operations' row ids, as "ch_" starts a
// charge's and "re_" a refund's.
const (
	CaptureIDPrefix = "cp_"
	VoidIDPrefix    = "vd_"
)

// The shapes of the two ids, as api/openapi.yaml states them.
const (
	CaptureIDPattern = "^cp_[0-9a-f]{40}$"
	VoidIDPattern    = "^vd_[0-9a-f]{40}$"
)

// CaptureID is the id of the capture sent under downstreamKey (a
// record's), and VoidID of the void.
func CaptureID(downstreamKey string) string { return CaptureIDPrefix + downstreamKey }

// VoidID is the id of the void sent under downstreamKey.
func VoidID(downstreamKey string) string { return VoidIDPrefix + downstreamKey }

// ValidCaptureID reports whether id has CaptureIDPattern's shape.
func ValidCaptureID(id string) bool { return idem.IsDerivedID(CaptureIDPrefix, id) }

// ValidVoidID reports whether id has VoidIDPattern's shape.
func ValidVoidID(id string) bool { return idem.IsDerivedID(VoidIDPrefix, id) }

package refund

import (
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/op"
)

// Codes are how a refund's outcomes read: its own pending code.
var Codes = op.Codes{Pending: op.CodeRefundOutcomePending}

// Answer is what a refund's record stores as its answer: a refund the
// acquirer decided, or the bound's refusal. The HTTP adapter renders it
// (Renderer).
type Answer struct {
	// Refund is the refund's row, when the acquirer decided.
	Refund *Refund
	// Exceeded: the amount exceeded what remained refundable; Refundable
	// is what remained at that moment.
	Exceeded   bool
	Refundable int64
	// LimitReached: the charge already had MaxEntries refunds in flight.
	LimitReached bool
}

// Renderer renders a stored answer: what the first request receives and
// every replay returns, byte for byte. The service stores it and never
// reads it.
type Renderer func(Answer) idem.Response

// Input is one refund request as an entry point received it.
type Input = op.ActionInput

// Result is what one call came to: the refund's row (Row) is what a
// lookup found.
type Result = op.ActionResult[Refund]

// endedEarly is the result of a call that ended before its answer.
func endedEarly(e op.Early) Result { return op.Ended[Refund](e) }

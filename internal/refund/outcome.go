package refund

import (
	"time"

	"github.com/idempotent-payments/idempay/internal/charge"
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
type Input struct {
	// Account is the authenticated caller.
	Account string
	// Keys are the Idempotency-Key values as received.
	Keys []string
	// ChargeID is the charge the route names.
	ChargeID string
	// Body is the refund request JSON as received.
	Body []byte
	// Source is the entry point, as the events name it.
	Source string
}

// Result is what one call came to; Outcome says which fields are set.
type Result struct {
	Outcome op.Outcome
	// Response is the stored answer, and RefundID the refund it answers
	// with, derived from the record's downstream key (Executed, Replayed):
	// an answer of the bound has no refund row under it.
	Response idem.Response
	RefundID string
	// Refusal is the code of the bound's refusal when the stored answer is
	// one (Answer.Refusal; RefusalOf for a replay), "" for a refund the
	// acquirer decided.
	Refusal op.Code
	// Errors lists everything wrong with the request (RequestInvalid).
	Errors []charge.FieldError
	// Reason says why the key or the account was refused.
	Reason string
	// RetryAfter is when to retry with the same key; WaitOut as for a
	// charge (charge.Result.WaitOut).
	RetryAfter time.Duration
	WaitOut    time.Duration
	// Refund is the refund Get or ByKey found (Found).
	Refund Refund
	// Record is the record's reference, once the request got as far as a
	// valid scope; Key the key as parsed.
	Record string
	Key    string
	// Source and ClaimedAt are the record's (Executed, Replayed): where the
	// key's first request came from and when it claimed the key, so an
	// entry point that tells of a stored answer tells the same every time.
	Source    string
	ClaimedAt time.Time
	// Attempt is the lease's attempt when this request owned the key.
	Attempt int
}

// endedEarly is the result of a call that ended before its answer.
func endedEarly(e op.Early) Result {
	return Result{Outcome: e.Outcome, Reason: e.Reason, RetryAfter: e.RetryAfter, WaitOut: e.WaitOut}
}

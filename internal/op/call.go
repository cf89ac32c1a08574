package op

import (
	"time"

	"github.com/idempotent-payments/idempay/internal/idem"
)

// FieldError is one problem with one field of a request, as a door lists
// them (RequestInvalid).
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// ActionInput is one call of an action on a charge (a refund, a
// capture, a void) as an entry point received it.
type ActionInput struct {
	// Account is the authenticated caller.
	Account string
	// Keys are the Idempotency-Key values as received.
	Keys []string
	// ChargeID is the charge the route names.
	ChargeID string
	// Body is the request JSON as received.
	Body []byte
	// Source is the entry point, as the events name it.
	Source string
}

// ActionResult is what one call of an action on a charge came to (a
// refund, a capture, a void), R being the action's row; Outcome says
// which fields are set. Each such operation's Result is one.
type ActionResult[R any] struct {
	Outcome Outcome
	// Response is the stored answer, and ID the row it answers with,
	// derived from the record's downstream key (Executed, Replayed): an
	// answer of the bound has no row under it.
	Response idem.Response
	ID       string
	// Refusal is the code of a stored answer that refuses (the bound's, or
	// an acquirer's decline where the operation reads it as one), "" for
	// an answer the acquirer decided and the operation does not refuse.
	Refusal Code
	// Errors lists everything wrong with the request (RequestInvalid).
	Errors []FieldError
	// Reason says why the key or the account was refused.
	Reason string
	// RetryAfter is when to retry with the same key; WaitOut how long
	// until the attempt holding the key has finished or its record can be
	// taken over (InFlight; a queue consumer hides the message this long).
	RetryAfter time.Duration
	WaitOut    time.Duration
	// Row is the row a lookup by id or by key found (Found).
	Row R
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

// Ended is the result of a call that ended early (e), before its answer.
func Ended[R any](e Early) ActionResult[R] {
	return ActionResult[R]{Outcome: e.Outcome, Reason: e.Reason, RetryAfter: e.RetryAfter, WaitOut: e.WaitOut}
}

package idem

import (
	"errors"
	"fmt"
	"time"
)

// Errors callers branch on, with errors.Is.
var (
	// ErrKeyMissing: the client sent no idempotency key. Nothing was written.
	ErrKeyMissing = errors.New("idempotency key missing")
	// ErrKeyInvalid: the key is not 8–128 visible ASCII characters (bare or
	// as a quoted sf-string). Nothing was written.
	ErrKeyInvalid = errors.New("idempotency key invalid")
	// ErrAccountInvalid: the account is empty, too long or not printable
	// UTF-8. Nothing was written.
	ErrAccountInvalid = errors.New("account invalid")
	// ErrInFlight: another attempt holds a live lease on the key. The
	// returned error is an *InFlightError carrying the retry delay.
	ErrInFlight = errors.New("idempotency key in flight")
	// ErrKeyReused: the key is already bound to a different request
	// (fingerprints differ). The stored response is never returned for it.
	ErrKeyReused = errors.New("idempotency key reused with a different request")
	// ErrLeaseLost: a fenced write found another lease token (the lease was
	// taken over) or no in-flight record. Nothing was changed; re-read with
	// [Guard.Lookup] to find out what happened.
	ErrLeaseLost = errors.New("lease lost")
	// ErrReleaseRefused: release after a take-over is never allowed (an
	// earlier attempt's request may still be in transit). Nothing was written;
	// the record stays in flight.
	ErrReleaseRefused = errors.New("release refused after take-over")
	// ErrNotFound: no live record under the key.
	ErrNotFound = errors.New("not found")
	// ErrHeld: the record is held for an operator (Record.Held). Nothing
	// was written and nothing may be sent: only an operator's step settles
	// it. A client retrying with the key keeps being told the outcome is
	// pending.
	ErrHeld = errors.New("record held for an operator")
	// ErrNotHeld: an operator's step met a record that is not held.
	// Nothing was written.
	ErrNotHeld = errors.New("record not held")
	// ErrOtherDownstream: the record was claimed for another downstream
	// system than this guard's (Protocol.Downstream), which cannot say
	// what that one received. Nothing was written.
	ErrOtherDownstream = errors.New("record claimed for another downstream system")
	// ErrTooEarly: an operator's release of a held record came before its
	// last lease ended more than the wait-out (Protocol.WaitOut) ago; a
	// request of an earlier attempt may still be in transit. Nothing was
	// written.
	ErrTooEarly = errors.New("too early: a request may still be in transit")
	// ErrWriteConflict: the store refused a write because another region
	// was writing the same item at the same moment (on a DynamoDB global
	// table with strong consistency, ReplicatedWriteConflictException). The
	// write had no effect, and trying it again is safe: every write is
	// conditional, so the retry meets whatever the other region wrote. The
	// Guard tries a claim twice and retries every write a lease makes
	// (RetryConflicts) before it returns this; a take-over it tries once,
	// and one that conflicts has not taken over.
	ErrWriteConflict = errors.New("write conflicted with another region's")
	// ErrOtherDecision: a void found the release marker of a later
	// take-over of the record's intent (Store.MarkRelease): its own lease
	// is lost. Nothing was written.
	ErrOtherDecision = errors.New("another decision's release is recorded for the record")
	// ErrNotExpired: a purge found the record changed since it was listed
	// (claimed afresh, held, settled, or deleted already). Nothing was
	// deleted.
	ErrNotExpired = errors.New("record is not the expired one listed")
)

// InFlightError is returned by [Guard.Begin] when another attempt holds a
// live lease. errors.Is(err, ErrInFlight) is true.
type InFlightError struct {
	// RetryAfter is how long the client should wait before retrying with the
	// same key: at least one second.
	RetryAfter time.Duration
	// LeaseExpiresAt is when the owner's lease ends. When another worker
	// took the lease over an instant ago, its new end is not known: it is
	// then the end of a lease this caller would have taken, the same bound
	// for workers of one function.
	LeaseExpiresAt time.Time
	// WaitOut is how long from now until the owner has finished or its
	// record can be taken over: the lease's time left plus the record's
	// wait-out (Protocol.WaitOut).
	WaitOut time.Duration
}

func (e *InFlightError) Error() string {
	return fmt.Sprintf("%v: retry after %s", ErrInFlight, e.RetryAfter)
}

// Is makes errors.Is(err, ErrInFlight) true.
func (e *InFlightError) Is(target error) bool { return target == ErrInFlight }

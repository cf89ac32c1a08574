package op

import "github.com/idempotent-payments/idempay/internal/obs"

// Outcome is what one call of an operation came to, typed once for every
// operation. An entry point maps each outcome in a table of its own (an
// HTTP problem, a queue verdict, an operator's answer); the operations
// know nothing of either. An operation's own codes say how its outcomes
// read (Codes).
type Outcome int

// The outcomes. Nothing is written for AccountInvalid, KeyMissing,
// KeyInvalid and RequestInvalid, nor for the refusals of a precondition
// (NotFound of what the call acts on, NotRefundable, ChargePending,
// ChargeHeld, NotCapturable, AuthorizationExpired, CaptureInFlight,
// VoidInFlight, CaptureHeld, VoidHeld); InFlight, Released, Pending,
// Unavailable, Mismatch, Held and the four of another capture or void come
// with a RetryAfter.
const (
	// Executed: this call took the key and its answer is stored: the
	// acquirer's decision, or the operation's own refusal (a refund's
	// bound).
	Executed Outcome = iota + 1
	// Replayed: the key completed earlier for the same request; the
	// answer is the stored one.
	Replayed
	// AccountInvalid: the caller names no usable account (Reason says why).
	AccountInvalid
	// KeyMissing: no idempotency key.
	KeyMissing
	// KeyInvalid: not one valid key (Reason says why).
	KeyInvalid
	// RequestInvalid: the body is not a valid request (Errors).
	RequestInvalid
	// InFlight: another attempt holds the key; retry with it later.
	InFlight
	// KeyReused: the key belongs to a different request; never retried.
	KeyReused
	// Released: the acquirer was unreachable and nothing was sent (and
	// nothing stays reserved); the key is free again.
	Released
	// Pending: the acquirer's outcome is unknown; the key stays in flight
	// until a retry or the reconciler resolves it.
	Pending
	// Unavailable: the store failed before anything was sent.
	Unavailable
	// Found: a lookup found the caller's row.
	Found
	// NotFound: a lookup found no such row for the caller, or the call
	// names something to act on (a refund's charge) that the caller does
	// not have.
	NotFound
	// Mismatch: the acquirer answered, but its answer disagrees with the
	// request or with itself: nothing is stored as an outcome, no row is
	// written, and the record is held for an operator (Held from then on).
	// An entry point answers as for Pending, never with a final code.
	Mismatch
	// Held: the key's record is held for an operator; only the
	// operator's settlement settles it.
	Held
	// NotRefundable: the charge a refund names was declined, or
	// authorized by another acquirer than the deployment's.
	NotRefundable
	// ChargePending: the outcome of the charge the call acts on is not
	// known yet (its record is in flight); retry later.
	ChargePending
	// ChargeHeld: the record of the charge the call acts on is held for
	// an operator, whose decision comes first; retry once it is settled.
	ChargeHeld
	// NotCapturable: the charge a capture or a void names holds nothing
	// it can act on: captured at creation, declined, authorized by
	// another acquirer, or its authorization closed (voided, finally
	// captured) or wholly captured.
	NotCapturable
	// AuthorizationExpired: the authorization a capture or a void names
	// has passed its expiry.
	AuthorizationExpired
	// CaptureInFlight: a capture of the same charge is in flight that
	// this one waits for (any capture, for a void or a final capture; a
	// final capture, for every capture and void), or the charge has its
	// most actions in flight at once; nothing was reserved or sent, the
	// key is free again, and a retry decides again.
	CaptureInFlight
	// VoidInFlight: a void of the same charge is in flight, which every
	// capture and void waits for; as CaptureInFlight.
	VoidInFlight
	// CaptureHeld and VoidHeld: the capture or void this one waits for,
	// as CaptureInFlight and VoidInFlight, is held for an operator: only
	// the operator's settlement lets it end; retry once it is settled.
	CaptureHeld
	VoidHeld

	numOutcomes // one past the last: every outcome below has a name
)

var outcomeNames = [numOutcomes]obs.Outcome{
	Executed: obs.OutcomeExecuted, Replayed: obs.OutcomeReplayed, AccountInvalid: obs.OutcomeAccountInvalid,
	KeyMissing: obs.OutcomeKeyMissing, KeyInvalid: obs.OutcomeKeyInvalid, RequestInvalid: obs.OutcomeRequestInvalid,
	InFlight: obs.OutcomeInFlight, KeyReused: obs.OutcomeKeyReused, Released: obs.OutcomeReleased, Pending: obs.OutcomePending,
	Unavailable: obs.OutcomeUnavailable, Found: obs.OutcomeFound, NotFound: obs.OutcomeNotFound,
	Mismatch: obs.OutcomeAcquirerMismatch, Held: obs.OutcomeHeld, NotRefundable: obs.OutcomeNotRefundable,
	ChargePending: obs.OutcomeChargePending, ChargeHeld: obs.OutcomeChargeHeld,
	NotCapturable: obs.OutcomeNotCapturable, AuthorizationExpired: obs.OutcomeAuthorizationExpired,
	CaptureInFlight: obs.OutcomeCaptureInFlight, VoidInFlight: obs.OutcomeVoidInFlight,
	CaptureHeld: obs.OutcomeCaptureHeld, VoidHeld: obs.OutcomeVoidHeld,
}

// Name is the outcome's stable name in the observability vocabulary: the
// logs' outcome and the metrics' Outcome dimension.
func (o Outcome) Name() obs.Outcome {
	if o > 0 && o < numOutcomes {
		return outcomeNames[o]
	}
	return "unknown"
}

// String is Name, as text.
func (o Outcome) String() string { return string(o.Name()) }

// Refused reports whether the outcome is a final refusal of the input,
// which a retry with the same key and input meets again.
func (o Outcome) Refused() bool {
	switch o {
	case AccountInvalid, KeyMissing, KeyInvalid, RequestInvalid, KeyReused:
		return true
	}
	return false
}

// Outcomes are every outcome, in order.
func Outcomes() []Outcome {
	out := make([]Outcome, 0, numOutcomes-1)
	for o := Executed; o < numOutcomes; o++ {
		out = append(out, o)
	}
	return out
}

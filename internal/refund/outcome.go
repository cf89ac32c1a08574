package refund

import (
	"time"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/obs"
)

// Outcome is what one refund call came to. An entry point maps every
// outcome in a table of its own.
type Outcome int

// The outcomes. Nothing is stored for AccountInvalid, KeyMissing,
// KeyInvalid, RequestInvalid, NotFound, NotRefundable, ChargePending and
// ChargeHeld.
const (
	// Executed: this call took the key and its answer is stored: the
	// acquirer's refund (succeeded or declined), or the bound's refusal
	// (the amount exceeds what remains, or the charge has MaxEntries
	// refunds).
	Executed Outcome = iota + 1
	// Replayed: the key completed earlier for the same request.
	Replayed
	AccountInvalid
	KeyMissing
	KeyInvalid
	RequestInvalid
	// InFlight: another attempt holds the key; retry with it later.
	InFlight
	// KeyReused: the key belongs to a different request.
	KeyReused
	// Released: nothing was sent and nothing stays reserved; the key is
	// free again.
	Released
	// Pending: the acquirer's outcome is unknown; the key stays in flight
	// and the amount reserved until a retry or the reconciler resolves it.
	Pending
	// Unavailable: the store failed before anything was sent.
	Unavailable
	// Found: Get or ByKey found the caller's refund (Refund).
	Found
	// NotFound: no such charge (a refund), or no such refund (a lookup),
	// for the caller.
	NotFound
	// Mismatch: the acquirer's answer disagrees with the request or with
	// itself; the record is held for an operator with the reservation kept.
	Mismatch
	// Held: the key's record is held for an operator.
	Held
	// NotRefundable: the charge was declined, or authorized by another
	// acquirer than the deployment's.
	NotRefundable
	// ChargePending: the charge's own outcome is not known yet (its record
	// is in flight); retry later.
	ChargePending
	// ChargeHeld: the charge's record is held for an operator, whose
	// decision comes first; retry once it is settled.
	ChargeHeld

	numOutcomes
)

var outcomeNames = [numOutcomes]obs.Outcome{
	Executed: obs.OutcomeExecuted, Replayed: obs.OutcomeReplayed, AccountInvalid: obs.OutcomeAccountInvalid,
	KeyMissing: obs.OutcomeKeyMissing, KeyInvalid: obs.OutcomeKeyInvalid, RequestInvalid: obs.OutcomeRequestInvalid,
	InFlight: obs.OutcomeInFlight, KeyReused: obs.OutcomeKeyReused, Released: obs.OutcomeReleased, Pending: obs.OutcomePending,
	Unavailable: obs.OutcomeUnavailable, Found: obs.OutcomeFound, NotFound: obs.OutcomeNotFound,
	Mismatch: obs.OutcomeAcquirerMismatch, Held: obs.OutcomeHeld, NotRefundable: obs.OutcomeNotRefundable,
	ChargePending: obs.OutcomeChargePending, ChargeHeld: obs.OutcomeChargeHeld,
}

// Name is the outcome's name in the observability vocabulary.
func (o Outcome) Name() obs.Outcome {
	if o > 0 && o < numOutcomes {
		return outcomeNames[o]
	}
	return "unknown"
}

// String is Name, as text.
func (o Outcome) String() string { return string(o.Name()) }

// The codes only refunds answer with.
const (
	CodeOutcomePending = "REFUND_OUTCOME_PENDING"
	CodeNotRefundable  = "CHARGE_NOT_REFUNDABLE"
)

// Code is the stable code of an outcome that is not an answer of its own:
// a charge's outcome's code, but the refund's own where its meaning
// differs. Empty for Executed, Replayed and Found.
func (o Outcome) Code() string {
	switch o {
	case Pending, Mismatch, Held:
		return CodeOutcomePending
	case NotRefundable:
		return CodeNotRefundable
	case ChargePending, ChargeHeld:
		return charge.Pending.Code()
	case Executed, Replayed, Found:
		return ""
	}
	if c, ok := chargeOutcomes[o]; ok {
		return c.Code()
	}
	return ""
}

// chargeOutcomes are the outcomes that mean for a refund what they mean
// for a charge.
var chargeOutcomes = map[Outcome]charge.Outcome{
	AccountInvalid: charge.AccountInvalid, KeyMissing: charge.KeyMissing, KeyInvalid: charge.KeyInvalid,
	RequestInvalid: charge.RequestInvalid, InFlight: charge.InFlight, KeyReused: charge.KeyReused,
	Released: charge.Released, Unavailable: charge.Unavailable, NotFound: charge.NotFound,
}

// Outcomes are every outcome, in order.
func Outcomes() []Outcome {
	out := make([]Outcome, 0, numOutcomes-1)
	for o := Executed; o < numOutcomes; o++ {
		out = append(out, o)
	}
	return out
}

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
	// LimitReached: the charge already had MaxEntries refunds.
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
	Outcome Outcome
	// Response is the stored answer, and RefundID the refund it answers
	// with, derived from the record's downstream key (Executed, Replayed):
	// an answer of the bound has no refund row under it.
	Response idem.Response
	RefundID string
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

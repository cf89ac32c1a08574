package op

// Code is a stable, machine-readable code: what every entry point answers
// an outcome with (a problem's code over HTTP, a refused command's
// reject_code, a refusal's event). This file is the one list of them;
// each adapter maps a code to its own form alone (httpapi to a status,
// title and detail, the queue adapter to a verdict).
type Code string

// The codes every operation answers with.
const (
	CodeUnauthenticated       Code = "UNAUTHENTICATED"
	CodeIdempotencyKeyMissing Code = "IDEMPOTENCY_KEY_MISSING"
	CodeIdempotencyKeyInvalid Code = "IDEMPOTENCY_KEY_INVALID"
	CodeValidationFailed      Code = "VALIDATION_FAILED"
	CodeIdempotencyInFlight   Code = "IDEMPOTENCY_IN_FLIGHT"
	CodeIdempotencyKeyReused  Code = "IDEMPOTENCY_KEY_REUSED"
	CodeAcquirerUnavailable   Code = "ACQUIRER_UNAVAILABLE"
	CodeServiceUnavailable    Code = "SERVICE_UNAVAILABLE"
	CodeNotFound              Code = "NOT_FOUND"
	// The HTTP adapter's own: a body that is not JSON, and an answer no
	// table has.
	CodeUnsupportedMediaType Code = "UNSUPPORTED_MEDIA_TYPE"
	CodeInternal             Code = "INTERNAL"
)

// The codes of one operation's own outcomes and answers.
const (
	// A charge's: its outcome is not known yet (also a refund's, of a
	// charge whose outcome is not), and the acquirer declined it.
	CodeChargeOutcomePending Code = "CHARGE_OUTCOME_PENDING"
	CodeChargeDeclined       Code = "CHARGE_DECLINED"
	// A refund's: its outcome is not known yet, the charge cannot be
	// refunded, the acquirer declined it, and the bound refused it.
	CodeRefundOutcomePending Code = "REFUND_OUTCOME_PENDING"
	CodeChargeNotRefundable  Code = "CHARGE_NOT_REFUNDABLE"
	CodeRefundDeclined       Code = "REFUND_DECLINED"
	CodeRefundExceedsCharge  Code = "REFUND_EXCEEDS_CHARGE"
	CodeRefundLimitReached   Code = "REFUND_LIMIT_REACHED"
	// A capture's and a void's: their outcomes are not known yet, the
	// acquirer declined them, the charge holds nothing they can act on or
	// its authorization expired, another capture or void of the charge is
	// in flight, and the bound refused a capture's amount.
	CodeCaptureOutcomePending       Code = "CAPTURE_OUTCOME_PENDING"
	CodeVoidOutcomePending          Code = "VOID_OUTCOME_PENDING"
	CodeCaptureDeclined             Code = "CAPTURE_DECLINED"
	CodeVoidDeclined                Code = "VOID_DECLINED"
	CodeChargeNotCapturable         Code = "CHARGE_NOT_CAPTURABLE"
	CodeAuthorizationExpired        Code = "AUTHORIZATION_EXPIRED"
	CodeCaptureInFlight             Code = "CAPTURE_IN_FLIGHT"
	CodeVoidInFlight                Code = "VOID_IN_FLIGHT"
	CodeCaptureExceedsAuthorization Code = "CAPTURE_EXCEEDS_AUTHORIZATION"
)

// Codes are how one operation's outcomes read where they differ from every
// other's: an operation supplies its own.
type Codes struct {
	// Pending answers Pending, Mismatch and Held: the operation's own
	// outcome is not known yet.
	Pending Code
}

// common are the codes of the outcomes that read alike in every
// operation. Executed, Replayed and Found are answers of their own.
var common = [numOutcomes]Code{
	AccountInvalid: CodeUnauthenticated, KeyMissing: CodeIdempotencyKeyMissing, KeyInvalid: CodeIdempotencyKeyInvalid,
	RequestInvalid: CodeValidationFailed, KeyReused: CodeIdempotencyKeyReused, InFlight: CodeIdempotencyInFlight,
	Released: CodeAcquirerUnavailable, Unavailable: CodeServiceUnavailable, NotFound: CodeNotFound,
	NotRefundable: CodeChargeNotRefundable, ChargePending: CodeChargeOutcomePending, ChargeHeld: CodeChargeOutcomePending,
	NotCapturable: CodeChargeNotCapturable, AuthorizationExpired: CodeAuthorizationExpired,
	CaptureInFlight: CodeCaptureInFlight, VoidInFlight: CodeVoidInFlight,
	// Held, they read as in flight: the Retry-After is a held record's.
	CaptureHeld: CodeCaptureInFlight, VoidHeld: CodeVoidInFlight,
}

// Of is the code o answers with in the operation of c: empty for the
// outcomes that are an answer (Executed, Replayed, Found).
func (c Codes) Of(o Outcome) Code {
	switch o {
	case Pending, Mismatch, Held:
		return c.Pending
	}
	if o > 0 && o < numOutcomes {
		return common[o]
	}
	return ""
}

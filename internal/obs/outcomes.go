package obs

// Outcome names what one unit of a function's work came to: the logs'
// "outcome" and the Outcome dimension of MetricRequests. These constants are
// the whole vocabulary: each name is written here once, the functions log
// and count only these, and the alarms select on them. docs/operating.md
// lists them (TestDocumentedOutcomes holds the two equal).
type Outcome string

// What a call of an operation or a lookup came to, over HTTP and on the
// producers' queues alike (op.Outcome names each of its outcomes by one of
// these).
const (
	OutcomeExecuted         Outcome = "executed"
	OutcomeReplayed         Outcome = "replayed"
	OutcomeAccountInvalid   Outcome = "account_invalid"
	OutcomeKeyMissing       Outcome = "key_missing"
	OutcomeKeyInvalid       Outcome = "key_invalid"
	OutcomeRequestInvalid   Outcome = "request_invalid"
	OutcomeInFlight         Outcome = "in_flight"
	OutcomeKeyReused        Outcome = "key_reused"
	OutcomeReleased         Outcome = "released"
	OutcomePending          Outcome = "pending"
	OutcomeUnavailable      Outcome = "unavailable"
	OutcomeFound            Outcome = "found"
	OutcomeNotFound         Outcome = "not_found"
	OutcomeAcquirerMismatch Outcome = "acquirer_mismatch" // a charge's or a reconciliation's: one alarm counts both
	OutcomeHeld             Outcome = "held"
)

// What only a call on a charge comes to (a refund's, today): the charge
// cannot be refunded, or its outcome is not known yet (in flight, or held
// for an operator).
const (
	OutcomeNotRefundable Outcome = "charge_not_refundable"
	OutcomeChargePending Outcome = "charge_pending"
	OutcomeChargeHeld    Outcome = "charge_held"
)

// What only a capture or a void comes to: the charge holds nothing it can
// act on, its authorization has expired, or another capture or void of it
// is in flight, or held for an operator.
const (
	OutcomeNotCapturable        Outcome = "charge_not_capturable"
	OutcomeAuthorizationExpired Outcome = "authorization_expired"
	OutcomeCaptureInFlight      Outcome = "capture_in_flight"
	OutcomeVoidInFlight         Outcome = "void_in_flight"
	OutcomeCaptureHeld          Outcome = "capture_held"
	OutcomeVoidHeld             Outcome = "void_held"
)

// The HTTP entry point's own refusals, made before the service is asked,
// and its health check's answers.
const (
	OutcomeUnsupportedMediaType Outcome = "unsupported_media_type"
	OutcomeNoRoute              Outcome = "no_route"
	OutcomeHealthy              Outcome = "healthy"
	OutcomeUnhealthy            Outcome = "unhealthy"
)

// The queue consumers' own verdicts, and what a reconcile command came to
// (op.Reconciled names each of its results by one of these).
const (
	OutcomeMalformed          Outcome = "malformed"
	OutcomeProducerNotAllowed Outcome = "producer_not_allowed"
	OutcomeReconcileFailed    Outcome = "reconcile_failed"
	OutcomeReconciledNothing  Outcome = "reconciled_nothing_to_do"
	OutcomeReconciledComplete Outcome = "reconciled_completed"
	OutcomeReconciledReleased Outcome = "reconciled_released"
	OutcomeReconciledHeld     Outcome = "reconciled_held"
)

// One per sweeper run and one per publisher invocation.
const (
	OutcomeSwept         Outcome = "swept" // the sweeper's heartbeat alarm counts it
	OutcomeSweepFailed   Outcome = "sweep_failed"
	OutcomePublished     Outcome = "published"
	OutcomePublishFailed Outcome = "publish_failed"
)

// Outcomes is the whole vocabulary, in the order above.
func Outcomes() []Outcome {
	return []Outcome{
		OutcomeExecuted, OutcomeReplayed, OutcomeAccountInvalid, OutcomeKeyMissing, OutcomeKeyInvalid, OutcomeRequestInvalid,
		OutcomeInFlight, OutcomeKeyReused, OutcomeReleased, OutcomePending, OutcomeUnavailable, OutcomeFound, OutcomeNotFound,
		OutcomeAcquirerMismatch, OutcomeHeld, OutcomeNotRefundable, OutcomeChargePending, OutcomeChargeHeld,
		OutcomeNotCapturable, OutcomeAuthorizationExpired, OutcomeCaptureInFlight, OutcomeVoidInFlight,
		OutcomeCaptureHeld, OutcomeVoidHeld, OutcomeUnsupportedMediaType, OutcomeNoRoute, OutcomeHealthy, OutcomeUnhealthy,
		OutcomeMalformed, OutcomeProducerNotAllowed, OutcomeReconcileFailed,
		OutcomeReconciledNothing, OutcomeReconciledComplete, OutcomeReconciledReleased, OutcomeReconciledHeld,
		OutcomeSwept, OutcomeSweepFailed, OutcomePublished, OutcomePublishFailed,
	}
}

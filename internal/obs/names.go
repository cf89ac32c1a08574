package obs

// The Function dimension of each function's metrics (NewMetrics): the
// function's binary (deploy.Function.Binary, TestMetricFunctions), which
// the CDK app's alarms and dashboard select on. A binary that more than
// one function runs is named as the binary: sqsconsumer is both the
// producers' queues' consumer and the reconciler (deploy.FunctionConsumer
// and deploy.FunctionReconciler).
const (
	FunctionCharge      = "charge"
	FunctionSQSConsumer = "sqsconsumer"
	FunctionSweeper     = "sweeper"
	FunctionPublisher   = "publisher"
	FunctionOperator    = "operator" // the operator's channel
	FunctionMatch       = "match"    // the daily match (conciliação)
)

// The dimensions of every metric: Function and Environment on all, and
// Outcome on MetricRequests.
const (
	DimensionFunction    = "Function"
	DimensionEnvironment = "Environment"
	DimensionOutcome     = "Outcome"
)

// The metric names the functions write and the alarms and dashboard read.
const (
	MetricRequests              = "Requests" // one per Record, by Outcome
	MetricLatencyMs             = "LatencyMs"
	MetricAcquirerLatencyMs     = "AcquirerLatencyMs"
	MetricAcquirerErrors        = "AcquirerErrors"
	MetricDeadLettered          = "DeadLettered"
	MetricStaleFlagged          = "StaleFlagged"
	MetricStaleFailing          = "StaleFailing"
	MetricOldestStaleSeconds    = "OldestStaleSeconds"
	MetricHeldRecords           = "HeldRecords" // records held for an operator, counted by the sweeper
	MetricOldestHeldSeconds     = "OldestHeldSeconds"
	MetricEventsPublished       = "EventsPublished"       // the publisher's, per invocation
	MetricStreamUndecodable     = "StreamUndecodable"     // stream records the publisher skipped
	MetricEventsTakenOver       = "EventsTakenOver"       // rows a sweeper published for their publisher: a stopped region's, or its own left behind (multi-region mode)
	MetricRegionsStopped        = "RegionsStopped"        // regions a sweeper found with a stale heartbeat (multi-region mode)
	MetricAuthorizationsClosed  = "AuthorizationsClosed"  // lapsed authorizations whose balance a sweeper closed
	MetricAuthorizationsWaiting = "AuthorizationsWaiting" // lapsed authorizations left open: an intent of theirs in flight
	MetricAuthorizationsExpired = "AuthorizationsExpired" // authorizations a sweeper closed at their expiry with something uncaptured: lost sales, no alarm
	// Refunds share the charges' outcomes (the Outcome dimension), so what
	// is a refund's is counted apart, on the same lines: MetricRefunds
	// once per refund request or command (a refund record's reconcile
	// command included), MetricRefundMismatches once per refund held on
	// the acquirer's answer, and MetricHeldRefunds the held records the
	// sweeper counted that are refunds'.
	MetricRefunds          = "Refunds"
	MetricRefundMismatches = "RefundMismatches"
	MetricHeldRefunds      = "HeldRefunds"
	// Captures and voids are counted apart as refunds are, each on its
	// own names.
	MetricCaptures          = "Captures"
	MetricCaptureMismatches = "CaptureMismatches"
	MetricVoids             = "Voids"
	MetricVoidMismatches    = "VoidMismatches"
	MetricHeldCaptures      = "HeldCaptures"
	MetricHeldVoids         = "HeldVoids"
	// MetricTableProbe is the sweeper's strongly consistent read of the
	// table, once a run: 1 when the table answered, 0 when not (Values,
	// not Record: it is no request's outcome). The table-probe alarm, and
	// through it the region's Route 53 health check, reads its Minimum.
	MetricTableProbe = "TableProbe"
	// The daily match's lines of a day by kind (match.Kinds), each the
	// day's count so far, written once per run of that day: a repeated or
	// resumed run writes the same count, never a sum.
	MetricMovementsWithoutRow    = "MovementsWithoutRow"
	MetricRowsWithoutMovement    = "RowsWithoutMovement"
	MetricTermsDiffer            = "TermsDiffer"
	MetricRefundedOverCaptured   = "RefundedOverCaptured"
	MetricCapturedOverAuthorized = "CapturedOverAuthorized"
)

// MatchMetrics are the daily match's metrics, one per kind of line, in
// the order the runbook and the dashboard list them; match.Metrics maps
// each kind to its own (match's TestMetricsAreObs holds them equal).
func MatchMetrics() []string {
	return []string{MetricMovementsWithoutRow, MetricRowsWithoutMovement, MetricTermsDiffer, MetricRefundedOverCaptured, MetricCapturedOverAuthorized}
}

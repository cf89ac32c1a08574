package obs

// The request line: the one line the HTTP function writes per request at
// INFO (package httpapi), from which CloudWatch Logs makes that
// function's metrics (LineMetrics), in place of an EMF line.
const (
	// MessageRequest is the request line's message (KeyMessage).
	MessageRequest = "request"
	// The members of the request line its metrics read.
	KeyOperation      = "operation"
	KeyOutcome        = "outcome"
	KeyTotalMs        = "total_ms"
	KeyAcquirerMs     = "acquirer_ms"
	KeyAcquirerErrors = "acquirer_errors"
)

// The members of the request line and of the consumer's message line
// that no metric reads and the chaos run counts (its readLogs): the
// acquirer calls that failed with nothing sent and with the outcome
// unknown. The request line leaves each out when it is zero; the
// consumer's message line always writes both.
const (
	KeyAcquirerNotSent = "acquirer_not_sent"
	KeyAcquirerUnknown = "acquirer_unknown"
)

// OperationCounts are an operation's own counts: Metric once per request
// of the operation, MismatchMetric once per request of it held on the
// acquirer's answer (OutcomeAcquirerMismatch).
type OperationCounts struct {
	Operation, Metric, MismatchMetric string
}

// CountedOperations are the operations counted apart, by their name
// (idem.Scope.Operation); their registrations name the same metrics
// (operations' TestCountsAreObs holds them equal).
func CountedOperations() []OperationCounts {
	return []OperationCounts{
		{"refund", MetricRefunds, MetricRefundMismatches},
		{"capture", MetricCaptures, MetricCaptureMismatches},
		{"void", MetricVoids, MetricVoidMismatches},
	}
}

// LineMetric is one metric CloudWatch Logs makes from request lines (a
// metric filter on the HTTP function's log group, in LogNamespace): on
// each request line whose members equal Where and whose member Positive,
// when named, is above zero, it counts the value of the member Value, or
// 1 when Value is "". Outcome, when named, is the member that gives the
// Outcome dimension. Its unit is UnitOf(Name).
type LineMetric struct {
	Name     string
	Where    map[string]string
	Positive string
	Value    string
	Outcome  string
}

// LineMetrics are the HTTP function's metrics, those its EMF line wrote:
// Requests by outcome, the latency, the acquirer's latency and errors
// (on requests that called it), and each counted operation's counts.
func LineMetrics() []LineMetric {
	request := func(also ...string) map[string]string {
		where := map[string]string{KeyMessage: MessageRequest}
		for i := 0; i+1 < len(also); i += 2 {
			where[also[i]] = also[i+1]
		}
		return where
	}
	metrics := []LineMetric{
		{Name: MetricRequests, Where: request(), Outcome: KeyOutcome},
		{Name: MetricLatencyMs, Where: request(), Value: KeyTotalMs},
		{Name: MetricAcquirerLatencyMs, Where: request(), Positive: KeyAcquirerMs, Value: KeyAcquirerMs},
		{Name: MetricAcquirerErrors, Where: request(), Positive: KeyAcquirerErrors, Value: KeyAcquirerErrors},
	}
	for _, c := range CountedOperations() {
		metrics = append(metrics,
			LineMetric{Name: c.Metric, Where: request(KeyOperation, c.Operation)},
			LineMetric{Name: c.MismatchMetric, Where: request(KeyOperation, c.Operation, KeyOutcome, string(OutcomeAcquirerMismatch))})
	}
	return metrics
}

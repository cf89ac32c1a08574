package obs

import (
	"io"
	"testing"
)

// BenchmarkRecord: one request's EMF line, as the charge function writes
// it on a first execution.
func BenchmarkRecord(b *testing.B) {
	m := NewMetrics(io.Discard, FunctionCharge, "prod")
	b.ReportAllocs()
	for b.Loop() {
		m.Record(OutcomeExecuted, map[string]float64{MetricLatencyMs: 14.2, MetricAcquirerLatencyMs: 1.9, MetricAcquirerErrors: 0})
	}
}

package obs

import (
	"context"
	"io"
	"log/slog"
	"testing"
)

// BenchmarkRequestLine: a request's log line as the HTTP handler writes
// it, with the request id its context carries.
func BenchmarkRequestLine(b *testing.B) {
	log := NewLogger(io.Discard, "INFO")
	ctx := WithAttrs(context.Background(), slog.String("requestId", "d7842d0a-4abd-47a5-9c1e-3f9c51a0b2d4"))
	b.ReportAllocs()
	for b.Loop() {
		log.InfoContext(ctx, "request", "route", "POST /v1/charges", "operation", "charge", "record", "3f9c51a0b2d4e871",
			"outcome", "executed", "status", 201, "attempt", 1, "acquirer_ms", 1.9, "acquirer_errors", 0,
			"acquirer_not_sent", 0, "acquirer_unknown", 0, "total_ms", 14.2)
	}
}

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
	ctx := WithAttrs(context.Background(), slog.String("requestId", "d7842d0a-4abd-47a5-9c1e-3f9c51a0b2d4"),
		slog.String("traceId", "1-4bf92f35-77b34da6a3ce929d0e0e4736"))
	b.ReportAllocs()
	for b.Loop() {
		log.LogAttrs(ctx, slog.LevelInfo, "request", slog.String("operation", "charge"),
			slog.String("record", "3f9c51a0b2d4e871"), slog.String("outcome", "executed"), slog.Int("status", 201),
			slog.Float64("acquirer_ms", 1.9), slog.Float64("total_ms", 14.2))
	}
}

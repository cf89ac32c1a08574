package httpapi

import (
	"cmp"
	"log/slog"
	"time"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/obs"
)

// requestLine is the request line's attributes (obs.MessageRequest),
// whose members obs.LineMetrics reads. Each count and latency is left out
// when it is zero, and the attempt when it is the first: the line holds
// what was not usual about the request, in the fewest bytes. The route
// is the access log's (routeKey, by the same requestId), not repeated.
func requestLine(tr trail, a reply, took time.Duration) []slog.Attr {
	attrs := make([]slog.Attr, 0, 10)
	attrs = append(attrs, slog.String(obs.KeyOperation, cmp.Or(tr.operation, charge.Operation)),
		slog.String("record", tr.record), slog.String(obs.KeyOutcome, string(a.outcome)), slog.Int("status", a.StatusCode))
	if tr.attempt > 1 {
		attrs = append(attrs, slog.Int("attempt", tr.attempt))
	}
	if tr.acquirerLatency > 0 {
		attrs = append(attrs, slog.Float64(obs.KeyAcquirerMs, ms(tr.acquirerLatency)))
	}
	for _, n := range []struct {
		key   string
		count int
	}{{obs.KeyAcquirerErrors, tr.acquirerErrors}, {obs.KeyAcquirerNotSent, tr.acquirerNotSent}, {obs.KeyAcquirerUnknown, tr.acquirerUnknown}} {
		if n.count != 0 {
			attrs = append(attrs, slog.Int(n.key, n.count))
		}
	}
	return append(attrs, slog.Float64(obs.KeyTotalMs, ms(took)))
}

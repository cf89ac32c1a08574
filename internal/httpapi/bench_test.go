package httpapi

import (
	"context"
	"strconv"
	"testing"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/idem/idemtest"
	"github.com/idempotent-payments/idempay/internal/sandbox"
)

// BenchmarkHandler is the handler's CPU per request: memory store, the
// sandbox acquirer called in process (no HTTP, no sockets).
func BenchmarkHandler(b *testing.B) {
	store := idemtest.NewMemoryStore()
	guard := idem.NewGuard(store, idem.Config{CacheSize: 10000})
	h := handlerOn(guard, sandbox.New(""), charge.Config{})
	ctx := context.Background()
	ev := loadEvent(b, "create-charge.json")

	b.Run("first", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			ev.Headers["idempotency-key"] = "bench-first-" + strconv.Itoa(i)
			if resp, _ := h.Handle(ctx, ev); resp.StatusCode != 201 {
				b.Fatalf("status %d", resp.StatusCode)
			}
		}
	})
	b.Run("replay", func(b *testing.B) {
		ev.Headers["idempotency-key"] = "bench-replay-1"
		h.Handle(ctx, ev)
		b.ReportAllocs()
		for b.Loop() {
			if resp, _ := h.Handle(ctx, ev); resp.Headers["Idempotent-Replay"] != "true" {
				b.Fatalf("status %d", resp.StatusCode)
			}
		}
	})
}

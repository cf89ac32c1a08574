package idem_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/idem/idemtest"
)

var benchRequest = idem.Canonical{
	{Name: "amount", Value: "25000"}, {Name: "currency", Value: "BRL"},
	{Name: "order_id", Value: "123"}, {Name: "payment_method", Value: "pm_card_visa"},
}

var benchResponse = idem.Response{StatusCode: 201, Headers: map[string]string{"Content-Type": "application/json"}, Body: []byte(`{"id":"ch_1","status":"captured"}`)}

// BenchmarkClaimComplete is a first execution on the memory store: the
// engine's own cost, without the database.
func BenchmarkClaimComplete(b *testing.B) {
	ctx := context.Background()
	guard := idem.NewGuard(idemtest.NewMemoryStore(), idem.Config{})
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		c, err := guard.Begin(ctx, idem.Scope{Operation: "charge", Account: "acct_1", Key: "bench-key-" + strconv.Itoa(i)}, benchRequest)
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Lease.Complete(ctx, benchResponse); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReplay answers a completed key from the store (cache off) and
// from the warm cache.
func BenchmarkReplay(b *testing.B) {
	for _, cacheSize := range []int{0, 1000} {
		name := "store"
		if cacheSize > 0 {
			name = "warm-cache"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			guard := idem.NewGuard(idemtest.NewMemoryStore(), idem.Config{CacheSize: cacheSize})
			s := idem.Scope{Operation: "charge", Account: "acct_1", Key: "bench-replay-key"}
			c, _ := guard.Begin(ctx, s, benchRequest)
			if err := c.Lease.Complete(ctx, benchResponse); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				c, err := guard.Begin(ctx, s, benchRequest)
				if err != nil || c.Replay == nil {
					b.Fatal(err)
				}
			}
		})
	}
}

package idem_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/idem/idemtest"
)

// countingStore counts Claim calls: how often the guard went to the store.
type countingStore struct {
	*idemtest.MemoryStore
	claims int
}

func (c *countingStore) Claim(ctx context.Context, rec idem.Record, now time.Time) (*idem.Record, bool, error) {
	c.claims++
	return c.MemoryStore.Claim(ctx, rec, now)
}

func TestWarmCacheServesCompletedOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := &countingStore{MemoryStore: idemtest.NewMemoryStore()}
	clock := idemtest.NewClock(time.Unix(1_800_000_000, 0))
	guard := idem.NewGuard(store, idem.Config{CacheSize: 2, Now: clock.Now})
	req := idem.Canonical{{Name: "amount", Value: "100"}}
	scope := func(i int) idem.Scope {
		return idem.Scope{Operation: "charge", Account: "a", Key: fmt.Sprintf("cache-key-%d", i)}
	}

	c, _ := guard.Begin(ctx, scope(0), req)
	if _, err := guard.Begin(ctx, scope(0), req); !errors.Is(err, idem.ErrInFlight) {
		t.Fatalf("in-flight record answered from memory: %v", err)
	}
	if err := c.Lease.Complete(ctx, idem.Response{StatusCode: 201}); err != nil {
		t.Fatal(err)
	}
	store.claims = 0
	if c, err := guard.Begin(ctx, scope(0), req); err != nil || c.Replay == nil || store.claims != 0 {
		t.Fatalf("warm replay: %+v, %v, %d store claims; want a replay from memory", c, err, store.claims)
	}
	if _, err := guard.Begin(ctx, scope(0), idem.Canonical{{Name: "amount", Value: "1"}}); !errors.Is(err, idem.ErrKeyReused) || store.claims != 0 {
		t.Fatalf("warm key reuse: %v, %d store claims", err, store.claims)
	}

	// The cache is bounded: two more completions evict the first.
	for i := 1; i <= 2; i++ {
		c, _ := guard.Begin(ctx, scope(i), req)
		if err := c.Lease.Complete(ctx, idem.Response{StatusCode: 201}); err != nil {
			t.Fatal(err)
		}
	}
	store.claims = 0
	if c, err := guard.Begin(ctx, scope(0), req); err != nil || c.Replay == nil || store.claims != 1 {
		t.Fatalf("evicted record: %+v, %v, %d claims; want a replay from the store", c, err, store.claims)
	}

	// Past retention a cached record is not an answer.
	clock.Advance(idem.DefaultRetention + time.Second)
	if c, err := guard.Begin(ctx, scope(0), req); err != nil || c.Lease == nil {
		t.Fatalf("expired cached record: %+v, %v; want a fresh claim", c, err)
	}
}

func TestRetryAfterBounds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := idemtest.NewClock(time.Unix(1_800_000_000, 0))
	guard := idem.NewGuard(idemtest.NewMemoryStore(), idem.Config{Now: clock.Now, DefaultLease: 10 * time.Second, MaxRetryAfter: 3 * time.Second})
	s := idem.Scope{Operation: "charge", Account: "a", Key: "retry-after-key"}
	req := idem.Canonical{}
	claim, err := guard.Begin(ctx, s, req)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		advance time.Duration
		want    time.Duration
	}{{0, 3 * time.Second}, {8*time.Second + 500*time.Millisecond, 2 * time.Second}, {1200 * time.Millisecond, time.Second}} {
		clock.Advance(tc.advance)
		var inFlight *idem.InFlightError
		if _, err := guard.Begin(ctx, s, req); !errors.As(err, &inFlight) || inFlight.RetryAfter != tc.want {
			t.Fatalf("after %s: %v, want RetryAfter %s", tc.advance, err, tc.want)
		}
		if !inFlight.LeaseExpiresAt.Equal(claim.Lease.ExpiresAt()) {
			t.Fatalf("LeaseExpiresAt %s, want the owner's %s", inFlight.LeaseExpiresAt, claim.Lease.ExpiresAt())
		}
	}
}

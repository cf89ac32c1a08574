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

// TestStampsAndFloors: a lease stamps a write only before its end, and
// never ends before its floor, even when Abandon comes by a clock that
// stepped back; a claim's floor is its latest stamp, and a take-over's
// the end of the lease it took over, which comes after every stamp of
// the earlier attempts, down a chain of take-overs.
func TestStampsAndFloors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	start := time.Unix(1_800_000_000, 0)
	clock := idemtest.NewClock(start)
	guard := idem.NewGuard(idemtest.NewMemoryStore(), idem.Config{Now: clock.Now, DefaultLease: 30 * time.Second})
	scope := idem.Scope{Operation: "refund", Account: "a", Key: "stamped-key"}
	req := idem.Canonical{{Name: "amount", Value: "100"}}
	c, err := guard.Begin(ctx, scope, req)
	if err != nil || c.Lease == nil {
		t.Fatalf("the claim: %+v, %v", c, err)
	}
	if !c.Lease.Floor().IsZero() || !c.Lease.TookOver().IsZero() {
		t.Fatalf("a claim's floor %v; want none", c.Lease.Floor())
	}
	clock.Advance(10 * time.Second)
	stamp, ok := c.Lease.Stamp()
	if !ok || !stamp.Equal(start.Add(10*time.Second)) || !c.Lease.Floor().Equal(stamp) {
		t.Fatalf("stamp %v %t, floor %v; want the clock's time, and the floor at it", stamp, ok, c.Lease.Floor())
	}
	clock.Advance(-5 * time.Second) // the wall clock steps back
	if err := c.Lease.Abandon(ctx); err != nil || !c.Lease.ExpiresAt().Equal(stamp) {
		t.Fatalf("abandoned by a clock behind the stamp: %v, the lease ends %v; want at the stamp, %v", err, c.Lease.ExpiresAt(), stamp)
	}
	clock.Advance(10 * time.Second)
	taken, err := guard.Begin(ctx, scope, req)
	if err != nil || taken.Lease == nil {
		t.Fatalf("the take-over: %+v, %v", taken, err)
	}
	if !taken.Lease.TookOver().Equal(stamp) || !taken.Lease.Floor().Equal(stamp) {
		t.Fatalf("the take-over's floor %v; want the end taken over, %v", taken.Lease.Floor(), stamp)
	}
	clock.Advance(-20 * time.Second) // further back: the taker's Abandon
	if err := taken.Lease.Abandon(ctx); err != nil || !taken.Lease.ExpiresAt().Equal(stamp) {
		t.Fatalf("a take-over abandoned by a clock behind the end it took over: %v, ends %v; want %v", err, taken.Lease.ExpiresAt(), stamp)
	}
	clock.Advance(30 * time.Second)
	third, err := guard.Begin(ctx, scope, req)
	if err != nil || third.Lease == nil || !third.Lease.Floor().Equal(stamp) {
		t.Fatalf("the third attempt: %+v, %v; want its floor at %v", third, err, stamp)
	}
	clock.Advance(31 * time.Second)
	if at, ok := third.Lease.Stamp(); ok {
		t.Fatalf("a stamp after the lease's end: %v", at)
	}

	// Stores keep a lease's end to the millisecond. A lease ends on one,
	// and one ended early at a floor between two ends at the next, so
	// the end a take-over reads is never before the floor.
	clock.Advance(time.Hour + 300*time.Microsecond)
	subMs := idem.Scope{Operation: "refund", Account: "a", Key: "stamped-between-milliseconds"}
	c, err = guard.Begin(ctx, subMs, req)
	if err != nil || c.Lease == nil || !c.Lease.ExpiresAt().Equal(c.Lease.ExpiresAt().Truncate(time.Millisecond)) {
		t.Fatalf("a claim between milliseconds: %+v, %v; want its lease to end on a millisecond", c, err)
	}
	if stamp, ok = c.Lease.Stamp(); !ok || stamp.Equal(stamp.Truncate(time.Millisecond)) {
		t.Fatalf("stamp %v %t; want one between milliseconds", stamp, ok)
	}
	clock.Advance(-time.Second)
	if err := c.Lease.Abandon(ctx); err != nil || c.Lease.ExpiresAt().Before(stamp) || !c.Lease.ExpiresAt().Equal(stamp.Truncate(time.Millisecond).Add(time.Millisecond)) {
		t.Fatalf("abandoned: %v, ends %v; want the millisecond after the stamp %v", err, c.Lease.ExpiresAt(), stamp)
	}
}

package op_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/idem/idemtest"
	"github.com/idempotent-payments/idempay/internal/op"
)

var errPassed = errors.New("a fold passed the stamp")

// TestReserve: a write refused because a fold passed its stamp is issued
// again with a new stamp, never an earlier one, at most op.MaxReservationTries times, each
// under a deadline at the lease's end; any other answer ends it at once;
// a lease that has ended issues nothing.
func TestReserve(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		refuse  int // how many writes are refused as passed
		other   error
		writes  int
		wantErr error
	}{
		{name: "first write reserves", writes: 1},
		{name: "passed once, then reserves", refuse: 1, writes: 2},
		{name: "passed every time", refuse: 10, writes: op.MaxReservationTries, wantErr: errPassed},
		{name: "another refusal is final", other: errNotSent, writes: 1, wantErr: errNotSent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			guard := idem.NewGuard(idemtest.NewMemoryStore(), idem.Config{})
			claim, err := guard.Begin(ctx, idem.Scope{Operation: "planted", Account: "acct_1", Key: "key-of-the-test"}, idem.Canonical{{Name: "amount", Value: "100"}})
			if err != nil {
				t.Fatal(err)
			}
			var stamps []time.Time
			got, err := op.Reserve(ctx, claim.Lease, errPassed, func(ctx context.Context, stamp time.Time) (int, error) {
				if d, ok := ctx.Deadline(); !ok || !d.Equal(claim.Lease.ExpiresAt()) {
					t.Errorf("write deadline %v (%v), want the lease's end %v", d, ok, claim.Lease.ExpiresAt())
				}
				if n := len(stamps); n > 0 && stamp.Before(stamps[n-1]) {
					t.Errorf("stamp %v before the last %v", stamp, stamps[n-1])
				}
				stamps = append(stamps, stamp)
				switch {
				case len(stamps) <= tc.refuse:
					return 0, errPassed
				case tc.other != nil:
					return 0, tc.other
				}
				return 7, nil
			})
			if len(stamps) != tc.writes || !errors.Is(err, tc.wantErr) || (err == nil) != (got == 7) {
				t.Fatalf("%d writes, %d, %v; want %d writes, %v", len(stamps), got, err, tc.writes, tc.wantErr)
			}
		})
	}
	t.Run("a lease that ended", func(t *testing.T) {
		now := time.Now()
		clock := func() time.Time { return now }
		guard := idem.NewGuard(idemtest.NewMemoryStore(), idem.Config{Now: func() time.Time { return clock() }})
		claim, err := guard.Begin(ctx, idem.Scope{Operation: "planted", Account: "acct_1", Key: "key-of-the-test"}, idem.Canonical{{Name: "amount", Value: "100"}})
		if err != nil {
			t.Fatal(err)
		}
		later := claim.Lease.ExpiresAt().Add(time.Second)
		clock = func() time.Time { return later }
		if _, err := op.Reserve(ctx, claim.Lease, errPassed, func(context.Context, time.Time) (int, error) {
			t.Fatal("a write issued after the lease's end")
			return 0, nil
		}); !errors.Is(err, op.ErrLeaseEnded) {
			t.Fatalf("%v, want op.ErrLeaseEnded", err)
		}
	})
}

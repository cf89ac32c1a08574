package refundtest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"

	"github.com/idempotent-payments/idempay/internal/refund"
)

// NewBalancesFunc returns fresh, empty balances for one test.
type NewBalancesFunc func(t *testing.T) refund.Balances

// RunConformance runs the suite every refund.Balances must pass: the
// steps of DESIGN §7 and their conditions, the bound under concurrency,
// fencing, and retries of a step whose answer was lost.
func RunConformance(t *testing.T, newBalances NewBalancesFunc) {
	for _, c := range []struct {
		name string
		run  func(t *testing.T, b refund.Balances)
	}{
		{"ReserveWithinTheCharge", testReserveWithinTheCharge},
		{"ReserveWhatRemains", testReserveWhatRemains},
		{"ConcurrentReservationsNeverExceed", testConcurrentReservationsNeverExceed},
		{"ReserveIsIdempotentForItsAttempt", testReserveIsIdempotentForItsAttempt},
		{"SucceedMovesReservedToRefunded", testSucceedMovesReservedToRefunded},
		{"ReleaseGivesTheAmountBack", testReleaseGivesTheAmountBack},
		{"SucceededIsNeverReleased", testSucceededIsNeverReleased},
		{"RefenceShutsOutEarlierAttempts", testRefenceShutsOutEarlierAttempts},
		{"StubShutsOutALateReservation", testStubShutsOutALateReservation},
		{"ReleaseWithoutAnEntryIsATombstone", testReleaseWithoutAnEntryIsATombstone},
		{"LimitOfEntries", testLimitOfEntries},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, newBalances(t))
		})
	}
}

var ctx = context.Background()

// chargeOf is a charge id of its own for each call, so cases never share a
// balance.
var charges struct {
	sync.Mutex
	n int
}

func chargeOf(t *testing.T) string {
	charges.Lock()
	defer charges.Unlock()
	charges.n++
	return fmt.Sprintf("ch_%040x", charges.n)
}

func keyOf(n int) string { return fmt.Sprintf("%040x", n+1000) }

// mustBalance checks the balance's figures and its invariant.
func mustBalance(t *testing.T, b refund.Balances, charge string, remaining, reserved, refunded int64) {
	t.Helper()
	got, err := b.Get(ctx, charge)
	if err != nil {
		t.Fatal(err)
	}
	if got.Remaining != remaining || got.Reserved != reserved || got.Refunded != refunded {
		t.Fatalf("balance %+v, want remaining %d, reserved %d, refunded %d", got, remaining, reserved, refunded)
	}
	if got.Remaining+got.Reserved+got.Refunded != got.ChargeAmount {
		t.Fatalf("balance %+v does not add up to the charge", got)
	}
}

func reserve(b refund.Balances, charge, key string, fence int, amount int64) (refund.Entry, error) {
	return b.Reserve(ctx, refund.Reservation{ChargeID: charge, ChargeAmount: 1000, Key: key, Fence: fence, Amount: amount})
}

// testReserveWithinTheCharge: reservations are granted while they fit, and
// one that does not fit is refused with what remains.
func testReserveWithinTheCharge(t *testing.T, b refund.Balances) {
	charge := chargeOf(t)
	if e, err := reserve(b, charge, keyOf(1), 1, 600); err != nil || e != (refund.Entry{State: refund.EntryReserved, Fence: 1, Amount: 600}) {
		t.Fatalf("first: %+v, %v", e, err)
	}
	var noRoom *refund.NoRoomError
	if _, err := reserve(b, charge, keyOf(2), 1, 600); !errors.As(err, &noRoom) || noRoom.Refundable != 400 {
		t.Fatalf("second of 600: %v, want no room with 400 refundable", err)
	}
	if _, err := reserve(b, charge, keyOf(3), 1, 400); err != nil {
		t.Fatalf("the rest: %v", err)
	}
	if _, err := reserve(b, charge, keyOf(4), 1, 1); !errors.As(err, &noRoom) || noRoom.Refundable != 0 {
		t.Fatalf("nothing left: %v", err)
	}
	mustBalance(t, b, charge, 0, 1000, 0)
	if _, ok, _ := b.Entry(ctx, charge, keyOf(2)); ok {
		t.Fatal("a refused reservation left an entry")
	}
	got, err := b.Get(ctx, charge)
	want := map[string]refund.Entry{
		keyOf(1): {State: refund.EntryReserved, Fence: 1, Amount: 600},
		keyOf(3): {State: refund.EntryReserved, Fence: 1, Amount: 400},
	}
	if err != nil || !maps.Equal(got.ByKey, want) {
		t.Fatalf("the balance's entries: %+v, %v; want %+v", got.ByKey, err, want)
	}
	if never, err := b.Get(ctx, chargeOf(t)); err != nil || never.ByKey != nil || never.Entries != 0 {
		t.Fatalf("a charge never refunded: %+v, %v", never, err)
	}
}

// testReserveWhatRemains: an amount of 0 reserves what remains, resolved by
// the write and stored on the entry; with nothing left it is refused.
func testReserveWhatRemains(t *testing.T, b refund.Balances) {
	charge := chargeOf(t)
	if _, err := reserve(b, charge, keyOf(1), 1, 300); err != nil {
		t.Fatal(err)
	}
	e, err := reserve(b, charge, keyOf(2), 1, 0)
	if err != nil || e.Amount != 700 {
		t.Fatalf("the rest: %+v, %v; want 700", e, err)
	}
	if stored, ok, err := b.Entry(ctx, charge, keyOf(2)); err != nil || !ok || stored.Amount != 700 || stored.State != refund.EntryReserved {
		t.Fatalf("stored %+v %t %v", stored, ok, err)
	}
	var noRoom *refund.NoRoomError
	if _, err := reserve(b, charge, keyOf(3), 1, 0); !errors.As(err, &noRoom) || noRoom.Refundable != 0 {
		t.Fatalf("the rest of nothing: %v", err)
	}
	mustBalance(t, b, charge, 0, 1000, 0)
}

// testConcurrentReservationsNeverExceed: 20 reservations of 20 % each,
// under 20 keys, at once: exactly 5 are granted.
func testConcurrentReservationsNeverExceed(t *testing.T, b refund.Balances) {
	charge := chargeOf(t)
	var wg sync.WaitGroup
	var mu sync.Mutex
	granted, refused := 0, 0
	for i := range 20 {
		wg.Go(func() {
			_, err := reserve(b, charge, keyOf(i), 1, 200)
			var noRoom *refund.NoRoomError
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				granted++
			case errors.As(err, &noRoom):
				refused++
			default:
				t.Errorf("reserve %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if granted != 5 || refused != 15 {
		t.Fatalf("%d granted, %d refused; want 5 and 15", granted, refused)
	}
	mustBalance(t, b, charge, 0, 1000, 0)
}

// testReserveIsIdempotentForItsAttempt: a reservation sent again by its
// attempt (its answer was lost) returns the entry and reserves nothing
// more; another attempt's is refused.
func testReserveIsIdempotentForItsAttempt(t *testing.T, b refund.Balances) {
	charge := chargeOf(t)
	first, err := reserve(b, charge, keyOf(1), 1, 300)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := reserve(b, charge, keyOf(1), 1, 300); err != nil || again != first {
		t.Fatalf("again: %+v, %v; want %+v", again, err, first)
	}
	if _, err := reserve(b, charge, keyOf(1), 2, 300); !errors.Is(err, refund.ErrFenced) {
		t.Fatalf("another attempt without a re-fence: %v, want ErrFenced", err)
	}
	mustBalance(t, b, charge, 700, 300, 0)
}

// testSucceedMovesReservedToRefunded: succeed moves the amount, once; a
// retry finds it done; another fence is refused.
func testSucceedMovesReservedToRefunded(t *testing.T, b refund.Balances) {
	charge := chargeOf(t)
	if _, err := reserve(b, charge, keyOf(1), 1, 300); err != nil {
		t.Fatal(err)
	}
	if err := b.Succeed(ctx, charge, keyOf(1), 2); !errors.Is(err, refund.ErrFenced) {
		t.Fatalf("another fence: %v", err)
	}
	for range 2 {
		if err := b.Succeed(ctx, charge, keyOf(1), 1); err != nil {
			t.Fatal(err)
		}
	}
	mustBalance(t, b, charge, 700, 0, 300)
}

// testReleaseGivesTheAmountBack: release gives the amount back, once, and
// it can be reserved again under another key; a retry finds it done.
func testReleaseGivesTheAmountBack(t *testing.T, b refund.Balances) {
	charge := chargeOf(t)
	if _, err := reserve(b, charge, keyOf(1), 1, 800); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := b.Release(ctx, charge, keyOf(1), 1); err != nil {
			t.Fatal(err)
		}
	}
	mustBalance(t, b, charge, 1000, 0, 0)
	if _, err := reserve(b, charge, keyOf(2), 1, 800); err != nil {
		t.Fatalf("the freed amount: %v", err)
	}
	if _, err := reserve(b, charge, keyOf(1), 1, 100); !errors.Is(err, refund.ErrFenced) {
		t.Fatalf("a released entry reserved again: %v", err)
	}
	mustBalance(t, b, charge, 200, 800, 0)
}

// testSucceededIsNeverReleased: a succeeded entry refuses release, and a
// released one refuses succeed.
func testSucceededIsNeverReleased(t *testing.T, b refund.Balances) {
	charge := chargeOf(t)
	for i := range 2 {
		if _, err := reserve(b, charge, keyOf(i), 1, 100); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Succeed(ctx, charge, keyOf(0), 1); err != nil {
		t.Fatal(err)
	}
	if err := b.Release(ctx, charge, keyOf(0), 1); !errors.Is(err, refund.ErrFenced) {
		t.Fatalf("released a succeeded entry: %v", err)
	}
	if err := b.Release(ctx, charge, keyOf(1), 1); err != nil {
		t.Fatal(err)
	}
	if err := b.Succeed(ctx, charge, keyOf(1), 1); !errors.Is(err, refund.ErrFenced) {
		t.Fatalf("a released entry succeeded: %v", err)
	}
	mustBalance(t, b, charge, 900, 0, 100)
}

// testRefenceShutsOutEarlierAttempts: after a take-over re-fences the
// entry, the earlier attempt can neither succeed nor release, and the
// taker learns the stored amount and moves it.
func testRefenceShutsOutEarlierAttempts(t *testing.T, b refund.Balances) {
	charge := chargeOf(t)
	if _, err := reserve(b, charge, keyOf(1), 1, 0); err != nil {
		t.Fatal(err)
	}
	e, err := b.Refence(ctx, charge, keyOf(1), 2)
	if err != nil || e != (refund.Entry{State: refund.EntryReserved, Fence: 2, Amount: 1000}) {
		t.Fatalf("refence: %+v, %v", e, err)
	}
	if again, err := b.Refence(ctx, charge, keyOf(1), 2); err != nil || again != e {
		t.Fatalf("the same fence again (its own write, answered again): %+v, %v", again, err)
	}
	if _, err := b.Refence(ctx, charge, keyOf(1), 1); !errors.Is(err, refund.ErrFenced) {
		t.Fatalf("an earlier fence: %v", err)
	}
	if err := b.Release(ctx, charge, keyOf(1), 1); !errors.Is(err, refund.ErrFenced) {
		t.Fatalf("the earlier attempt released: %v", err)
	}
	if err := b.Succeed(ctx, charge, keyOf(1), 1); !errors.Is(err, refund.ErrFenced) {
		t.Fatalf("the earlier attempt succeeded: %v", err)
	}
	if _, err := reserve(b, charge, keyOf(1), 2, 0); err != nil {
		t.Fatalf("the taker's reservation, already there: %v", err)
	}
	if err := b.Succeed(ctx, charge, keyOf(1), 2); err != nil {
		t.Fatal(err)
	}
	mustBalance(t, b, charge, 0, 0, 1000)
}

// testStubShutsOutALateReservation: a take-over that finds no entry leaves
// a stub; the earlier attempt's late reservation is refused, and the
// taker reserves under its own fence.
func testStubShutsOutALateReservation(t *testing.T, b refund.Balances) {
	charge := chargeOf(t)
	e, err := b.Refence(ctx, charge, keyOf(1), 2)
	if err != nil || e != (refund.Entry{Fence: 2}) {
		t.Fatalf("stub: %+v, %v", e, err)
	}
	if _, err := reserve(b, charge, keyOf(1), 1, 300); !errors.Is(err, refund.ErrFenced) {
		t.Fatalf("a late reservation of the earlier attempt: %v", err)
	}
	if _, err := reserve(b, charge, keyOf(1), 2, 300); err != nil {
		t.Fatalf("the taker's reservation: %v", err)
	}
	mustBalance(t, b, charge, 700, 300, 0)
}

// testReleaseWithoutAnEntryIsATombstone: releasing a stub (or no entry)
// leaves it released, gives nothing back, and refuses a late reservation.
func testReleaseWithoutAnEntryIsATombstone(t *testing.T, b refund.Balances) {
	charge := chargeOf(t)
	if _, err := reserve(b, charge, keyOf(9), 1, 100); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Refence(ctx, charge, keyOf(1), 2); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := b.Release(ctx, charge, keyOf(1), 2); err != nil {
			t.Fatalf("release of a stub: %v", err)
		}
	}
	if err := b.Release(ctx, charge, keyOf(2), 3); err != nil {
		t.Fatalf("release of no entry: %v", err)
	}
	for _, k := range []string{keyOf(1), keyOf(2)} {
		if _, err := reserve(b, charge, k, 1, 100); !errors.Is(err, refund.ErrFenced) {
			t.Fatalf("a late reservation after the release: %v", err)
		}
	}
	mustBalance(t, b, charge, 900, 100, 0)
}

// testLimitOfEntries: MaxEntries intents may reserve; the next is refused
// with ErrLimitReached even with room left.
func testLimitOfEntries(t *testing.T, b refund.Balances) {
	charge := chargeOf(t)
	for i := range refund.MaxEntries {
		if _, err := reserve(b, charge, keyOf(i), 1, 1); err != nil {
			t.Fatalf("reservation %d: %v", i, err)
		}
	}
	if _, err := reserve(b, charge, keyOf(refund.MaxEntries), 1, 1); !errors.Is(err, refund.ErrLimitReached) {
		t.Fatalf("one more: %v, want ErrLimitReached", err)
	}
	mustBalance(t, b, charge, 1000-refund.MaxEntries, refund.MaxEntries, 0)
}

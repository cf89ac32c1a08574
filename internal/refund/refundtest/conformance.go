package refundtest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

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
		{"AnEndedIntentNeverMovesAgain", testAnEndedIntentNeverMovesAgain},
		{"ALateReservationAfterASuccessIsRefused", testALateReservationAfterASuccessIsRefused},
		{"AFirstAttemptsSuccessKeepsTheClaimWatermark", testAFirstAttemptsSuccessKeepsTheClaimWatermark},
		{"ManyRefundsAtConstantSize", testManyRefundsAtConstantSize},
		{"RefenceShutsOutEarlierAttempts", testRefenceShutsOutEarlierAttempts},
		{"RefenceFoldsAnIntentWithoutAnEntry", testRefenceFoldsAnIntentWithoutAnEntry},
		{"ReleaseWithoutAnEntryFolds", testReleaseWithoutAnEntryFolds},
		{"ReleasedThroughOrdersIntents", testReleasedThroughOrdersIntents},
		{"LimitOfEntries", testLimitOfEntries},
		{"FailuresNeverGrowTheBalance", testFailuresNeverGrowTheBalance},
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

// intentOf is the nth intent of a test as a take-over's step knows it:
// its downstream key, a claim time n seconds after the first's, so a
// higher n was claimed later, and its folds made half a second after its
// claim, before any later intent's.
func intentOf(n int) refund.Intent {
	claimed := firstClaim.Add(time.Duration(n) * time.Second)
	return refund.Intent{Key: fmt.Sprintf("%040x", n+1000), Claimed: claimed, FoldAt: claimed.Add(foldDelay)}
}

// first is the intent as its first attempt's steps know it.
func first(in refund.Intent) refund.Intent {
	in.First = true
	return in
}

const foldDelay = 500 * time.Millisecond

var firstClaim = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

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

// reserve reserves for in with a write issued a millisecond after its
// claim (reserveAt, at another instant).
func reserve(b refund.Balances, charge string, in refund.Intent, fence int, amount int64) (refund.Entry, error) {
	return reserveAt(b, charge, in, fence, amount, in.Claimed.Add(time.Millisecond))
}

func reserveAt(b refund.Balances, charge string, in refund.Intent, fence int, amount int64, stamp time.Time) (refund.Entry, error) {
	return b.Reserve(ctx, refund.Reservation{ChargeID: charge, ChargeAmount: 1000, Intent: in, Fence: fence, Stamp: stamp, Amount: amount})
}

// released is what the balances say of an intent they folded.
var released = refund.Entry{State: refund.EntryReleased}

// testReserveWithinTheCharge: reservations are granted while they fit, and
// one that does not fit is refused with what remains.
func testReserveWithinTheCharge(t *testing.T, b refund.Balances) {
	charge := chargeOf(t)
	if e, err := reserve(b, charge, intentOf(1), 1, 600); err != nil || e != (refund.Entry{State: refund.EntryReserved, Fence: 1, Amount: 600}) {
		t.Fatalf("first: %+v, %v", e, err)
	}
	var noRoom *refund.NoRoomError
	if _, err := reserve(b, charge, intentOf(2), 1, 600); !errors.As(err, &noRoom) || noRoom.Refundable != 400 {
		t.Fatalf("second of 600: %v, want no room with 400 refundable", err)
	}
	if _, err := reserve(b, charge, intentOf(3), 1, 400); err != nil {
		t.Fatalf("the rest: %v", err)
	}
	if _, err := reserve(b, charge, intentOf(4), 1, 1); !errors.As(err, &noRoom) || noRoom.Refundable != 0 {
		t.Fatalf("nothing left: %v", err)
	}
	mustBalance(t, b, charge, 0, 1000, 0)
	if _, ok, _ := b.Entry(ctx, charge, intentOf(2)); ok {
		t.Fatal("a refused reservation left an entry")
	}
	got, err := b.Get(ctx, charge)
	want := map[string]refund.Entry{
		intentOf(1).Key: {State: refund.EntryReserved, Fence: 1, Amount: 600},
		intentOf(3).Key: {State: refund.EntryReserved, Fence: 1, Amount: 400},
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
	if _, err := reserve(b, charge, intentOf(1), 1, 300); err != nil {
		t.Fatal(err)
	}
	e, err := reserve(b, charge, intentOf(2), 1, 0)
	if err != nil || e.Amount != 700 {
		t.Fatalf("the rest: %+v, %v; want 700", e, err)
	}
	if stored, ok, err := b.Entry(ctx, charge, intentOf(2)); err != nil || !ok || stored.Amount != 700 || stored.State != refund.EntryReserved {
		t.Fatalf("stored %+v %t %v", stored, ok, err)
	}
	var noRoom *refund.NoRoomError
	if _, err := reserve(b, charge, intentOf(3), 1, 0); !errors.As(err, &noRoom) || noRoom.Refundable != 0 {
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
			_, err := reserve(b, charge, intentOf(i), 1, 200)
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
	first, err := reserve(b, charge, intentOf(1), 1, 300)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := reserve(b, charge, intentOf(1), 1, 300); err != nil || again != first {
		t.Fatalf("again: %+v, %v; want %+v", again, err, first)
	}
	if _, err := reserve(b, charge, intentOf(1), 2, 300); !errors.Is(err, refund.ErrFenced) {
		t.Fatalf("another attempt without a re-fence: %v, want ErrFenced", err)
	}
	mustBalance(t, b, charge, 700, 300, 0)
}

// testSucceedMovesReservedToRefunded: succeed moves the amount, once,
// and folds the entry; a retry finds it done; another fence is refused.
func testSucceedMovesReservedToRefunded(t *testing.T, b refund.Balances) {
	charge := chargeOf(t)
	if _, err := reserve(b, charge, intentOf(1), 1, 300); err != nil {
		t.Fatal(err)
	}
	if err := b.Succeed(ctx, charge, intentOf(1), 2); !errors.Is(err, refund.ErrFenced) {
		t.Fatalf("another fence: %v", err)
	}
	for range 2 {
		if err := b.Succeed(ctx, charge, intentOf(1), 1); err != nil {
			t.Fatal(err)
		}
	}
	mustBalance(t, b, charge, 700, 0, 300)
	got, err := b.Get(ctx, charge)
	if err != nil || got.Entries != 0 || got.ByKey != nil || !got.FoldedAt.Equal(intentOf(1).FoldAt) {
		t.Fatalf("after the success: %+v, %v; want no entry, folded at the intent's fold", got, err)
	}
}

// testReleaseGivesTheAmountBack: release gives the amount back, once, and
// it can be reserved again under another key; a retry finds it done.
func testReleaseGivesTheAmountBack(t *testing.T, b refund.Balances) {
	charge := chargeOf(t)
	if _, err := reserve(b, charge, intentOf(1), 1, 800); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := b.Release(ctx, charge, intentOf(1), 1); err != nil {
			t.Fatal(err)
		}
	}
	mustBalance(t, b, charge, 1000, 0, 0)
	if _, err := reserve(b, charge, intentOf(2), 1, 800); err != nil {
		t.Fatalf("the freed amount: %v", err)
	}
	if _, err := reserve(b, charge, intentOf(1), 1, 100); !errors.Is(err, refund.ErrReleased) {
		t.Fatalf("a released entry reserved again: %v, want ErrReleased", err)
	}
	if e, ok, err := b.Entry(ctx, charge, intentOf(1)); err != nil || !ok || e != released {
		t.Fatalf("the released intent: %+v %t %v", e, ok, err)
	}
	mustBalance(t, b, charge, 200, 800, 0)
	if got, err := b.Get(ctx, charge); err != nil || got.Entries != 1 || len(got.ByKey) != 1 || !got.ReleasedThrough.Equal(intentOf(1).Claimed) {
		t.Fatalf("after one release and one reservation: %+v, %v; want 1 entry, released through the first's claim", got, err)
	}
}

// testAnEndedIntentNeverMovesAgain: once an intent's entry is folded, by
// its success or its release, neither step moves an amount for it again:
// a release of a succeeded intent gives nothing back, and a success of a
// released one refunds nothing (both only fold, and answer done).
func testAnEndedIntentNeverMovesAgain(t *testing.T, b refund.Balances) {
	charge := chargeOf(t)
	for i := range 2 {
		if _, err := reserve(b, charge, intentOf(i), 1, 100); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Succeed(ctx, charge, intentOf(0), 1); err != nil {
		t.Fatal(err)
	}
	if err := b.Release(ctx, charge, intentOf(0), 1); err != nil {
		t.Fatalf("a release of a succeeded intent: %v", err)
	}
	if err := b.Release(ctx, charge, intentOf(1), 1); err != nil {
		t.Fatal(err)
	}
	if err := b.Succeed(ctx, charge, intentOf(1), 1); err != nil {
		t.Fatalf("a success of a released intent: %v", err)
	}
	mustBalance(t, b, charge, 900, 0, 100)
}

// testALateReservationAfterASuccessIsRefused: a reservation's write that
// lands again after its intent succeeded (the SDK's retry of a write that
// had landed) carries the stamp it was issued with, which the success's
// fold passed: refused, whether or not the fold raised the claim
// watermark, and nothing is reserved again.
func testALateReservationAfterASuccessIsRefused(t *testing.T, b refund.Balances) {
	charge := chargeOf(t)
	for i, in := range []refund.Intent{first(intentOf(1)), intentOf(2)} {
		if _, err := reserve(b, charge, in, 1, 300); err != nil {
			t.Fatal(err)
		}
		if err := b.Succeed(ctx, charge, in, 1); err != nil {
			t.Fatal(err)
		}
		// A first attempt's success leaves the claim watermark: only the
		// stamp refuses the write; a take-over's raises it.
		want := map[bool]error{true: refund.ErrStampPassed, false: refund.ErrReleased}[in.First]
		if _, err := reserve(b, charge, in, 1, 300); !errors.Is(err, want) {
			t.Fatalf("intent %d's reservation landing after its success: %v, want %v", i, err, want)
		}
	}
	mustBalance(t, b, charge, 400, 0, 600)
}

// testAFirstAttemptsSuccessKeepsTheClaimWatermark: a first attempt's
// success folds without raising released_through (no earlier attempt of
// its intent exists), so an intent claimed before it reserves with a
// write issued after the fold; one issued before the fold is refused.
func testAFirstAttemptsSuccessKeepsTheClaimWatermark(t *testing.T, b refund.Balances) {
	charge := chargeOf(t)
	in := first(intentOf(2))
	if _, err := reserve(b, charge, in, 1, 300); err != nil {
		t.Fatal(err)
	}
	if err := b.Succeed(ctx, charge, in, 1); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Get(ctx, charge); err != nil || !got.ReleasedThrough.IsZero() || !got.FoldedAt.Equal(in.FoldAt) {
		t.Fatalf("after a first attempt's success: %+v, %v; want folded at %v and no claim watermark", got, err, in.FoldAt)
	}
	earlier := intentOf(1)
	if _, err := reserveAt(b, charge, earlier, 1, 100, in.FoldAt); !errors.Is(err, refund.ErrStampPassed) {
		t.Fatalf("a write issued at the fold: %v, want ErrStampPassed", err)
	}
	if _, err := reserveAt(b, charge, earlier, 1, 100, in.FoldAt.Add(time.Microsecond)); err != nil {
		t.Fatalf("an intent claimed before, its write issued after the fold: %v", err)
	}
	mustBalance(t, b, charge, 600, 100, 300)
}

// testManyRefundsAtConstantSize: 150 refunds of one charge, one after
// another, leave no entry behind: the balance holds the refunds in
// flight, and the figures hold the rest.
func testManyRefundsAtConstantSize(t *testing.T, b refund.Balances) {
	charge := chargeOf(t)
	for i := range 150 {
		in := first(intentOf(i))
		if _, err := reserve(b, charge, in, 1, 1); err != nil {
			t.Fatalf("refund %d: %v", i, err)
		}
		if err := b.Succeed(ctx, charge, in, 1); err != nil {
			t.Fatal(err)
		}
	}
	got, err := b.Get(ctx, charge)
	if err != nil || got.Entries != 0 || got.ByKey != nil {
		t.Fatalf("after 150 refunds: %+v, %v; want no entry", got, err)
	}
	mustBalance(t, b, charge, 850, 0, 150)
}

// testRefenceShutsOutEarlierAttempts: after a take-over re-fences the
// entry, the earlier attempt can neither succeed nor release, and the
// taker learns the stored amount and moves it.
func testRefenceShutsOutEarlierAttempts(t *testing.T, b refund.Balances) {
	charge := chargeOf(t)
	if _, err := reserve(b, charge, intentOf(1), 1, 0); err != nil {
		t.Fatal(err)
	}
	e, err := b.Refence(ctx, charge, intentOf(1), 2)
	if err != nil || e != (refund.Entry{State: refund.EntryReserved, Fence: 2, Amount: 1000}) {
		t.Fatalf("refence: %+v, %v", e, err)
	}
	if again, err := b.Refence(ctx, charge, intentOf(1), 2); err != nil || again != e {
		t.Fatalf("the same fence again (its own write, answered again): %+v, %v", again, err)
	}
	if _, err := b.Refence(ctx, charge, intentOf(1), 1); !errors.Is(err, refund.ErrFenced) {
		t.Fatalf("an earlier fence: %v", err)
	}
	if err := b.Release(ctx, charge, intentOf(1), 1); !errors.Is(err, refund.ErrFenced) {
		t.Fatalf("the earlier attempt released: %v", err)
	}
	if err := b.Succeed(ctx, charge, intentOf(1), 1); !errors.Is(err, refund.ErrFenced) {
		t.Fatalf("the earlier attempt succeeded: %v", err)
	}
	if _, err := reserve(b, charge, intentOf(1), 2, 0); err != nil {
		t.Fatalf("the taker's reservation, already there: %v", err)
	}
	if err := b.Succeed(ctx, charge, intentOf(1), 2); err != nil {
		t.Fatal(err)
	}
	mustBalance(t, b, charge, 0, 0, 1000)
}

// testRefenceFoldsAnIntentWithoutAnEntry: a take-over that finds no
// entry releases the intent in the same step (no attempt reserved, so
// none sent); the earlier attempt's late reservation is refused, and a
// re-fence again answers the same.
func testRefenceFoldsAnIntentWithoutAnEntry(t *testing.T, b refund.Balances) {
	charge := chargeOf(t)
	for range 2 {
		if e, err := b.Refence(ctx, charge, intentOf(1), 2); err != nil || e != released {
			t.Fatalf("re-fence of no entry: %+v, %v; want released", e, err)
		}
	}
	if _, err := reserve(b, charge, intentOf(1), 1, 300); !errors.Is(err, refund.ErrReleased) {
		t.Fatalf("a late reservation of the earlier attempt: %v, want ErrReleased", err)
	}
	if err := b.Release(ctx, charge, intentOf(1), 2); err != nil {
		t.Fatalf("the taker's release of its folded intent: %v", err)
	}
	if _, err := reserve(b, charge, intentOf(2), 1, 300); err != nil {
		t.Fatalf("an intent claimed later: %v", err)
	}
	mustBalance(t, b, charge, 700, 300, 0)
}

// testReleaseWithoutAnEntryFolds: releasing an intent that holds no entry
// (its reservation failed, perhaps without landing) gives nothing back,
// keeps nothing of it, and refuses its late reservation.
func testReleaseWithoutAnEntryFolds(t *testing.T, b refund.Balances) {
	charge := chargeOf(t)
	if _, err := reserve(b, charge, intentOf(1), 1, 100); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := b.Release(ctx, charge, intentOf(2), 1); err != nil {
			t.Fatalf("release of no entry: %v", err)
		}
	}
	if _, err := reserve(b, charge, intentOf(2), 1, 100); !errors.Is(err, refund.ErrReleased) {
		t.Fatalf("a late reservation after the release: %v, want ErrReleased", err)
	}
	mustBalance(t, b, charge, 900, 100, 0)
	if got, err := b.Get(ctx, charge); err != nil || got.Entries != 1 || len(got.ByKey) != 1 {
		t.Fatalf("the balance kept the folded intent: %+v, %v", got, err)
	}
}

// testReleasedThroughOrdersIntents: a release folds every intent claimed
// up to its own claim that holds no entry (the watermark's price: such an
// intent is refused, and its first attempt releases its key); an intent
// that holds an entry, or was claimed later, is untouched.
func testReleasedThroughOrdersIntents(t *testing.T, b refund.Balances) {
	charge := chargeOf(t)
	if _, err := reserve(b, charge, intentOf(1), 1, 100); err != nil {
		t.Fatal(err)
	}
	if err := b.Release(ctx, charge, intentOf(5), 1); err != nil {
		t.Fatal(err)
	}
	earlier := intentOf(3)
	if _, err := reserve(b, charge, earlier, 1, 100); !errors.Is(err, refund.ErrReleased) {
		t.Fatalf("an intent claimed before the released one: %v, want ErrReleased", err)
	}
	sameInstant := refund.Intent{Key: intentOf(6).Key, Claimed: intentOf(5).Claimed}
	if _, err := reserve(b, charge, sameInstant, 1, 100); !errors.Is(err, refund.ErrReleased) {
		t.Fatalf("an intent claimed at the same millisecond: %v, want ErrReleased", err)
	}
	if err := b.Succeed(ctx, charge, intentOf(1), 1); err != nil {
		t.Fatalf("the entry held before the fold: %v", err)
	}
	if _, err := reserve(b, charge, intentOf(7), 1, 100); err != nil {
		t.Fatalf("an intent claimed after: %v", err)
	}
	// A release of an earlier intent never lowers the watermark.
	if err := b.Release(ctx, charge, intentOf(7), 1); err != nil {
		t.Fatal(err)
	}
	if err := b.Release(ctx, charge, intentOf(2), 1); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Get(ctx, charge); err != nil || !got.ReleasedThrough.Equal(intentOf(7).Claimed) {
		t.Fatalf("released through %v, %v; want the latest release's claim, %v", got.ReleasedThrough, err, intentOf(7).Claimed)
	}
	mustBalance(t, b, charge, 900, 0, 100)
}

// testLimitOfEntries: MaxEntries refunds may be in flight at once; the
// next is refused with ErrLimitReached even with room left, until one of
// them ends, succeeded or released.
func testLimitOfEntries(t *testing.T, b refund.Balances) {
	charge := chargeOf(t)
	for i := range refund.MaxEntries {
		if _, err := reserve(b, charge, intentOf(i), 1, 1); err != nil {
			t.Fatalf("reservation %d: %v", i, err)
		}
	}
	next := refund.MaxEntries
	for _, end := range []func(refund.Intent) error{
		func(in refund.Intent) error { return b.Succeed(ctx, charge, in, 1) },
		func(in refund.Intent) error { return b.Release(ctx, charge, in, 1) },
	} {
		if _, err := reserve(b, charge, intentOf(next), 1, 1); !errors.Is(err, refund.ErrLimitReached) {
			t.Fatalf("one more: %v, want ErrLimitReached", err)
		}
		if err := end(intentOf(next - refund.MaxEntries)); err != nil {
			t.Fatal(err)
		}
		if _, err := reserve(b, charge, intentOf(next+1), 1, 1); err != nil {
			t.Fatalf("one more once a refund in flight ended: %v", err)
		}
		next += 2
	}
	mustBalance(t, b, charge, 1000-refund.MaxEntries-1, refund.MaxEntries, 1)
}

// testFailuresNeverGrowTheBalance: on a charge holding MaxEntries-1
// refunds in flight, 200 intents that each reserve and are released (an
// acquirer that refuses every call), 100 releases of intents whose
// reservation failed, and 100 take-overs that find no entry leave the
// balance holding the same entries, and the next refund reserves.
func testFailuresNeverGrowTheBalance(t *testing.T, b refund.Balances) {
	charge := chargeOf(t)
	n := 0
	next := func() refund.Intent { n++; return intentOf(n) }
	for range refund.MaxEntries - 1 {
		if _, err := reserve(b, charge, next(), 1, 1); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 400 {
		in := next()
		switch {
		case i < 200:
			if _, err := reserve(b, charge, in, 1, 1); err != nil {
				t.Fatalf("reservation %d: %v", i, err)
			}
			if err := b.Release(ctx, charge, in, 1); err != nil {
				t.Fatal(err)
			}
		case i < 300:
			if err := b.Release(ctx, charge, in, 1); err != nil {
				t.Fatal(err)
			}
		default:
			if e, err := b.Refence(ctx, charge, in, 2); err != nil || e != released {
				t.Fatalf("take-over %d: %+v, %v", i, e, err)
			}
		}
	}
	got, err := b.Get(ctx, charge)
	if err != nil || got.Entries != refund.MaxEntries-1 || len(got.ByKey) != refund.MaxEntries-1 {
		t.Fatalf("after 400 failures: %d entries counted, %d held, %v; want %d", got.Entries, len(got.ByKey), err, refund.MaxEntries-1)
	}
	if _, err := reserve(b, charge, next(), 1, 1); err != nil {
		t.Fatalf("the next refund: %v", err)
	}
	mustBalance(t, b, charge, 1000-refund.MaxEntries, refund.MaxEntries, 0)
}

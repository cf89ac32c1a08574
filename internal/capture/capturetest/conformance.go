// Package capturetest has the conformance suite every capture.Balances
// must pass, on the same balances as refunds.
package capturetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/capture"
	"github.com/idempotent-payments/idempay/internal/refund"
)

// Balances are one store's balances, both sides of the same items.
type Balances struct {
	Refunds  refund.Balances
	Captures capture.Balances
}

// NewBalancesFunc returns fresh, empty balances for one test.
type NewBalancesFunc func(t *testing.T) Balances

// RunConformance runs the suite every capture.Balances must pass: the
// capture side's steps of docs/design.md §8 and their conditions, the
// bound under concurrency, the closing intents against captures in
// flight, the expiry, and the fold's watermarks shared with refunds.
func RunConformance(t *testing.T, newBalances NewBalancesFunc) {
	for _, c := range []struct {
		name string
		run  func(t *testing.T, b Balances)
	}{
		{"MulticaptureWithinTheAuthorization", testMulticapture},
		{"ACaptureWithoutAnAmountTakesWhatRemains", testCaptureWhatRemains},
		{"AFinalCaptureClosesAndReleasesTheRest", testFinalCapture},
		{"AVoidWaitsForCapturesAndStopsThem", testVoid},
		{"AReleasedVoidReopens", testReleasedVoid},
		{"AnIntentHeldForAnOperatorSaysSo", testHeld},
		{"TheExpiryNeverClosesUnderAnIntentInFlight", testExpiry},
		{"ConcurrentCapturesAndAVoidNeverExceed", testConcurrent},
		{"ReserveIsIdempotentForItsAttempt", testIdempotentReserve},
		{"ALateReservationAfterASuccessIsRefused", testLateReservation},
		{"ATakeOverRefencesACapture", testRefence},
		{"CapturesShareTheLimitWithRefunds", testSharedLimit},
		{"ARefundOnlyBalanceHasNoCaptureSide", testRefundOnly},
		{"AStepOfAnotherKindMovesNothing", testKindDiffers},
		{"RefundsAreBoundedByWhatWasCaptured", testRefundsOfCaptures},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, newBalances(t))
		})
	}
}

var ctx = context.Background()

var charges atomic.Int64

// chargeOf is a charge id of its own for each call.
func chargeOf() string { return fmt.Sprintf("ch_%040x", 1<<32+charges.Add(1)) }

const authorized = 1000

var firstClaim = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// intentOf is the nth intent of a test as its first attempt knows it:
// claimed n seconds after the first, folded half a second after its
// claim.
func intentOf(n int) refund.Intent {
	claimed := firstClaim.Add(time.Duration(n) * time.Second)
	return refund.Intent{Key: fmt.Sprintf("%040x", n+2000), Claimed: claimed, FoldAt: claimed.Add(500 * time.Millisecond), First: true}
}

// reserve reserves for the nth intent, first attempt, a write issued a
// millisecond after its claim.
func reserve(b Balances, charge string, n int, kind capture.Kind, amount int64) (refund.Entry, error) {
	in := intentOf(n)
	return b.Captures.Reserve(ctx, capture.Reservation{ChargeID: charge, Authorized: authorized, Intent: in, Fence: 1,
		Kind: kind, Stamp: in.Claimed.Add(time.Millisecond), Amount: amount})
}

func succeed(t *testing.T, b Balances, charge string, n int, kind capture.Kind) {
	t.Helper()
	if err := b.Captures.Succeed(ctx, charge, intentOf(n), 1, kind); err != nil {
		t.Fatalf("succeed %d: %v", n, err)
	}
}

// mustHold checks the capture side's figures and its invariant.
func mustHold(t *testing.T, b Balances, charge string, want capture.Balance) {
	t.Helper()
	got, err := b.Captures.Get(ctx, charge)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("capture side %+v, want %+v", got, want)
	}
	if got.Capturable+got.Reserved+got.Captured+got.Released != got.Authorized {
		t.Fatalf("capture side %+v does not add up to the authorization", got)
	}
}

func mustRefuse(t *testing.T, what string, err, want error) {
	t.Helper()
	var inFlight *capture.InFlightError
	var noRoom *capture.NoRoomError
	switch w := want.(type) {
	case *capture.InFlightError:
		if !errors.As(err, &inFlight) || *inFlight != *w {
			t.Fatalf("%s: %v, want %v", what, err, want)
		}
	case *capture.NoRoomError:
		if !errors.As(err, &noRoom) || *noRoom != *w {
			t.Fatalf("%s: %v, want %v", what, err, want)
		}
	case *capture.ClosedError:
		var closed *capture.ClosedError
		if !errors.As(err, &closed) || *closed != *w || !errors.Is(err, capture.ErrClosed) {
			t.Fatalf("%s: %v, want %v", what, err, want)
		}
	default:
		if !errors.Is(err, want) {
			t.Fatalf("%s: %v, want %v", what, err, want)
		}
	}
}

// testMulticapture: captures of parts reserve while they fit; one too
// large is refused with what remains; each success moves its amount to
// captured, and makes it refundable.
func testMulticapture(t *testing.T, b Balances) {
	ch := chargeOf()
	for n := range 3 {
		if e, err := reserve(b, ch, n, capture.Partial, 300); err != nil || e.Amount != 300 || e.State != refund.EntryReserved {
			t.Fatalf("capture %d: %+v, %v", n, e, err)
		}
	}
	_, err := reserve(b, ch, 3, capture.Partial, 200)
	mustRefuse(t, "a capture over what remains", err, &capture.NoRoomError{Capturable: 100})
	mustHold(t, b, ch, capture.Balance{Authorized: authorized, Capturable: 100, Reserved: 900})
	for n := range 3 {
		succeed(t, b, ch, n, capture.Partial)
	}
	mustHold(t, b, ch, capture.Balance{Authorized: authorized, Capturable: 100, Captured: 900})
	if got, err := b.Refunds.Get(ctx, ch); err != nil || got.Remaining != 900 || got.Entries != 0 {
		t.Fatalf("the refund side: %+v, %v; want 900 refundable, nothing in flight", got, err)
	}
}

// testCaptureWhatRemains: a capture without an amount resolves what
// remains and stores it in its entry; with nothing left it is refused.
func testCaptureWhatRemains(t *testing.T, b Balances) {
	ch := chargeOf()
	if _, err := reserve(b, ch, 0, capture.Partial, 400); err != nil {
		t.Fatal(err)
	}
	if e, err := reserve(b, ch, 1, capture.Partial, 0); err != nil || e.Amount != 600 {
		t.Fatalf("what remains: %+v, %v; want 600", e, err)
	}
	// Captures in flight hold all of it: they may yet give it back.
	_, err := reserve(b, ch, 2, capture.Partial, 0)
	mustRefuse(t, "a capture of what remains, captures in flight holding it", err, &capture.InFlightError{Kind: capture.Partial})
	_, err = reserve(b, ch, 3, capture.Partial, 1)
	mustRefuse(t, "a capture of an amount, none remaining", err, &capture.NoRoomError{Capturable: 0})
	_, err = reserve(b, ch, 4, capture.Partial, authorized+1)
	mustRefuse(t, "a capture over the whole authorization", err, &capture.NoRoomError{Capturable: 0})
	succeed(t, b, ch, 0, capture.Partial)
	succeed(t, b, ch, 1, capture.Partial)
	_, err = reserve(b, ch, 5, capture.Partial, 0)
	mustRefuse(t, "a capture of what remains, all of it captured", err, capture.ErrNothingCapturable)
	mustHold(t, b, ch, capture.Balance{Authorized: authorized, Captured: 1000})
}

// testFinalCapture: a final capture holds the closing, so no other
// capture or void reserves while it is in flight; its success captures
// its amount, releases the rest and closes the authorization for good. A
// final capture waits for captures in flight.
func testFinalCapture(t *testing.T, b Balances) {
	ch := chargeOf()
	if _, err := reserve(b, ch, 0, capture.Partial, 100); err != nil {
		t.Fatal(err)
	}
	_, err := reserve(b, ch, 1, capture.Final, 300)
	mustRefuse(t, "a final capture while a capture is in flight", err, &capture.InFlightError{Kind: capture.Partial})
	succeed(t, b, ch, 0, capture.Partial)
	if _, err := reserve(b, ch, 2, capture.Final, 300); err != nil {
		t.Fatal(err)
	}
	_, err = reserve(b, ch, 3, capture.Partial, 100)
	mustRefuse(t, "a capture while a final capture is in flight", err, &capture.InFlightError{Kind: capture.Final})
	_, err = reserve(b, ch, 4, capture.Void, 0)
	mustRefuse(t, "a void while a final capture is in flight", err, &capture.InFlightError{Kind: capture.Final})
	mustHold(t, b, ch, capture.Balance{Authorized: authorized, Capturable: 600, Reserved: 300, Captured: 100,
		Closing: intentOf(2).Key, ClosingKind: capture.Final})
	succeed(t, b, ch, 2, capture.Final)
	mustHold(t, b, ch, capture.Balance{Authorized: authorized, Captured: 400, Released: 600, Closed: capture.ClosedCaptured})
	_, err = reserve(b, ch, 5, capture.Partial, 1)
	mustRefuse(t, "a capture after a final one", err, &capture.ClosedError{Closed: capture.ClosedCaptured})
	_, err = reserve(b, ch, 6, capture.Void, 0)
	mustRefuse(t, "a void after a final capture", err, capture.ErrClosed)
}

// testVoid: a void waits for captures in flight, then takes all that
// remains and holds the closing; captures wait for it; its success
// releases the amount and closes the authorization.
func testVoid(t *testing.T, b Balances) {
	ch := chargeOf()
	if _, err := reserve(b, ch, 0, capture.Partial, 250); err != nil {
		t.Fatal(err)
	}
	_, err := reserve(b, ch, 1, capture.Void, 0)
	mustRefuse(t, "a void while a capture is in flight", err, &capture.InFlightError{Kind: capture.Partial})
	succeed(t, b, ch, 0, capture.Partial)
	if e, err := reserve(b, ch, 2, capture.Void, 0); err != nil || e.Amount != 750 {
		t.Fatalf("the void: %+v, %v; want all that remains, 750", e, err)
	}
	_, err = reserve(b, ch, 3, capture.Partial, 1)
	mustRefuse(t, "a capture while a void is in flight", err, &capture.InFlightError{Kind: capture.Void})
	succeed(t, b, ch, 2, capture.Void)
	mustHold(t, b, ch, capture.Balance{Authorized: authorized, Captured: 250, Released: 750, Closed: capture.ClosedVoided})
	_, err = reserve(b, ch, 4, capture.Partial, 1)
	mustRefuse(t, "a capture after the void", err, &capture.ClosedError{Closed: capture.ClosedVoided})
	// A void behind a capture that holds all that remains waits for it
	// (the capture may be declined); once it has taken everything, a void
	// is refused: nothing to release.
	whole := chargeOf()
	if _, err := reserve(b, whole, 0, capture.Partial, 0); err != nil {
		t.Fatal(err)
	}
	_, err = reserve(b, whole, 1, capture.Void, 0)
	mustRefuse(t, "a void behind a capture of everything", err, &capture.InFlightError{Kind: capture.Partial})
	succeed(t, b, whole, 0, capture.Partial)
	_, err = reserve(b, whole, 2, capture.Void, 0)
	mustRefuse(t, "a void of what captures took", err, capture.ErrNothingCapturable)
}

// testHeld: an entry marked held (MarkHeld, by its own fence only) makes
// the refusals behind it say so, and the balance counts it, until its
// fold removes the mark or the mark is taken back; the mark moves
// nothing.
func testHeld(t *testing.T, b Balances) {
	ch := chargeOf()
	if _, err := reserve(b, ch, 0, capture.Partial, 250); err != nil {
		t.Fatal(err)
	}
	if _, err := reserve(b, ch, 1, capture.Partial, 100); err != nil {
		t.Fatal(err)
	}
	if err := b.Captures.MarkHeld(ctx, ch, intentOf(0), 2, true); !errors.Is(err, refund.ErrFenced) {
		t.Fatalf("a mark by another attempt: %v, want refund.ErrFenced", err)
	}
	if err := b.Captures.MarkHeld(ctx, ch, intentOf(7), 1, true); err != nil {
		t.Fatalf("a mark of an intent with no entry: %v, want nil", err)
	}
	_, err := reserve(b, ch, 2, capture.Void, 0)
	mustRefuse(t, "a void behind captures in flight, none held", err, &capture.InFlightError{Kind: capture.Partial})
	for range 2 { // a retried mark finds its own
		if err := b.Captures.MarkHeld(ctx, ch, intentOf(0), 1, true); err != nil {
			t.Fatal(err)
		}
	}
	mustHold(t, b, ch, capture.Balance{Authorized: authorized, Capturable: 650, Reserved: 350, Held: 1})
	_, err = reserve(b, ch, 2, capture.Void, 0)
	mustRefuse(t, "a void behind a held capture", err, &capture.InFlightError{Kind: capture.Partial, Held: true})
	_, err = reserve(b, ch, 3, capture.Final, 0)
	mustRefuse(t, "a final capture behind a held capture", err, &capture.InFlightError{Kind: capture.Partial, Held: true})
	_, _, err = b.Captures.Expire(ctx, ch, authorized)
	mustRefuse(t, "the expiry behind a held capture", err, &capture.InFlightError{Kind: capture.Partial, Held: true})
	// The operator's settlement folds the held entry (here, a release):
	// the mark goes with it.
	if err := b.Captures.Release(ctx, ch, intentOf(0), 1, capture.Partial); err != nil {
		t.Fatal(err)
	}
	succeed(t, b, ch, 1, capture.Partial)
	mustHold(t, b, ch, capture.Balance{Authorized: authorized, Capturable: 900, Captured: 100})
	// A held void: every capture behind it is told so.
	if _, err := reserve(b, ch, 4, capture.Void, 0); err != nil {
		t.Fatal(err)
	}
	if err := b.Captures.MarkHeld(ctx, ch, intentOf(4), 1, true); err != nil {
		t.Fatal(err)
	}
	_, err = reserve(b, ch, 5, capture.Partial, 1)
	mustRefuse(t, "a capture behind a held void", err, &capture.InFlightError{Kind: capture.Void, Held: true})
	// A mark taken back (the record's hold was not written): in flight
	// again, not held.
	if err := b.Captures.MarkHeld(ctx, ch, intentOf(4), 1, false); err != nil {
		t.Fatal(err)
	}
	_, err = reserve(b, ch, 5, capture.Partial, 1)
	mustRefuse(t, "a capture behind the void, its mark taken back", err, &capture.InFlightError{Kind: capture.Void})
	if err := b.Captures.MarkHeld(ctx, ch, intentOf(4), 1, true); err != nil {
		t.Fatal(err)
	}
	succeed(t, b, ch, 4, capture.Void)
	mustHold(t, b, ch, capture.Balance{Authorized: authorized, Captured: 100, Released: 900, Closed: capture.ClosedVoided})
}

// testReleasedVoid: a void released (nothing sent, or declined) gives the
// closing and the amount back: the authorization is capturable again.
func testReleasedVoid(t *testing.T, b Balances) {
	ch := chargeOf()
	if _, err := reserve(b, ch, 0, capture.Void, 0); err != nil {
		t.Fatal(err)
	}
	if err := b.Captures.Release(ctx, ch, intentOf(0), 1, capture.Void); err != nil {
		t.Fatal(err)
	}
	mustHold(t, b, ch, capture.Balance{Authorized: authorized, Capturable: authorized})
	if _, err := reserve(b, ch, 1, capture.Partial, 500); err != nil {
		t.Fatalf("a capture after the void was released: %v", err)
	}
	// The released void's late write can never reserve again.
	_, err := reserve(b, ch, 0, capture.Void, 0)
	mustRefuse(t, "the released void's write landing late", err, refund.ErrReleased)
}

// testExpiry: the sweeper never closes an authorization with a capture or
// a void in flight; once they end it closes it, releasing what remains;
// nothing is captured after; closing it again changes nothing; and it
// says how a closed authorization closed.
func testExpiry(t *testing.T, b Balances) {
	ch := chargeOf()
	if _, err := reserve(b, ch, 0, capture.Partial, 300); err != nil {
		t.Fatal(err)
	}
	_, _, err := b.Captures.Expire(ctx, ch, authorized)
	mustRefuse(t, "the expiry under a capture in flight", err, &capture.InFlightError{Kind: capture.Partial})
	succeed(t, b, ch, 0, capture.Partial)
	if by, closed, err := b.Captures.Expire(ctx, ch, authorized); err != nil || !closed || by != capture.ClosedExpired {
		t.Fatalf("the expiry: closed %t, %v", closed, err)
	}
	mustHold(t, b, ch, capture.Balance{Authorized: authorized, Captured: 300, Released: 700, Closed: capture.ClosedExpired})
	if by, closed, err := b.Captures.Expire(ctx, ch, authorized); err != nil || closed || by != capture.ClosedExpired {
		t.Fatalf("the expiry again: closed %t, %v", closed, err)
	}
	_, err = reserve(b, ch, 1, capture.Partial, 1)
	mustRefuse(t, "a capture after the expiry", err, &capture.ClosedError{Closed: capture.ClosedExpired})
	// An authorization no step touched expires whole.
	untouched := chargeOf()
	if by, closed, err := b.Captures.Expire(ctx, untouched, authorized); err != nil || !closed || by != capture.ClosedExpired {
		t.Fatalf("closed %t, %v", closed, err)
	}
	mustHold(t, b, untouched, capture.Balance{Authorized: authorized, Released: authorized, Closed: capture.ClosedExpired})
	voiding := chargeOf()
	if _, err := reserve(b, voiding, 0, capture.Void, 0); err != nil {
		t.Fatal(err)
	}
	_, _, err = b.Captures.Expire(ctx, voiding, authorized)
	mustRefuse(t, "the expiry under a void in flight", err, &capture.InFlightError{Kind: capture.Void})
	// Once the void has closed it, the expiry says so, from the refused
	// write alone.
	succeed(t, b, voiding, 0, capture.Void)
	if by, closed, err := b.Captures.Expire(ctx, voiding, authorized); err != nil || closed || by != capture.ClosedVoided {
		t.Fatalf("the expiry of a voided authorization: %q, closed %t, %v", by, closed, err)
	}
}

// testConcurrent: 30 captures of 100 and a void at once on an
// authorization of 1,000, each under its own key: what is reserved never
// exceeds it, and the void reserves only with no capture in flight.
func testConcurrent(t *testing.T, b Balances) {
	ch := chargeOf()
	var wg sync.WaitGroup
	var reserved, captures atomic.Int64
	var voided atomic.Bool
	for n := range 31 {
		wg.Go(func() {
			kind, amount := capture.Partial, int64(100)
			if n == 30 {
				kind, amount = capture.Void, 0
			}
			e, err := reserve(b, ch, n, kind, amount)
			switch {
			case err == nil && kind == capture.Void:
				voided.Store(true)
				reserved.Add(e.Amount)
			case err == nil:
				reserved.Add(e.Amount)
				captures.Add(1)
			}
		})
	}
	wg.Wait()
	got, err := b.Captures.Get(ctx, ch)
	if err != nil {
		t.Fatal(err)
	}
	if reserved.Load() > authorized || got.Reserved != reserved.Load() || got.Capturable+got.Reserved != authorized {
		t.Fatalf("reserved %d by the answers, %+v by the balance; want at most %d", reserved.Load(), got, authorized)
	}
	// A void reserves only with no capture in flight, and then no capture
	// reserves after it: either it holds all of it, or captures do.
	if voided.Load() && (captures.Load() != 0 || got.Reserved != authorized || got.Closing != intentOf(30).Key) {
		t.Fatalf("a void reserved beside %d captures: %+v", captures.Load(), got)
	}
	if !voided.Load() && captures.Load() != authorized/100 {
		t.Fatalf("%d captures of 100 reserved, and no void: want all of the authorization in ten", captures.Load())
	}
}

// testIdempotentReserve: the same attempt's reservation, answered again,
// is its own; another attempt's is fenced.
func testIdempotentReserve(t *testing.T, b Balances) {
	ch := chargeOf()
	first, err := reserve(b, ch, 0, capture.Partial, 0)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := reserve(b, ch, 0, capture.Partial, 0); err != nil || again != first {
		t.Fatalf("the same write again: %+v, %v; want %+v", again, err, first)
	}
	in := intentOf(0)
	_, err = b.Captures.Reserve(ctx, capture.Reservation{ChargeID: ch, Authorized: authorized, Intent: in, Fence: 2, Kind: capture.Partial,
		Stamp: in.Claimed.Add(time.Second)})
	mustRefuse(t, "another attempt's reservation", err, refund.ErrFenced)
	mustHold(t, b, ch, capture.Balance{Authorized: authorized, Reserved: authorized})
}

// testLateReservation: a reservation's write that lands after its
// intent's success (its first try, landing late) is refused: the stamp is
// before the fold. So is a release of an ended intent: it folds.
func testLateReservation(t *testing.T, b Balances) {
	ch := chargeOf()
	if _, err := reserve(b, ch, 0, capture.Partial, 100); err != nil {
		t.Fatal(err)
	}
	succeed(t, b, ch, 0, capture.Partial)
	_, err := reserve(b, ch, 0, capture.Partial, 100)
	mustRefuse(t, "the late write", err, refund.ErrStampPassed)
	if err := b.Captures.Succeed(ctx, ch, intentOf(0), 1, capture.Partial); err != nil {
		t.Fatalf("the success again: %v, want done", err)
	}
	if err := b.Captures.Release(ctx, ch, intentOf(0), 1, capture.Partial); err != nil {
		t.Fatalf("a stale release: %v, want a fold", err)
	}
	mustHold(t, b, ch, capture.Balance{Authorized: authorized, Capturable: 900, Captured: 100})
}

// testRefence: a take-over re-fences a capture's entry, after which the
// earlier attempt can move it no more; the take-over's success lands.
func testRefence(t *testing.T, b Balances) {
	ch := chargeOf()
	if _, err := reserve(b, ch, 0, capture.Final, 400); err != nil {
		t.Fatal(err)
	}
	in := intentOf(0)
	in.First = false
	in.FoldAt = in.FoldAt.Add(time.Minute)
	if e, err := b.Captures.Refence(ctx, ch, in, 2); err != nil || e.Fence != 2 || e.Amount != 400 {
		t.Fatalf("re-fence: %+v, %v", e, err)
	}
	mustRefuse(t, "the earlier attempt's success", b.Captures.Succeed(ctx, ch, intentOf(0), 1, capture.Final), refund.ErrFenced)
	if err := b.Captures.Succeed(ctx, ch, in, 2, capture.Final); err != nil {
		t.Fatal(err)
	}
	mustHold(t, b, ch, capture.Balance{Authorized: authorized, Captured: 400, Released: 600, Closed: capture.ClosedCaptured})
}

// testSharedLimit: captures and refunds in flight count toward the same
// limit of intents on one charge.
func testSharedLimit(t *testing.T, b Balances) {
	ch := chargeOf()
	for n := range refund.MaxEntries {
		if _, err := reserve(b, ch, n, capture.Partial, 1); err != nil {
			t.Fatalf("capture %d: %v", n, err)
		}
	}
	_, err := reserve(b, ch, refund.MaxEntries, capture.Partial, 1)
	mustRefuse(t, "one capture more", err, refund.ErrLimitReached)
	if got, err := b.Refunds.Get(ctx, ch); err != nil || got.Entries != refund.MaxEntries {
		t.Fatalf("the balance: %+v, %v; want %d intents in flight", got, err, refund.MaxEntries)
	}
}

// testRefundOnly: a balance refunds alone wrote (a charge captured at
// creation) has no capture side: it reads with no figure but what its
// refunds returned.
func testRefundOnly(t *testing.T, b Balances) {
	ch := chargeOf()
	in := intentOf(0)
	if _, err := b.Refunds.Reserve(ctx, refund.Reservation{ChargeID: ch, ChargeAmount: authorized, Intent: in, Fence: 1,
		Stamp: in.Claimed.Add(time.Millisecond), Amount: 100}); err != nil {
		t.Fatal(err)
	}
	if err := b.Refunds.Succeed(ctx, ch, in, 1); err != nil {
		t.Fatal(err)
	}
	mustHold(t, b, ch, capture.Balance{Refunded: 100})
}

// testRefundsOfCaptures: an authorization's refunds (ChargeAmount 0:
// nothing captured at creation) reserve only what its captures' successes
// made refundable, never what captures in flight hold; refunds and later
// captures interleave.
func testRefundsOfCaptures(t *testing.T, b Balances) {
	ch := chargeOf()
	refundOf := func(n int, amount int64) (refund.Entry, error) {
		in := intentOf(n)
		return b.Refunds.Reserve(ctx, refund.Reservation{ChargeID: ch, Intent: in, Fence: 1, Stamp: in.Claimed.Add(time.Millisecond), Amount: amount})
	}
	_, err := refundOf(0, 1)
	mustNoRoom(t, "a refund before any capture", err, 0)
	if _, err := reserve(b, ch, 1, capture.Partial, 300); err != nil {
		t.Fatal(err)
	}
	_, err = refundOf(2, 0)
	mustNoRoom(t, "a refund while the capture is in flight", err, 0)
	succeed(t, b, ch, 1, capture.Partial)
	if e, err := refundOf(3, 200); err != nil || e.Amount != 200 {
		t.Fatalf("a refund of 200 of 300 captured: %+v, %v", e, err)
	}
	_, err = refundOf(4, 200)
	mustNoRoom(t, "a refund over what remains refundable", err, 100)
	if _, err := reserve(b, ch, 5, capture.Partial, 400); err != nil {
		t.Fatal(err)
	}
	succeed(t, b, ch, 5, capture.Partial)
	if e, err := refundOf(6, 0); err != nil || e.Amount != 500 {
		t.Fatalf("a refund of what remains: %+v, %v; want 500", e, err)
	}
	got, err := b.Refunds.Get(ctx, ch)
	if err != nil || got.Captured != 700 || got.Remaining != 0 || got.Reserved != 700 || got.ChargeAmount+got.Captured != got.Remaining+got.Reserved+got.Refunded {
		t.Fatalf("the refund side: %+v, %v; want 700 captured, all of it reserved", got, err)
	}
}

func mustNoRoom(t *testing.T, what string, err error, refundable int64) {
	t.Helper()
	var noRoom *refund.NoRoomError
	if !errors.As(err, &noRoom) || noRoom.Refundable != refundable {
		t.Fatalf("%s: %v, want only %d refundable", what, err, refundable)
	}
}

// testKindDiffers: a success or a release that names another kind than
// the reservation's is refused and moves nothing: a closing intent's
// entry as a capture's, a capture's as a closing one's, a final
// capture's as a void's.
func testKindDiffers(t *testing.T, b Balances) {
	ch := chargeOf()
	if _, err := reserve(b, ch, 0, capture.Final, 400); err != nil {
		t.Fatal(err)
	}
	mustRefuse(t, "a final capture succeeding as a capture", b.Captures.Succeed(ctx, ch, intentOf(0), 1, capture.Partial), capture.ErrKindDiffers)
	mustRefuse(t, "a final capture released as a void", b.Captures.Release(ctx, ch, intentOf(0), 1, capture.Void), capture.ErrKindDiffers)
	held := capture.Balance{Authorized: authorized, Capturable: 600, Reserved: 400, Closing: intentOf(0).Key, ClosingKind: capture.Final}
	mustHold(t, b, ch, held)
	succeed(t, b, ch, 0, capture.Final)
	other := chargeOf()
	if _, err := reserve(b, other, 1, capture.Partial, 100); err != nil {
		t.Fatal(err)
	}
	mustRefuse(t, "a capture succeeding as a final one", b.Captures.Succeed(ctx, other, intentOf(1), 1, capture.Final), capture.ErrKindDiffers)
	mustHold(t, b, other, capture.Balance{Authorized: authorized, Capturable: 900, Reserved: 100})
}

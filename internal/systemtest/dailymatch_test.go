package systemtest_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/localapi"
	"github.com/idempotent-payments/idempay/internal/match"
)

// TestDailyMatchFindsALateRefund runs the match function on the local
// stack over a day with a refund the acquirer made 15 s after its
// request: the request timed out, the sweeper's reconciler found nothing
// and released it, a second refund of the same amount was made, and then
// the acquirer made the first. The match finds the movement without its
// row and the charge refunded above what it captured, each once, and a
// second run finds nothing new.
func TestDailyMatchFindsALateRefund(t *testing.T) {
	t.Parallel()
	s := newStackWith(t, localapi.StackConfig{Env: append(slices.Clone(recoveryEnv), "MATCH_GRACE=1s"), Timeout: 3 * time.Second, VisibilityTimeout: 5 * time.Second})
	s.Sandbox.SetRefundBound(false)
	ch := chargeOf(t, s, "acct_refund", "match-late-charge", "pm_card_visa", 1000)
	setFaults(t, s, `{"hang_rate": 1, "hang_ms": 15000}`)
	expect(t, postRefund(t, s, "acct_refund", "match-late-refund", ch, `{"amount": 700}`), 503, "REFUND_OUTCOME_PENDING")
	setFaults(t, s, `{}`)
	sweepUntil(t, s, 15*time.Second)
	waitFor(t, 15*time.Second, "the reconciler to release the refund", func() bool { return refundRecord(t, s, "acct_refund", "match-late-refund") == nil })
	if len(s.Sandbox.Refunds()) != 0 {
		t.Fatal("the acquirer made the refund before its release: the test plants nothing")
	}
	if r := postRefund(t, s, "acct_refund", "match-again-refund", ch, `{"amount": 700}`); r.status != 201 {
		t.Fatalf("the second refund: %d %s", r.status, r.body)
	}
	waitFor(t, 20*time.Second, "the acquirer to make the released refund", func() bool { return len(s.Sandbox.Refunds()) == 2 })
	time.Sleep(1100 * time.Millisecond) // the match's grace

	today := acquirer.DayOf(time.Now())
	sums, err := s.RunMatch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(sums, func(m match.Summary) bool { return m.Day.Equal(today) })
	if i < 0 {
		t.Fatalf("no summary of today: %+v", sums)
	}
	want := map[string]int{match.MovementWithoutRow: 1, match.RefundedOverCaptured: 1}
	if got := sums[i]; got.New != 2 || got.Done || len(got.Counts) != len(want) || got.Counts[match.MovementWithoutRow] != 1 || got.Counts[match.RefundedOverCaptured] != 1 {
		t.Fatalf("today: %+v, want %v, 2 new", got, want)
	}
	again, err := s.RunMatch(context.Background())
	if err != nil || again[i].New != 0 || again[i].Unmatched() != 2 {
		t.Fatalf("a second run: %+v, %v", again, err)
	}
}

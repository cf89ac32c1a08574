package systemtest_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/command"
	"github.com/idempotent-payments/idempay/internal/event"
	"github.com/idempotent-payments/idempay/internal/event/eventtest"
	"github.com/idempotent-payments/idempay/internal/localapi"
	"github.com/idempotent-payments/idempay/internal/route"
)

func refundCommand(t *testing.T, account, chargeID, key, request string) string {
	t.Helper()
	b, err := command.Refund(account, chargeID, key, []byte(request)).Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// drained waits until the producer's queue is empty, and fails if any
// command was dead-lettered.
func drained(t *testing.T, s *localapi.Stack, within time.Duration) {
	t.Helper()
	waitFor(t, within, "the commands to be done", func() bool { return queueEmpty(t, s, s.QueueURL) })
	if !queueEmpty(t, s, s.DLQURL) || !queueEmpty(t, s, s.RejectedURL) {
		t.Fatal("a refund command was dead-lettered")
	}
}

// TestRefundsNeverExceedTheChargeOverBothDoors: part 1's race with half
// the requests over the queue. 20 refunds of 20 % of one charge under 20
// keys, 10 over HTTP and 10 as commands, at once, with the sandbox's own
// bound off: exactly 5 are refunded, the acquirer refunded exactly the
// charge, and each refund's event arrives once, to its asker: a
// refund.succeeded for each made, a refund.rejected (REFUND_EXCEEDS_CHARGE)
// for each command the bound refused.
func TestRefundsNeverExceedTheChargeOverBothDoors(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.Sandbox.SetRefundBound(false)
	const acct = "acct_q"
	ch := chargeOf(t, s, acct, "refund-doors-charge", "pm_card_visa", 10000)
	answers := make([]reply, 20)
	var wg sync.WaitGroup
	for i := range answers {
		key := fmt.Sprintf("refund-doors-%d", i)
		wg.Go(func() {
			if i%2 == 0 {
				answers[i] = postRefund(t, s, acct, key, ch, `{"amount": 2000}`)
				return
			}
			send(t, s, refundCommand(t, acct, ch, key, `{"amount": 2000}`))
		})
	}
	wg.Wait()
	drained(t, s, 60*time.Second)
	overHTTP := 0
	for i, r := range answers {
		switch {
		case i%2 == 1:
		case r.status == 201:
			overHTTP++
		case r.status != 422 || r.code() != "REFUND_EXCEEDS_CHARGE":
			t.Fatalf("refund %d: %d %s", i, r.status, r.body)
		}
	}
	mustRefundExactly(t, s, acct, ch, 10000)

	schema := eventtest.Schema(t)
	queued := distinctEvents(t, s, schema, testProducer.Name, 10, 30*time.Second)
	kinds := map[string]int{}
	for _, e := range queued {
		kinds[string(e.Type)+" "+e.Reason]++
		if e.Refund == nil || e.Refund.ChargeID != ch || e.Source != event.SourceQueue(testProducer.Name) || !strings.HasPrefix(e.IdempotencyKey, "refund-doors-") {
			t.Fatalf("a queued refund's event %+v", e)
		}
	}
	if len(queued) != 10 || kinds["refund.succeeded "] != 5-overHTTP || kinds["refund.rejected REFUND_EXCEEDS_CHARGE"] != 5+overHTTP {
		t.Fatalf("the producer received %v (%d events); %d refunds were made over HTTP", kinds, len(queued), overHTTP)
	}
	overTheWeb := distinctEvents(t, s, schema, event.ProducerHTTP, 1+overHTTP, 20*time.Second)
	if len(overTheWeb) != 1+overHTTP {
		t.Fatalf("the HTTP subscriber received %d events, want the charge's and %d refunds'", len(overTheWeb), overHTTP)
	}
}

// TestRefundOneKeyOverBothDoors: a queued refund then an HTTP retry of
// its key, and an HTTP refund then a command with its key: one acquirer
// refund each, one answer (the same refund), and the command that
// replays tells the refund's event again, to its first asker.
func TestRefundOneKeyOverBothDoors(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.Sandbox.SetRefundBound(false)
	const acct = "acct_q"
	ch := chargeOf(t, s, acct, "refund-one-key-charge", "pm_card_visa", 3000)
	schema := eventtest.Schema(t)

	send(t, s, refundCommand(t, acct, ch, "refund-queued-first", `{"amount": 1000}`))
	told := receiveEvents(t, s, schema, testProducer.Name, 1, 30*time.Second)
	if len(told) != 1 || told[0].Type != event.RefundSucceeded || told[0].Refund.Amount != 1000 {
		t.Fatalf("the queued refund told %+v", told)
	}
	retry := postRefund(t, s, acct, "refund-queued-first", ch, `{"amount": 1000}`)
	if retry.status != 201 || retry.header.Get("Location") != route.RefundLocation(told[0].Refund.ID) {
		t.Fatalf("the HTTP retry of a queued refund: %d %s %s", retry.status, retry.header.Get("Location"), retry.body)
	}

	first := postRefund(t, s, acct, "refund-http-first", ch, `{"amount": 500}`)
	if first.status != 201 {
		t.Fatalf("the HTTP refund: %d %s", first.status, first.body)
	}
	send(t, s, refundCommand(t, acct, ch, "refund-http-first", `{"amount": 500}`))
	drained(t, s, 30*time.Second)
	web := distinctEvents(t, s, schema, event.ProducerHTTP, 2, 20*time.Second) // the charge's, the HTTP refund's
	var refunds []event.Event
	for _, e := range web {
		if e.Type == event.RefundSucceeded {
			refunds = append(refunds, e)
		}
	}
	if len(refunds) != 1 || route.RefundLocation(refunds[0].Refund.ID) != first.header.Get("Location") || refunds[0].Refund.Amount != 500 {
		t.Fatalf("the HTTP subscriber received %+v", web)
	}
	mustRefundExactly(t, s, acct, ch, 1500)
	if n := len(s.Sandbox.Refunds()); n != 2 {
		t.Fatalf("%d acquirer refunds, want 2: one per intent", n)
	}
}

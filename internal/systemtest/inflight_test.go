package systemtest_test

import (
	"context"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/localapi"
)

// TestInFlightCommandWaitsOutTheLease: an HTTP request holds the key with
// a 30 s lease and takes 7 s at the acquirer; a command with the same key
// arrives meanwhile. The command is hidden until the lease has ended plus
// T + skew, so it is never dead-lettered, and it ends as a replay: one
// authorization. With short fixed delays and few receives the command would
// reach the DLQ before the owner finished.
func TestInFlightCommandWaitsOutTheLease(t *testing.T) {
	t.Parallel()
	// Leases: the 10 s function timeout plus a 20 s margin = 30 s.
	// T + skew = 9 s + 1 s.
	s := newStackWith(t, localapi.StackConfig{
		Env:     []string{"LEASE_MARGIN=20s", "ACQUIRER_TIMEOUT=8s", "IN_TRANSIT_BOUND=9s", "CLOCK_SKEW=1s"},
		Timeout: 10 * time.Second, VisibilityTimeout: 5 * time.Second, MaxReceives: 3,
	})
	setFaults(t, s, `{"latency_ms": 7000}`)
	const account, key = "acct_inflight", "inflight-http-then-sqs"
	answered := make(chan reply, 1)
	go func() { answered <- postCharge(t, s, account, key, visa) }()
	waitForRecord(t, s, account, key, "IN_PROGRESS", "the HTTP request to claim the key")
	claimed := time.Now()
	send(t, s, chargeCommand(account, key, visa))

	if r := <-answered; r.status != 201 {
		t.Fatalf("HTTP: %d %s", r.status, r.body)
	}
	// The owner finished after about 7 s; the command stays hidden until
	// its lease (30 s) has ended plus T + skew, not for 2 s at a time.
	time.Sleep(time.Until(claimed.Add(12 * time.Second)))
	if queueEmpty(t, s, s.QueueURL) || !(queueEmpty(t, s, s.DLQURL) && queueEmpty(t, s, s.RejectedURL)) {
		t.Fatal("the command was consumed or dead-lettered before the owner's lease ended")
	}
	waitFor(t, 45*time.Second, "the command to be consumed", func() bool { return queueEmpty(t, s, s.QueueURL) })
	if waited := time.Since(claimed); waited < 30*time.Second {
		t.Fatalf("the command was consumed %s after the claim, before the owner's lease ended", waited)
	}
	if !(queueEmpty(t, s, s.DLQURL) && queueEmpty(t, s, s.RejectedURL)) {
		t.Fatal("the in-flight command was dead-lettered")
	}
	if n := authorizations(s); n != 1 {
		t.Fatalf("%d authorizations, want 1: the command is a replay", n)
	}
}

// TestOwnerDeathThenQueuedCommandExecutesOnce: the owner claims and dies
// before sending; a command with the same key finds it in flight and is
// hidden until the lease has ended plus T + skew. Meanwhile the sweeper
// flags the record and the reconciler, on its own queue, releases the key.
// The command then comes back and executes once: one authorization, never
// dead-lettered. The test delivers each batch itself, so the order is the
// one described, every time.
func TestOwnerDeathThenQueuedCommandExecutesOnce(t *testing.T) {
	t.Parallel()
	s := newStackWith(t, localapi.StackConfig{Env: recoveryEnv, Timeout: 3 * time.Second, VisibilityTimeout: 5 * time.Second, NoEventSourceMapping: true})
	ctx := context.Background()
	const account, key = "acct_death", "owner-dies-before-sending"
	pk := claimAndDie(t, s, account, key, 4*time.Second)
	guard := idem.NewGuard(dynamo.Open(s.DynamoDB, s.TableName).Store(), idem.Config{})
	rec, err := guard.Lookup(ctx, pk)
	if err != nil {
		t.Fatal(err)
	}
	settled := rec.LeaseExpiresAt.Add(2 * time.Second) // T + skew of recoveryEnv

	send(t, s, chargeCommand(account, key, visa))
	msgs := receiveAll(t, s, s.QueueURL, 1, 5*time.Second)
	if len(msgs) != 1 {
		t.Fatalf("received %d commands", len(msgs))
	}
	if resp := deliver(t, s.Consumer, s.QueueARN, msgs); len(resp.BatchItemFailures) != 1 {
		t.Fatalf("in-flight command: %+v, want it kept", resp)
	}
	// receiveAll's last long poll (1 s) may end up to 1 s past its window.
	if back := receiveAll(t, s, s.QueueURL, 1, time.Until(settled.Add(-1300*time.Millisecond))); len(back) != 0 {
		t.Fatal("the command came back before the lease ended plus T + skew")
	}

	time.Sleep(time.Until(settled.Add(100 * time.Millisecond)))
	if r, err := s.Sweep(ctx); err != nil || r.Flagged != 1 {
		t.Fatalf("sweep: %+v, %v", r, err)
	}
	reconcile := receiveAll(t, s, s.ReconcileURL, 1, 5*time.Second)
	if len(reconcile) != 1 {
		t.Fatalf("%d reconcile commands", len(reconcile))
	}
	if resp := deliver(t, s.Reconciler, s.ReconcileARN, reconcile); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("reconcile: %+v", resp)
	}
	if st, _ := recordStatus(t, s, account, key); st != "" {
		t.Fatalf("after the reconcile the record is %q, want released", st)
	}

	back := receiveAll(t, s, s.QueueURL, 1, 5*time.Second)
	if len(back) != 1 {
		t.Fatalf("the command did not come back: %v", back)
	}
	if resp := deliver(t, s.Consumer, s.QueueARN, back); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("second delivery: %+v", resp)
	}
	if st, attempt := recordStatus(t, s, account, key); st != "COMPLETED" || attempt != "1" {
		t.Fatalf("record %q attempt %s, want COMPLETED by a fresh claim", st, attempt)
	}
	if n := authorizations(s); n != 1 {
		t.Fatalf("%d authorizations, want 1", n)
	}
	if !(queueEmpty(t, s, s.DLQURL) && queueEmpty(t, s, s.RejectedURL)) {
		t.Fatal("a message was dead-lettered")
	}
}

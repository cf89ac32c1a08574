package systemtest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/acquirer/acquirerhttp"
	"github.com/idempotent-payments/idempay/internal/command"
	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/event"
	"github.com/idempotent-payments/idempay/internal/event/eventtest"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/localapi"
)

// recoveryEnv makes leases short so crash recovery runs in seconds: a 3 s
// function timeout plus a 1 s margin, T = 1.5 s, skew 0.5 s.
var recoveryEnv = []string{"LEASE_MARGIN=1s", "IN_TRANSIT_BOUND=1500ms", "CLOCK_SKEW=500ms", "ACQUIRER_TIMEOUT=1s"}

func recoveryStack(t *testing.T) *localapi.Stack {
	t.Helper()
	return newStackWith(t, localapi.StackConfig{Env: recoveryEnv, Timeout: 3 * time.Second, VisibilityTimeout: 5 * time.Second})
}

// sweepUntil runs the sweeper until it has flagged at least one record.
func sweepUntil(t *testing.T, s *localapi.Stack, within time.Duration) {
	t.Helper()
	waitFor(t, within, "the sweeper to flag the record", func() bool {
		r, err := s.Sweep(context.Background())
		if err != nil {
			t.Fatalf("sweep: %v", err)
		}
		return r.Flagged > 0
	})
}

// waitForRecord waits up to 15 s for the record of (account, key) to reach
// status ("" for absent); what names the event in the failure.
func waitForRecord(t *testing.T, s *localapi.Stack, account, key, status, what string) {
	t.Helper()
	waitFor(t, 15*time.Second, what, func() bool {
		st, _ := recordStatus(t, s, account, key)
		return st == status
	})
}

// reconcileNow delivers a reconcile command to the consumer at once, as a
// duplicate or early command would arrive.
func reconcileNow(t *testing.T, s *localapi.Stack, pk string) {
	t.Helper()
	body, err := command.Reconcile(pk).Encode()
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := json.Marshal(events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m-" + pk[len(pk)-8:], Body: body, EventSourceARN: s.ReconcileARN}}})
	if _, err := s.Reconciler.Invoke(context.Background(), payload); err != nil {
		t.Fatal(err)
	}
}

// claimAndDie leaves a record as a worker killed right after its claim,
// before it sent anything: in flight, lease ending after lease.
func claimAndDie(t *testing.T, s *localapi.Stack, account, key string, lease time.Duration) string {
	t.Helper()
	guard := idem.NewGuard(dynamo.Open(s.DynamoDB, s.TableName).Store(), idem.Config{DefaultLease: lease, Protocol: s.Protocol})
	scope := idem.Scope{Operation: "charge", Account: account, Key: key}
	if _, err := guard.Begin(context.Background(), scope, canonicalOf(t, visa)); err != nil {
		t.Fatal(err)
	}
	return scope.PK()
}

// TestCrashAfterAuthorization: the instance is SIGKILLed after the acquirer
// authorized but before the completion was stored. The sweeper flags the
// record, the consumer reconciles it to COMPLETED with the acquirer's
// outcome, and the client's retry gets that outcome as a replay.
func TestCrashAfterAuthorization(t *testing.T) {
	t.Parallel()
	s := recoveryStack(t)
	setFaults(t, s, `{"response_delay_ms": 2500}`)
	done := make(chan reply, 1)
	go func() { done <- postCharge(t, s, "acct_r", "crash-after-auth-1", visa) }()
	waitFor(t, 5*time.Second, "the authorization", func() bool { return authorizations(s) == 1 })
	if killed := s.Charge.KillBusy(); killed != 1 {
		t.Fatalf("killed %d instances, want 1", killed)
	}
	if r := <-done; r.status < 500 {
		t.Fatalf("the killed invocation answered %d", r.status)
	}
	setFaults(t, s, `{}`)
	if st, _ := recordStatus(t, s, "acct_r", "crash-after-auth-1"); st != "IN_PROGRESS" {
		t.Fatalf("after the crash: record %q", st)
	}
	sweepUntil(t, s, 15*time.Second)
	waitForRecord(t, s, "acct_r", "crash-after-auth-1", "COMPLETED", "the reconciliation")
	r := postCharge(t, s, "acct_r", "crash-after-auth-1", visa)
	if r.status != 201 || r.header.Get("Idempotent-Replay") != "true" {
		t.Fatalf("client retry: %d %s", r.status, r.body)
	}
	var ch map[string]any
	_ = json.Unmarshal(r.body, &ch)
	if auths := s.Sandbox.Authorizations(); len(auths) != 1 || ch["authorization_id"] != auths[0].ID {
		t.Fatalf("replay %v is not the acquirer's authorization %+v", ch, auths)
	}
	// The reconciler settled a charge asked over HTTP: one captured event,
	// to the HTTP subscriber, with the client's key.
	got := distinctEvents(t, s, eventtest.Schema(t), event.ProducerHTTP, 1, 20*time.Second)
	if len(got) != 1 || got[0].Type != event.Captured || got[0].IdempotencyKey != "crash-after-auth-1" || got[0].Source != event.SourceHTTP ||
		got[0].Charge.AuthorizationID != ch["authorization_id"] {
		t.Fatalf("events %+v", got)
	}
}

// TestCrashBeforeSending: the worker died after its claim, before the
// acquirer saw anything. Reconciliation releases the key; the client's next
// retry executes exactly once.
func TestCrashBeforeSending(t *testing.T) {
	t.Parallel()
	s := recoveryStack(t)
	claimAndDie(t, s, "acct_r", "crash-before-send-1", time.Second)
	if r := postCharge(t, s, "acct_r", "crash-before-send-1", visa); r.status != 409 {
		t.Fatalf("while the dead worker's lease runs: %d", r.status)
	}
	time.Sleep(time.Second)
	sweepUntil(t, s, 15*time.Second)
	waitForRecord(t, s, "acct_r", "crash-before-send-1", "", "the release")
	r := postCharge(t, s, "acct_r", "crash-before-send-1", visa)
	if r.status != 201 || r.header.Get("Idempotent-Replay") != "" {
		t.Fatalf("retry after release: %d %s", r.status, r.body)
	}
	if n := authorizations(s); n != 1 {
		t.Fatalf("%d authorizations, want 1", n)
	}
}

// TestRetryRacesReconciler: a client retry and the reconcile consumer reach
// the same stale record at once: one takes over, one authorization.
func TestRetryRacesReconciler(t *testing.T) {
	t.Parallel()
	s := recoveryStack(t)
	for round := range 3 {
		key := "race-reconcile-" + string(rune('a'+round))
		pk := claimAndDie(t, s, "acct_r", key, 100*time.Millisecond)
		time.Sleep(2200 * time.Millisecond) // past T + skew: the reconciler may act
		var wg sync.WaitGroup
		var first reply
		wg.Go(func() { first = postCharge(t, s, "acct_r", key, visa) })
		wg.Go(func() { reconcileNow(t, s, pk) })
		wg.Wait()
		r := first
		for deadline := time.Now().Add(10 * time.Second); r.status != 201 && time.Now().Before(deadline); {
			time.Sleep(200 * time.Millisecond)
			r = postCharge(t, s, "acct_r", key, visa)
		}
		if r.status != 201 {
			t.Fatalf("round %d: client never got its charge: %d %s", round, r.status, r.body)
		}
		if st, attempt := recordStatus(t, s, "acct_r", key); st != "COMPLETED" || attempt > "2" {
			t.Fatalf("round %d: record %s attempt %s", round, st, attempt)
		}
	}
	if n := authorizations(s); n != 3 {
		t.Fatalf("%d authorizations for 3 intents, want 3", n)
	}
}

// TestRule3ReconcilerWaitsForInTransit is the model checker's path (a): a
// zombie worker's request is still in transit when its lease has ended. A
// reconcile command arriving then must not release (the acquirer's "absent"
// proves nothing yet); once T + skew have passed the request has landed and
// the reconciler completes with it. The control plays the reconciler without
// the bound by hand on a second key: the key is released, the request lands,
// and the charge is lost — money taken, no record left to find it.
func TestRule3ReconcilerWaitsForInTransit(t *testing.T) {
	t.Parallel()
	s := recoveryStack(t)
	ctx := context.Background()
	acq, err := acquirerhttp.NewClient(s.SandboxURL, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	guard := idem.NewGuard(dynamo.Open(s.DynamoDB, s.TableName).Store(), idem.Config{})
	setFaults(t, s, `{"latency_ms": 1300}`) // processed 1.3 s after arrival, within T = 1.5 s

	// zombie claims with a 300 ms lease and sends late, after its lease ended.
	zombie := func(key string) (pk string, landed chan struct{}) {
		pk = claimAndDie(t, s, "acct_r", key, 300*time.Millisecond)
		rec, err := guard.Lookup(ctx, pk)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(400 * time.Millisecond)
		landed = make(chan struct{})
		go func() {
			defer close(landed)
			_, _ = acq.Authorize(ctx, rec.DownstreamKey, acquirer.Request{Amount: 25000, Currency: "BRL", PaymentMethod: "pm_card_visa", OrderID: "123"})
		}()
		waitFor(t, 5*time.Second, "the zombie's request to arrive", func() bool { return s.Sandbox.Received() > 0 })
		return pk, landed
	}

	pk, landed := zombie("in-transit-1")
	reconcileNow(t, s, pk)
	if st, _ := recordStatus(t, s, "acct_r", "in-transit-1"); st != "IN_PROGRESS" {
		t.Fatalf("a reconcile within T + skew of the lease's end resolved the record to %q while its request was in transit", st)
	}
	<-landed
	sweepUntil(t, s, 15*time.Second)
	waitForRecord(t, s, "acct_r", "in-transit-1", "COMPLETED", "the reconciliation")

	// Control: the same path with the reconciler's bound dropped loses the
	// charge. The engine will not take over before the record's wait-out,
	// so the control writes to the store by hand: take over, ask, release.
	before := authorizations(s)
	pk, landed = zombie("in-transit-control")
	store := dynamo.Open(s.DynamoDB, s.TableName).Store()
	rec, err := guard.Lookup(ctx, pk)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.TakeOver(ctx, idem.Handover{PK: pk, OldToken: rec.LeaseToken, NewToken: "control", LeaseExpiresAt: time.Now().Add(time.Minute), Now: time.Now(), Protocol: rec.Protocol}); err != nil {
		t.Fatal(err)
	}
	if _, err := acq.Lookup(ctx, rec.DownstreamKey); !errors.Is(err, acquirer.ErrNotFound) {
		t.Fatalf("control lookup: %v, want absent while in transit", err)
	}
	if err := store.Release(ctx, pk, "control"); err != nil {
		t.Fatal(err)
	}
	<-landed
	if st, _ := recordStatus(t, s, "acct_r", "in-transit-control"); st != "" || authorizations(s) != before+1 {
		t.Fatalf("control: record %q, %d new authorizations; want the charge lost (authorized, no record)", st, authorizations(s)-before)
	}
}

// TestIdleRuntimeDeathIsReplacedFirst: a function process that dies
// between invocations is replaced before the pool hands its instance the
// next request, as Lambda replaces a dead execution environment; no client
// sees a 500 for it.
func TestIdleRuntimeDeathIsReplacedFirst(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	for i := range 4 { // every instance has served, so each has a runtime
		if r := postCharge(t, s, "acct_a", fmt.Sprintf("idle-death-warm-%d", i), visa); r.status != http.StatusCreated {
			t.Fatalf("warm-up: %d %s", r.status, r.body)
		}
	}
	kills := 0
	for round := range 5 {
		kills += s.Charge.KillIdleRuntimes()
		for i := range 4 {
			if r := postCharge(t, s, "acct_a", fmt.Sprintf("idle-death-%d-%d", round, i), visa); r.status != http.StatusCreated {
				t.Fatalf("round %d request %d after %d kills: %d %s", round, i, kills, r.status, r.body)
			}
		}
	}
	if kills < 5 || s.Charge.Replaced() != kills {
		t.Fatalf("killed %d idle runtimes, %d instances replaced: want at least one per round, each replaced once", kills, s.Charge.Replaced())
	}
}

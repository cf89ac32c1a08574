package sweep_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/idempotent-payments/idempay/internal/command"
	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/dynamo/dynamotest"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/idem/idemtest"
	"github.com/idempotent-payments/idempay/internal/queue"
	"github.com/idempotent-payments/idempay/internal/sweep"
	"github.com/idempotent-payments/idempay/internal/sweep/sweeptest"
)

// fixture: a fresh store and queue, records claimed on a test clock.
type fixture struct {
	clock *idemtest.Clock
	guard *idem.Guard
	store idem.Store
	queue commands
}

// commands is a queue of reconcile commands that the test can drain.
type commands interface {
	sweep.Queue
	drain(t testing.TB) []string
}

// stores are the two stores every sweeper test runs on: DynamoDB Local
// with the SQS emulator, and memory with a queue in memory.
var stores = []struct {
	name string
	new  func(t testing.TB) (idem.Store, commands)
}{
	{"dynamodb", func(t testing.TB) (idem.Store, commands) {
		if os.Getenv("AWS_ENDPOINT_URL_SQS") == "" && os.Getenv("AWS_ENDPOINT_URL") == "" {
			t.Fatal("AWS_ENDPOINT_URL_SQS is not set: run `make test`")
		}
		ddb := dynamotest.Client(t)
		table := dynamotest.NewTableFor(t, ddb, false) // the expiry index too, for the purge
		cfg, err := config.LoadDefaultConfig(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		client := sqs.NewFromConfig(cfg)
		q, err := client.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(table + "-reconcile")})
		if err != nil {
			t.Fatal(err)
		}
		return dynamo.Open(ddb, table).Store(), &sqsQueue{Queue: queue.New(client, *q.QueueUrl), sqs: client, url: *q.QueueUrl}
	}},
	{"memory", func(testing.TB) (idem.Store, commands) {
		return idemtest.NewMemoryStore(), &memoryQueue{}
	}},
}

// eachStore runs test on every store.
func eachStore(t *testing.T, test func(t *testing.T, f *fixture)) {
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			test(t, setup(t, s.new))
		})
	}
}

func setup(t testing.TB, newStore func(testing.TB) (idem.Store, commands)) *fixture {
	t.Helper()
	store, q := newStore(t)
	clock := idemtest.NewClock(time.Now().Truncate(time.Millisecond))
	return &fixture{
		clock: clock,
		guard: idem.NewGuard(store, idem.Config{Now: clock.Now, DefaultLease: time.Second}),
		store: store, queue: q,
	}
}

// claim leaves n records in flight, as workers that died after claiming.
func (f *fixture) claim(t testing.TB, prefix string, n int) map[string]bool {
	t.Helper()
	pks := map[string]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			s := idem.Scope{Operation: "charge", Account: "acct_s", Key: fmt.Sprintf("%s-%06d", prefix, i)}
			if _, err := f.guard.Begin(context.Background(), s, idem.Canonical{{Name: "amount", Value: "1"}}); err != nil {
				t.Error(err)
			}
			mu.Lock()
			pks[s.PK()] = true
			mu.Unlock()
		})
	}
	wg.Wait()
	return pks
}

func (f *fixture) sweeper(cfg sweep.Config) *sweep.Sweeper {
	cfg.InTransitBound, cfg.ClockSkew, cfg.Now = 5*time.Second, time.Second, f.clock.Now
	return sweep.New(f.store, f.queue, cfg)
}

func (f *fixture) drain(t testing.TB) []string { return f.queue.drain(t) }

type sqsQueue struct {
	*queue.Queue
	sqs *sqs.Client
	url string
}

// drain reads every reconcile command from the queue.
func (q *sqsQueue) drain(t testing.TB) []string {
	t.Helper()
	var bodies []string
	for {
		out, err := q.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(q.url), MaxNumberOfMessages: 10, WaitTimeSeconds: 0})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			return reconciled(t, bodies)
		}
		for _, m := range out.Messages {
			bodies = append(bodies, *m.Body)
			_, _ = q.sqs.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(q.url), ReceiptHandle: m.ReceiptHandle})
		}
	}
}

// memoryQueue is the reconcile queue in memory, drained as commands.
type memoryQueue struct{ sweeptest.Queue }

func (q *memoryQueue) drain(t testing.TB) []string { return reconciled(t, q.Drain()) }

// reconciled decodes reconcile commands into their pks.
func reconciled(t testing.TB, bodies []string) []string {
	t.Helper()
	pks := make([]string, 0, len(bodies))
	for _, b := range bodies {
		c, err := command.Decode(b)
		if err != nil || c.Type != command.TypeReconcile {
			t.Fatalf("command %s: %v", b, err)
		}
		pks = append(pks, c.PK)
	}
	return pks
}

// TestSweepFlagsOnlyPastTheBound: a lease ended less than T + skew ago is
// left alone (its request may be in transit); past it, flagged once.
func TestSweepFlagsOnlyPastTheBound(t *testing.T) {
	eachStore(t, func(t *testing.T, f *fixture) {
		stale := f.claim(t, "stale", 3)
		done := idem.Scope{Operation: "charge", Account: "acct_s", Key: "completed-key"}
		c, _ := f.guard.Begin(context.Background(), done, nil)
		if err := c.Lease.Complete(context.Background(), idem.Response{StatusCode: 201}); err != nil {
			t.Fatal(err)
		}
		s := f.sweeper(sweep.Config{})
		f.clock.Advance(time.Second + 5*time.Second) // lease ended exactly T ago: < T + skew
		if r, err := s.Run(context.Background()); err != nil || r.Flagged != 0 {
			t.Fatalf("within the bound: %+v, %v; want nothing flagged", r, err)
		}
		f.clock.Advance(1100 * time.Millisecond)
		r, err := s.Run(context.Background())
		if err != nil || r.Flagged != 3 || !r.Complete || r.OldestStale < 6*time.Second {
			t.Fatalf("past the bound: %+v, %v", r, err)
		}
		got := f.drain(t)
		if len(got) != 3 {
			t.Fatalf("enqueued %v", got)
		}
		for _, pk := range got {
			if !stale[pk] {
				t.Fatalf("enqueued %s, which is not stale", pk)
			}
		}
	})
}

// TestSweepUnderDeadline: a run with less time than its work stops in time
// and says so; the next run finishes; nothing is flagged twice within the
// back-off; records flagged three times are reported failing.
func TestSweepUnderDeadline(t *testing.T) {
	eachStore(t, func(t *testing.T, f *fixture) {
		const n = 400
		stale := f.claim(t, "deadline", n)
		f.store = slowFlags{f.store} // as slow as a network, in memory too
		f.clock.Advance(time.Minute)
		// 400 flags of at least 5 ms, two at a time, take at least 1 s:
		// more than the 500 ms before the stop point. The margin is wide
		// enough for the two writes under way there, on a loaded machine
		// too (DynamoDB Local then takes over 100 ms for one).
		const deadline, margin = time.Second, 500 * time.Millisecond
		s := f.sweeper(sweep.Config{StopMargin: margin, Parallelism: 2})

		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		start := time.Now()
		first, err := s.Run(ctx)
		cancel()
		if elapsed := time.Since(start); elapsed > deadline {
			t.Fatalf("run with a %s deadline took %s", deadline, elapsed)
		}
		if err != nil || first.Complete || first.HeldCounted || first.Flagged == 0 || first.Flagged >= n {
			t.Fatalf("short run: %+v, %v; want a partial run that says nothing of held records", first, err)
		}
		second, err := s.Run(context.Background())
		if err != nil || !second.Complete || first.Flagged+second.Flagged != n || second.BackedOff != first.Flagged {
			t.Fatalf("second run: %+v after %+v, %v", second, first, err)
		}
		seen := map[string]int{}
		for _, pk := range f.drain(t) {
			seen[pk]++
		}
		for pk := range stale {
			if seen[pk] != 1 {
				t.Fatalf("%s enqueued %d times, want once", pk, seen[pk])
			}
		}
		third, err := s.Run(context.Background())
		if err != nil || third.Flagged != 0 || third.BackedOff != n {
			t.Fatalf("within the back-off: %+v, %v", third, err)
		}
		// Back-off doubles: 1 min after the first flag, 2 after the second.
		f.clock.Advance(61 * time.Second)
		if r, _ := s.Run(context.Background()); r.Flagged != n {
			t.Fatalf("after 1 min: flagged %d, want %d", r.Flagged, n)
		}
		f.clock.Advance(61 * time.Second)
		if r, _ := s.Run(context.Background()); r.Flagged != 0 {
			t.Fatalf("1 min after the second flag: flagged %d, want 0 (back-off 2 min)", r.Flagged)
		}
		f.clock.Advance(61 * time.Second)
		r, _ := s.Run(context.Background())
		if r.Flagged != n {
			t.Fatalf("after 2 min: flagged %d", r.Flagged)
		}
		if r, _ := s.Run(context.Background()); r.Failing != n {
			t.Fatalf("after 3 flags: failing %d, want %d", r.Failing, n)
		}
	})
}

// slowFlags takes at least 5 ms per flag.
type slowFlags struct{ idem.Store }

func (s slowFlags) Flag(ctx context.Context, e idem.InFlight, now time.Time) error {
	time.Sleep(5 * time.Millisecond)
	return s.Store.Flag(ctx, e, now)
}

// TestConcurrentSweepersFlagOnce: two sweepers on the same records flag
// each once between them.
func TestConcurrentSweepersFlagOnce(t *testing.T) {
	eachStore(t, func(t *testing.T, f *fixture) {
		f.claim(t, "concurrent", 100)
		f.clock.Advance(time.Minute)
		var wg sync.WaitGroup
		reports := make([]sweep.Report, 2)
		for i := range reports {
			wg.Go(func() {
				r, err := f.sweeper(sweep.Config{}).Run(context.Background())
				if err != nil {
					t.Error(err)
				}
				reports[i] = r
			})
		}
		wg.Wait()
		if total := reports[0].Flagged + reports[1].Flagged; total != 100 {
			t.Fatalf("flagged %d + %d, want 100 in all", reports[0].Flagged, reports[1].Flagged)
		}
		if n := len(f.drain(t)); n != 100 {
			t.Fatalf("enqueued %d, want 100", n)
		}
	})
}

// BenchmarkSweep: stale records flagged and enqueued per second, 10,000
// records over the 32 shards.
func BenchmarkSweep(b *testing.B) {
	f := setup(b, stores[0].new) // DynamoDB Local and SQS
	const n = 10000
	f.claim(b, "bench", n)
	for b.Loop() {
		f.clock.Advance(2 * time.Hour) // past any back-off
		start := time.Now()
		r, err := f.sweeper(sweep.Config{}).Run(context.Background())
		if err != nil || r.Flagged != n {
			b.Fatalf("%+v, %v", r, err)
		}
		b.ReportMetric(float64(n)/time.Since(start).Seconds(), "flagged/s")
	}
	b.ReportMetric(0, "ns/op")
}

// failingQueue refuses every batch.
type failingQueue struct{ memoryQueue }

func (*failingQueue) SendBatch(context.Context, []string) error {
	return errors.New("the queue is down")
}

// TestFailedSendStrandsAtMostABatch: when the queue refuses, each shard
// stops after one batch, so at most MaxBatch records per shard are flagged
// without their command (they are flagged again after the back-off).
func TestFailedSendStrandsAtMostABatch(t *testing.T) {
	t.Parallel()
	f := setup(t, stores[1].new) // memory
	const n = 2000
	f.claim(t, "down", n)
	f.clock.Advance(time.Minute)
	f.queue = &failingQueue{}
	r, err := f.sweeper(sweep.Config{}).Run(context.Background())
	if err == nil || r.Complete {
		t.Fatalf("a run with the queue down: %+v, %v", r, err)
	}
	stranded := 0
	for shard := range idem.Shards {
		for page, err := range idem.ListEndedBefore(context.Background(), f.store, shard, f.clock.Now()) {
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range page {
				if !e.StaleAt.IsZero() {
					stranded++
				}
			}
		}
	}
	if stranded != r.Flagged || stranded > idem.Shards*10 {
		t.Fatalf("%d flagged without a command (report %d), want at most %d", stranded, r.Flagged, idem.Shards*10)
	}
}

// TestHeldRecordsAreCountedNotFlagged: a record held for an operator is
// counted, by its operation, with the age of its hold, and never flagged or sent for
// reconciliation, however long it has been stale.
func TestHeldRecordsAreCountedNotFlagged(t *testing.T) {
	eachStore(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		s := idem.Scope{Operation: "charge", Account: "acct_s", Key: "held-key-0001"}
		c, err := f.guard.Begin(ctx, s, idem.Canonical{{Name: "amount", Value: "1"}})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Lease.HoldForOperator(ctx, "amount_differs", []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		refundScope := idem.Scope{Operation: "refund", Account: "acct_s", Key: "held-refund-01"}
		rc, err := f.guard.Begin(ctx, refundScope, idem.Canonical{{Name: "amount", Value: "1"}})
		if err != nil {
			t.Fatal(err)
		}
		if err := rc.Lease.HoldForOperator(ctx, "amount_differs", []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		f.claim(t, "stale", 2)
		f.clock.Advance(time.Hour)
		// An operator's refused step ends its lease now: the hold's age stays.
		lease, err := f.guard.TakeOverHeld(ctx, s.PK(), "", idem.Settlement{Action: idem.SettleAccept, By: "ops:ana", Decision: "dec-sweep-1"})
		if err != nil {
			t.Fatal(err)
		}
		if err := lease.Abandon(ctx); err != nil {
			t.Fatal(err)
		}
		r, err := f.sweeper(sweep.Config{}).Run(ctx)
		if err != nil || r.Held != 2 || r.HeldByOperation["charge"] != 1 || r.HeldByOperation["refund"] != 1 || !r.HeldCounted || r.OldestHeld < time.Hour || r.Flagged != 2 || !r.Complete {
			t.Fatalf("run: %+v, %v; want 2 held (a charge's an hour old, a refund's) and the 2 stale flagged", r, err)
		}
		for _, body := range f.drain(t) {
			if cmd, _ := command.Decode(body); cmd.PK == s.PK() {
				t.Fatal("a held record was sent for reconciliation")
			}
		}
	})
}

// TestSweepPurgesWithoutTTL: where the table has no TTL, a run deletes the
// records whose retention ended within its window, completed or left in
// flight, a refund's as a charge's, and no live one; with no window (a table with TTL) it deletes
// nothing.
func TestSweepPurgesWithoutTTL(t *testing.T) {
	eachStore(t, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		f.guard = idem.NewGuard(f.store, idem.Config{Now: f.clock.Now, DefaultLease: time.Second, Retention: time.Hour})
		old := f.claim(t, "purge-old", 5)
		// A refund's record is purged as a charge's is: the purge reads
		// every record's expiry bucket, whatever its operation.
		refundScope := idem.Scope{Operation: "refund", Account: "acct_s", Key: "purge-old-refund"}
		if _, err := f.guard.Begin(ctx, refundScope, idem.Canonical{{Name: "charge_id", Value: "ch_1"}}); err != nil {
			t.Fatal(err)
		}
		old[refundScope.PK()] = true
		completed := 0
		for pk := range old {
			rec, err := f.guard.Lookup(ctx, pk)
			if err != nil {
				t.Fatal(err)
			}
			if completed < 2 { // two of them completed, three left in flight
				if err := f.store.Complete(ctx, pk, rec.LeaseToken, idem.Response{StatusCode: 201}, nil, rec.ExpiresAt); err != nil {
					t.Fatal(err)
				}
				completed++
			}
		}
		f.clock.Advance(time.Hour + time.Minute)
		live := f.claim(t, "purge-live", 3)
		if r, err := f.sweeper(sweep.Config{}).Run(ctx); err != nil || r.Purged != 0 {
			t.Fatalf("a run with TTL: purged %d, %v; want none", r.Purged, err)
		}
		f.drain(t)
		r, err := f.sweeper(sweep.Config{PurgeWindow: 3 * time.Hour}).Run(ctx)
		if err != nil || r.Purged != len(old) || !r.Complete {
			t.Fatalf("a run without TTL: %+v, %v; want %d purged", r, err, len(old))
		}
		for pk := range old {
			if _, err := f.guard.Lookup(ctx, pk); !errors.Is(err, idem.ErrNotFound) {
				t.Fatalf("an expired record survived the purge: %v", err)
			}
		}
		for pk := range live {
			if _, err := f.guard.Lookup(ctx, pk); err != nil {
				t.Fatalf("a live record: %v", err)
			}
		}
	})
}

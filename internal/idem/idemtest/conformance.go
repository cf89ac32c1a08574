package idemtest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/idem"
)

// NewStoreFunc returns a fresh, empty store for one test.
type NewStoreFunc func(t *testing.T) idem.Store

// fixture is one test's guard on a fresh store with a test clock.
type fixture struct {
	store idem.Store
	clock *Clock
	guard *idem.Guard
}

const testLease = time.Minute

// testProtocol is the suite's guard's: a wait-out of 3 s.
var testProtocol = idem.Protocol{InTransitBound: 2 * time.Second, ClockSkew: time.Second, Downstream: "acquirer-test"}

func setup(t *testing.T, newStore NewStoreFunc) *fixture {
	t.Helper()
	f := &fixture{store: newStore(t), clock: NewClock(time.Now().Truncate(time.Millisecond))}
	f.guard = idem.NewGuard(f.store, idem.Config{Now: f.clock.Now, DefaultLease: testLease, LeaseMargin: 5 * time.Second, Protocol: testProtocol})
	return f
}

var seq atomic.Int64

// scope returns a scope with a key no other test uses.
func scope() idem.Scope {
	return idem.Scope{Operation: "charge", Account: "acct_1", Key: fmt.Sprintf("key-%d-%d", time.Now().UnixNano(), seq.Add(1))}
}

func request(amount string) idem.Canonical {
	return idem.Canonical{{Name: "amount", Value: amount}, {Name: "currency", Value: "BRL"}}
}

// voidBy and acceptBy are an operator's decisions, as the operator's
// channel makes them: ops:ana decides, under the decision id given.
func voidBy(decision string) idem.Settlement {
	return idem.Settlement{Action: idem.SettleVoidConfirmed, By: "ops:ana", Decision: decision}
}

func acceptBy(decision string) idem.Settlement {
	return idem.Settlement{Action: idem.SettleAccept, By: "ops:ana", Decision: decision}
}

var created = idem.Response{StatusCode: 201, Headers: map[string]string{"Content-Type": "application/json"}, Body: []byte(`{"id":"ch_1"}`),
	Result: map[string]string{"id": "ch_1"}}

func mustAcquire(t *testing.T, f *fixture, s idem.Scope, req idem.Canonical) *idem.Lease {
	t.Helper()
	c, err := f.guard.Begin(context.Background(), s, req)
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	if c.Lease == nil {
		t.Fatalf("Begin: want a lease, got replay %+v", c.Replay)
	}
	return c.Lease
}

func mustStatus(t *testing.T, f *fixture, pk string, want idem.Status) *idem.Record {
	t.Helper()
	rec, err := f.guard.Lookup(context.Background(), pk)
	if err != nil {
		t.Fatalf("Lookup: %v", err)
	}
	if rec.Status != want {
		t.Fatalf("status = %s, want %s", rec.Status, want)
	}
	return rec
}

func mustBeAbsent(t *testing.T, f *fixture, pk string) {
	t.Helper()
	if _, err := f.guard.Lookup(context.Background(), pk); !errors.Is(err, idem.ErrNotFound) {
		t.Fatalf("Lookup: err = %v, want ErrNotFound", err)
	}
}

// RunConformance runs the behaviour every idem.Store must have, through the
// Guard, on stores from newStore: every transition of the state machine,
// fencing of zombies, logical expiry and races.
func RunConformance(t *testing.T, newStore NewStoreFunc) {
	for _, c := range slices.Concat(conformance, conflictConformance, purgeConformance) {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.test(context.Background(), t, setup(t, newStore))
		})
	}
}

// conformanceTest is one case of the suite: its name and its body, given
// a fixture on a fresh store.
type conformanceTest struct {
	name string
	test func(ctx context.Context, t *testing.T, f *fixture)
}

// conformance is the suite: each test gets a fresh store from newStore.
var conformance = []conformanceTest{
	{"FirstExecutionThenReplay", testFirstExecutionThenReplay},
	{"InFlight", testInFlight},
	{"KeyReused", testKeyReused},
	{"ReleaseFirstAttempt", testReleaseFirstAttempt},
	{"StaleLeaseIsTakenOver", testStaleLeaseIsTakenOver},
	{"ZombieIsFenced", testZombieIsFenced},
	{"ReleaseAfterTakeOverIsRefused", testReleaseAfterTakeOverIsRefused},
	{"AbandonNeverExtendsTheLease", testAbandonNeverExtendsTheLease},
	{"AbandonLetsARetryTakeOver", testAbandonLetsARetryTakeOver},
	{"ConcurrentTakeOversOneWins", testConcurrentTakeOversOneWins},
	{"ConcurrentClaimsOneWins", testConcurrentClaimsOneWins},
	{"ExpiredRecordIsAbsent", testExpiredRecordIsAbsent},
	{"LeaseFromContextDeadline", testLeaseFromContextDeadline},
	{"CompleteDropsTheRequest", testCompleteDropsTheRequest},
	{"AnAnswerWithoutAResult", testAnAnswerWithoutAResult},
	{"TakeOverStaleForReconcile", testTakeOverStaleForReconcile},
	{"ListInFlightPagesByLeaseEnd", testListInFlightPagesByLeaseEnd},
	{"ListInFlightPagesThroughEqualLeaseEnds", testListInFlightPagesThroughEqualLeaseEnds},
	{"FlagIsFenced", testFlagIsFenced},
	{"BadInputWritesNothing", testBadInputWritesNothing},
	{"ProtocolIsStampedAndTheLargerWins", testProtocolIsStampedAndTheLargerWins},
	{"OtherDownstreamIsNotTakenOver", testOtherDownstreamIsNotTakenOver},
	{"TakeOverRaisesTheRecordsProtocol", testTakeOverRaisesTheRecordsProtocol},
	{"HeldRecordIsNeverTakenOverOrExpired", testHeldRecordIsNeverTakenOverOrExpired},
	{"VoidConfirmedWaitsOutThenReleases", testVoidConfirmedWaitsOutThenReleases},
	{"AcceptSettlesWithTheDecision", testAcceptSettlesWithTheDecision},
	{"SettlingTakeOverRecordsTheDecision", testSettlingTakeOverRecordsTheDecision},
	{"ReleaseMarkerNamesOneDecision", testReleaseMarkerNamesOneDecision},
}

func testFirstExecutionThenReplay(ctx context.Context, t *testing.T, f *fixture) {
	s := scope()
	s.Source = "queue:orders"
	lease := mustAcquire(t, f, s, request("100"))
	if lease.Attempt() != 1 || lease.TakenOver() {
		t.Fatalf("attempt = %d, want 1", lease.Attempt())
	}
	rec := mustStatus(t, f, s.PK(), idem.StatusInProgress)
	if !listed(t, f, s.PK()) || rec.Account != s.Account || rec.Key != s.Key || rec.DownstreamKey == "" {
		t.Fatalf("in-progress record incomplete: %+v", rec)
	}
	if err := lease.Complete(ctx, created); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if done := mustStatus(t, f, s.PK(), idem.StatusCompleted); !maps.Equal(done.Response.Result, created.Result) {
		t.Fatalf("the stored result %v, want %v beside the answer", done.Response.Result, created.Result)
	}
	if listed(t, f, s.PK()) {
		t.Fatal("completed record still listed in flight")
	}
	for range 2 {
		c, err := f.guard.Begin(ctx, s, request("100"))
		if err != nil || c.Replay == nil {
			t.Fatalf("Begin after completion: claim %+v, err %v; want replay", c, err)
		}
		if c.Replay.StatusCode != 201 || string(c.Replay.Body) != string(created.Body) || c.Replay.Headers["Content-Type"] != "application/json" {
			t.Fatalf("replay = %+v, want %+v", c.Replay, created)
		}
		if c.DownstreamKey != rec.DownstreamKey || c.Source != rec.Source || !c.ClaimedAt.Equal(rec.CreatedAt) || c.ClaimedAt.IsZero() {
			t.Fatalf("replay's record: downstream key %q, source %q, claimed at %s; want the record's %+v", c.DownstreamKey, c.Source, c.ClaimedAt, rec)
		}
	}
}

// testAnAnswerWithoutAResult: an answer stored without a typed result (as
// records written before results were) reads back without one.
func testAnAnswerWithoutAResult(ctx context.Context, t *testing.T, f *fixture) {
	s := scope()
	old := idem.Response{StatusCode: 201, Body: []byte(`{"id":"ch_2"}`)}
	if err := mustAcquire(t, f, s, request("100")).Complete(ctx, old); err != nil {
		t.Fatal(err)
	}
	if rec := mustStatus(t, f, s.PK(), idem.StatusCompleted); rec.Response.Result != nil || string(rec.Response.Body) != string(old.Body) {
		t.Fatalf("an answer without a result read back as %+v", rec.Response)
	}
}

func testInFlight(ctx context.Context, t *testing.T, f *fixture) {
	s := scope()
	mustAcquire(t, f, s, request("100"))
	_, err := f.guard.Begin(ctx, s, request("100"))
	var inFlight *idem.InFlightError
	if !errors.Is(err, idem.ErrInFlight) || !errors.As(err, &inFlight) {
		t.Fatalf("second Begin: err = %v, want ErrInFlight", err)
	}
	if inFlight.RetryAfter < time.Second || inFlight.RetryAfter > idem.DefaultMaxRetryAfter {
		t.Fatalf("RetryAfter = %s, want 1s..%s", inFlight.RetryAfter, idem.DefaultMaxRetryAfter)
	}
}

func testKeyReused(ctx context.Context, t *testing.T, f *fixture) {
	inFlight, completed, stale := scope(), scope(), scope()
	mustAcquire(t, f, inFlight, request("100"))
	mustAcquire(t, f, stale, request("100"))
	if err := mustAcquire(t, f, completed, request("100")).Complete(ctx, created); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(testLease + time.Second) // stale's lease has expired
	for _, s := range []idem.Scope{inFlight, completed, stale} {
		c, err := f.guard.Begin(ctx, s, request("999"))
		if !errors.Is(err, idem.ErrKeyReused) || c.Replay != nil || c.Lease != nil {
			t.Fatalf("Begin with another request: claim %+v, err %v; want ErrKeyReused", c, err)
		}
	}
	if rec := mustStatus(t, f, stale.PK(), idem.StatusInProgress); rec.Attempt != 1 {
		t.Fatalf("a different request took over the lease: attempt %d", rec.Attempt)
	}
}

func testReleaseFirstAttempt(ctx context.Context, t *testing.T, f *fixture) {
	s := scope()
	lease := mustAcquire(t, f, s, request("100"))
	if err := lease.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	mustBeAbsent(t, f, s.PK())
	again := mustAcquire(t, f, s, request("100"))
	if again.Attempt() != 1 {
		t.Fatalf("after release: attempt %d, want a fresh claim", again.Attempt())
	}
}

func testStaleLeaseIsTakenOver(ctx context.Context, t *testing.T, f *fixture) {
	s := scope()
	first := mustAcquire(t, f, s, request("100"))
	f.clock.Advance(testLease + time.Millisecond)
	second := mustAcquire(t, f, s, request("100"))
	if second.Attempt() != 2 || !second.TakenOver() {
		t.Fatalf("take-over attempt = %d, want 2", second.Attempt())
	}
	if second.DownstreamKey() != first.DownstreamKey() {
		t.Fatalf("downstream key changed on take-over: %s then %s", first.DownstreamKey(), second.DownstreamKey())
	}
	if req, err := second.Request(); err != nil || req[0].Value != "100" {
		t.Fatalf("taken-over request = %v, %v", req, err)
	}
}

func testZombieIsFenced(ctx context.Context, t *testing.T, f *fixture) {
	s := scope()
	zombie := mustAcquire(t, f, s, request("100"))
	f.clock.Advance(testLease + time.Millisecond)
	owner := mustAcquire(t, f, s, request("100"))
	for name, write := range map[string]func() error{
		"Complete": func() error { return zombie.Complete(ctx, idem.Response{StatusCode: 500}) },
		"Release":  func() error { return zombie.Release(ctx) },
		"Abandon":  func() error { return zombie.Abandon(ctx) },
	} {
		if err := write(); !errors.Is(err, idem.ErrLeaseLost) {
			t.Fatalf("zombie %s: err = %v, want ErrLeaseLost", name, err)
		}
	}
	if rec := mustStatus(t, f, s.PK(), idem.StatusInProgress); rec.Attempt != 2 {
		t.Fatalf("zombie changed the record: %+v", rec)
	}
	if err := owner.Complete(ctx, created); err != nil {
		t.Fatalf("owner Complete: %v", err)
	}
	if err := zombie.Complete(ctx, idem.Response{StatusCode: 500}); !errors.Is(err, idem.ErrLeaseLost) {
		t.Fatalf("zombie Complete after owner: err = %v", err)
	}
	rec := mustStatus(t, f, s.PK(), idem.StatusCompleted)
	if rec.Response.StatusCode != 201 {
		t.Fatalf("stored response overwritten: %d", rec.Response.StatusCode)
	}
}

func testReleaseAfterTakeOverIsRefused(ctx context.Context, t *testing.T, f *fixture) {
	s := scope()
	mustAcquire(t, f, s, request("100"))
	f.clock.Advance(testLease + time.Millisecond)
	second := mustAcquire(t, f, s, request("100"))
	if err := second.Release(ctx); !errors.Is(err, idem.ErrReleaseRefused) {
		t.Fatalf("Release after take-over: err = %v, want ErrReleaseRefused", err)
	}
	mustStatus(t, f, s.PK(), idem.StatusInProgress)
}

func testAbandonNeverExtendsTheLease(ctx context.Context, t *testing.T, f *fixture) {
	s := scope()
	late := mustAcquire(t, f, s, request("100"))
	end := late.ExpiresAt()
	f.clock.Advance(testLease + time.Minute) // the worker outlived its lease
	if err := late.Abandon(ctx); err != nil {
		t.Fatalf("Abandon: %v", err)
	}
	if rec := mustStatus(t, f, s.PK(), idem.StatusInProgress); !rec.LeaseExpiresAt.Equal(end) {
		t.Fatalf("late Abandon moved the lease end from %v to %v", end, rec.LeaseExpiresAt)
	}
}

func testAbandonLetsARetryTakeOver(ctx context.Context, t *testing.T, f *fixture) {
	s := scope()
	first := mustAcquire(t, f, s, request("100"))
	if err := first.Abandon(ctx); err != nil {
		t.Fatalf("Abandon: %v", err)
	}
	f.clock.Advance(time.Millisecond)
	retry := mustAcquire(t, f, s, request("100"))
	if retry.Attempt() != 2 || retry.DownstreamKey() != first.DownstreamKey() {
		t.Fatalf("retry after abandon: attempt %d, key %s; want 2, %s", retry.Attempt(), retry.DownstreamKey(), first.DownstreamKey())
	}
}

func testConcurrentTakeOversOneWins(ctx context.Context, t *testing.T, f *fixture) {
	s := scope()
	mustAcquire(t, f, s, request("100"))
	f.clock.Advance(testLease + time.Millisecond)
	results := race(10, func() (idem.Claim, error) { return f.guard.Begin(ctx, s, request("100")) })
	if got := countLeases(t, results); got != 1 {
		t.Fatalf("%d of 10 concurrent retries took over, want 1", got)
	}
}

func testConcurrentClaimsOneWins(ctx context.Context, t *testing.T, f *fixture) {
	s := scope()
	results := race(20, func() (idem.Claim, error) { return f.guard.Begin(ctx, s, request("100")) })
	if got := countLeases(t, results); got != 1 {
		t.Fatalf("%d of 20 concurrent claims acquired, want 1", got)
	}
}

func testExpiredRecordIsAbsent(ctx context.Context, t *testing.T, f *fixture) {
	done, stuck := scope(), scope()
	old := mustAcquire(t, f, done, request("100"))
	if err := old.Complete(ctx, created); err != nil {
		t.Fatal(err)
	}
	mustAcquire(t, f, stuck, request("100"))
	f.clock.Advance(idem.DefaultRetention + time.Second)
	for _, s := range []idem.Scope{done, stuck} {
		mustBeAbsent(t, f, s.PK())
		fresh := mustAcquire(t, f, s, request("200")) // a new operation: another request is fine
		if fresh.Attempt() != 1 || fresh.DownstreamKey() == old.DownstreamKey() {
			t.Fatalf("after retention: attempt %d, downstream key reused %v", fresh.Attempt(), fresh.DownstreamKey() == old.DownstreamKey())
		}
	}
}

func testLeaseFromContextDeadline(ctx context.Context, t *testing.T, f *fixture) {
	deadline := f.clock.Now().Add(7 * time.Second)
	dctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	c, err := f.guard.Begin(dctx, scope(), request("100"))
	if err != nil || c.Lease == nil {
		t.Fatalf("Begin: %v", err)
	}
	if want := deadline.Add(5 * time.Second); !c.Lease.ExpiresAt().Equal(want) {
		t.Fatalf("lease ends %v, want deadline + margin %v", c.Lease.ExpiresAt(), want)
	}
	if left := c.Lease.TimeLeft(); left != 12*time.Second {
		t.Fatalf("TimeLeft = %s, want 12s", left)
	}
}

func testCompleteDropsTheRequest(ctx context.Context, t *testing.T, f *fixture) {
	s := scope()
	lease := mustAcquire(t, f, s, request("100"))
	if rec := mustStatus(t, f, s.PK(), idem.StatusInProgress); len(rec.Request) == 0 {
		t.Fatal("an in-flight record without its canonical request cannot be reconciled")
	}
	if err := lease.Complete(ctx, created); err != nil {
		t.Fatal(err)
	}
	if rec := mustStatus(t, f, s.PK(), idem.StatusCompleted); rec.Request != nil || rec.Fingerprint == "" {
		t.Fatalf("completed record: request %q, fingerprint %q; want the request dropped and the fingerprint kept", rec.Request, rec.Fingerprint)
	}
	c, err := f.guard.Begin(ctx, s, request("100"))
	if err != nil || c.Replay == nil {
		t.Fatalf("replay after completion: %+v, %v", c, err)
	}
	if _, err := f.guard.Begin(ctx, s, request("101")); !errors.Is(err, idem.ErrKeyReused) {
		t.Fatalf("another request after completion: %v, want ErrKeyReused", err)
	}
}

func testTakeOverStaleForReconcile(ctx context.Context, t *testing.T, f *fixture) {
	s := scope()
	mustAcquire(t, f, s, request("100"))
	if _, err := f.guard.TakeOverStale(ctx, s.PK()); !errors.Is(err, idem.ErrLeaseLost) {
		t.Fatalf("TakeOverStale of a live lease: err = %v, want ErrLeaseLost", err)
	}
	f.clock.Advance(testLease + time.Millisecond)
	if _, err := f.guard.TakeOverStale(ctx, s.PK()); !errors.Is(err, idem.ErrLeaseLost) {
		t.Fatalf("TakeOverStale of a lease ended less than the wait-out ago: err = %v, want ErrLeaseLost", err)
	}
	f.clock.Advance(3 * time.Second)
	lease, err := f.guard.TakeOverStale(ctx, s.PK())
	if err != nil || lease.Attempt() != 2 {
		t.Fatalf("TakeOverStale: %v", err)
	}
	if err := lease.ReleaseReconciled(ctx); err != nil {
		t.Fatalf("ReleaseReconciled: %v", err)
	}
	mustBeAbsent(t, f, s.PK())
	if _, err := f.guard.TakeOverStale(ctx, s.PK()); !errors.Is(err, idem.ErrNotFound) {
		t.Fatalf("TakeOverStale of an absent record: err = %v", err)
	}
}

func testListInFlightPagesByLeaseEnd(ctx context.Context, t *testing.T, f *fixture) {
	const shard = 7
	var stale []string
	for range 4 { // leases ending 1 s apart
		stale = append(stale, mustAcquire(t, f, scopeInShard(shard), request("1")).PK())
		f.clock.Advance(time.Second)
	}
	fresh := mustAcquire(t, f, scopeInShard(shard), request("1")).PK()
	done := mustAcquire(t, f, scopeInShard(shard), request("1"))
	if err := done.Complete(ctx, created); err != nil {
		t.Fatal(err)
	}
	freed := mustAcquire(t, f, scopeInShard(shard), request("1"))
	if err := freed.Release(ctx); err != nil {
		t.Fatal(err)
	}
	elsewhere := mustAcquire(t, f, scopeInShard(shard+1), request("1")).PK()
	// The fourth lease ended 1 s before the fresh one, which has not.
	cutoff := f.clock.Now().Add(testLease - 500*time.Millisecond)

	var got []string
	q := idem.InFlightQuery{Shard: shard, EndedBefore: cutoff, Limit: 3}
	for {
		page, more, err := f.store.ListInFlight(ctx, q)
		if err != nil {
			t.Fatalf("ListInFlight: %v", err)
		}
		if len(page) > q.Limit {
			t.Fatalf("page of %d, limit %d", len(page), q.Limit)
		}
		for _, e := range page {
			got = append(got, e.PK)
			if e.LeaseToken == "" || !e.LeaseExpiresAt.Before(cutoff) || !e.StaleAt.IsZero() || e.ReconcileAttempts != 0 {
				t.Fatalf("entry %+v", e)
			}
		}
		if !more || len(page) == 0 {
			break
		}
		q.After = &page[len(page)-1]
	}
	if !slices.Equal(got, stale) {
		t.Fatalf("listed %v, want %v by lease end (not %s, %s, %s or %s)", got, stale, fresh, done.PK(), freed.PK(), elsewhere)
	}
	var all []string
	for page, err := range idem.ListEndedBefore(ctx, f.store, shard, cutoff) {
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page {
			all = append(all, e.PK)
		}
	}
	if !slices.Equal(all, stale) {
		t.Fatalf("EndedBefore listed %v, want %v", all, stale)
	}
	for _, bad := range []idem.InFlightQuery{
		{Shard: shard, EndedBefore: cutoff, Limit: 0}, {Shard: shard, EndedBefore: cutoff, Limit: idem.MaxPage + 1},
		{Shard: -1, EndedBefore: cutoff, Limit: 1}, {Shard: idem.Shards, EndedBefore: cutoff, Limit: 1},
	} {
		if _, _, err := f.store.ListInFlight(ctx, bad); err == nil {
			t.Errorf("ListInFlight(%+v): no error", bad)
		}
	}
}

// testListInFlightPagesThroughEqualLeaseEnds: a storm claims many keys
// in the same millisecond; paging through them lists each exactly once.
func testListInFlightPagesThroughEqualLeaseEnds(ctx context.Context, t *testing.T, f *fixture) {
	const shard, n = 3, 7
	want := map[string]bool{}
	for range n {
		want[mustAcquire(t, f, scopeInShard(shard), request("1")).PK()] = true
	}
	seen := map[string]int{}
	q := idem.InFlightQuery{Shard: shard, EndedBefore: f.clock.Now().Add(2 * testLease), Limit: 3}
	for pages := 0; ; pages++ {
		if pages > n {
			t.Fatal("the listing does not end")
		}
		page, more, err := f.store.ListInFlight(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page {
			seen[e.PK]++
		}
		if !more || len(page) == 0 {
			break
		}
		q.After = &page[len(page)-1]
	}
	for pk := range want {
		if seen[pk] != 1 {
			t.Errorf("%s listed %d times, want once", idem.Ref(pk), seen[pk])
		}
	}
	if len(seen) != n {
		t.Fatalf("listed %d records, want %d", len(seen), n)
	}
}

func testFlagIsFenced(ctx context.Context, t *testing.T, f *fixture) {
	s := scope()
	lease := mustAcquire(t, f, s, request("1"))
	f.clock.Advance(2 * testLease)
	entry := func() idem.InFlight {
		t.Helper()
		page, _, err := f.store.ListInFlight(ctx, idem.InFlightQuery{Shard: idem.ShardOf(s.PK()), EndedBefore: f.clock.Now().Add(24 * time.Hour), Limit: 10})
		if err != nil || len(page) != 1 || page[0].PK != s.PK() {
			t.Fatalf("ListInFlight = %+v, %v", page, err)
		}
		return page[0]
	}
	first := entry()
	results := make([]error, 8)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() { results[i] = f.store.Flag(ctx, first, f.clock.Now()) })
	}
	wg.Wait()
	won := 0
	for _, err := range results {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, idem.ErrLeaseLost):
			t.Fatalf("Flag: %v", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d of 8 concurrent flags won, want 1", won)
	}
	flagged := entry()
	if flagged.ReconcileAttempts != 1 || flagged.StaleAt.UnixMilli() != f.clock.Now().UnixMilli() {
		t.Fatalf("after one flag: %+v", flagged)
	}
	f.clock.Advance(time.Second)
	if err := f.store.Flag(ctx, flagged, f.clock.Now()); err != nil {
		t.Fatalf("second flag: %v", err)
	}
	if e := entry(); e.ReconcileAttempts != 2 {
		t.Fatalf("after two flags: %+v", e)
	}
	taken, err := f.guard.TakeOverStale(ctx, s.PK())
	if err != nil {
		t.Fatal(err)
	}
	if err := f.store.Flag(ctx, entry(), f.clock.Now()); err != nil {
		t.Fatalf("flag under the new lease: %v", err)
	}
	if err := f.store.Flag(ctx, flagged, f.clock.Now()); !errors.Is(err, idem.ErrLeaseLost) {
		t.Fatalf("flag of an entry listed under the old lease: %v, want ErrLeaseLost", err)
	}
	stillListed := entry()
	if err := taken.Complete(ctx, created); err != nil {
		t.Fatal(err)
	}
	if err := f.store.Flag(ctx, stillListed, f.clock.Now()); !errors.Is(err, idem.ErrLeaseLost) {
		t.Fatalf("flag of a completed record: %v, want ErrLeaseLost", err)
	}
	if err := lease.Complete(ctx, created); !errors.Is(err, idem.ErrLeaseLost) {
		t.Fatalf("zombie completion: %v", err)
	}
}

func testBadInputWritesNothing(ctx context.Context, t *testing.T, f *fixture) {
	for _, s := range []idem.Scope{
		{Operation: "charge", Account: "acct_1", Key: ""},
		{Operation: "charge", Account: "acct_1", Key: "short"},
		{Operation: "charge", Account: "acct_1", Key: string(make([]byte, 129))},
		{Operation: "charge", Account: "acct_1", Key: "clé-non-ascii"},
		{Operation: "charge", Account: "acct_1", Key: "has space in it"},
		{Operation: "charge", Account: "", Key: "valid-key-123"},
		{Operation: "charge", Account: "a\x00b", Key: "valid-key-123"},
	} {
		_, err := f.guard.Begin(ctx, s, request("100"))
		if !errors.Is(err, idem.ErrKeyInvalid) && !errors.Is(err, idem.ErrKeyMissing) && !errors.Is(err, idem.ErrAccountInvalid) {
			t.Fatalf("Begin(%q, %q): err = %v, want a typed input error", s.Account, s.Key, err)
		}
		mustBeAbsent(t, f, s.PK())
	}
}

// listed reports whether pk is among the in-flight records of its shard
// whose lease ends within a day.
func listed(t *testing.T, f *fixture, pk string) bool {
	t.Helper()
	for page, err := range idem.ListEndedBefore(context.Background(), f.store, idem.ShardOf(pk), f.clock.Now().Add(24*time.Hour)) {
		if err != nil {
			t.Fatalf("EndedBefore: %v", err)
		}
		for _, e := range page {
			if e.PK == pk {
				return true
			}
		}
	}
	return false
}

// scopeInShard returns a fresh scope whose record lists under shard.
func scopeInShard(shard int) idem.Scope {
	for {
		if s := scope(); idem.ShardOf(s.PK()) == shard {
			return s
		}
	}
}

func race(n int, claim func() (idem.Claim, error)) []result {
	results := make([]result, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			<-start
			results[i].claim, results[i].err = claim()
		})
	}
	close(start)
	wg.Wait()
	return results
}

type result struct {
	claim idem.Claim
	err   error
}

// countLeases counts acquired leases; every loser must see ErrInFlight.
func countLeases(t *testing.T, results []result) int {
	t.Helper()
	n := 0
	for _, r := range results {
		switch {
		case r.err == nil && r.claim.Lease != nil:
			n++
		case errors.Is(r.err, idem.ErrInFlight):
		default:
			t.Fatalf("unexpected outcome: %+v, %v", r.claim, r.err)
		}
	}
	return n
}

// guardWith is a guard on f's store and clock under another protocol: the
// same functions after a deploy that changed T, or an operator's tool.
func guardWith(f *fixture, p idem.Protocol) *idem.Guard {
	return idem.NewGuard(f.store, idem.Config{Now: f.clock.Now, DefaultLease: testLease, LeaseMargin: 5 * time.Second, Protocol: p})
}

func testProtocolIsStampedAndTheLargerWins(ctx context.Context, t *testing.T, f *fixture) {
	s := scope()
	mustAcquire(t, f, s, request("1"))
	if rec := mustStatus(t, f, s.PK(), idem.StatusInProgress); rec.Protocol != testProtocol {
		t.Fatalf("record's protocol %+v, want the claim's %+v", rec.Protocol, testProtocol)
	}
	// A deploy shortened T to 100 ms: the record's 3 s still hold.
	shorter := guardWith(f, idem.Protocol{InTransitBound: 100 * time.Millisecond, ClockSkew: time.Millisecond, Downstream: testProtocol.Downstream})
	f.clock.Advance(testLease + time.Second)
	if _, err := shorter.TakeOverStale(ctx, s.PK()); !errors.Is(err, idem.ErrLeaseLost) {
		t.Fatalf("a shorter deployed T took over before the record's wait-out: %v", err)
	}
	if _, err := f.guard.Begin(ctx, scope(), request("1")); err != nil { // a claim under the short T is fine
		t.Fatal(err)
	}
	// A deploy lengthened T to 10 s: its own 11 s hold for the older record.
	longer := guardWith(f, idem.Protocol{InTransitBound: 10 * time.Second, ClockSkew: time.Second, Downstream: testProtocol.Downstream})
	f.clock.Advance(3 * time.Second)
	if _, err := longer.TakeOverStale(ctx, s.PK()); !errors.Is(err, idem.ErrLeaseLost) {
		t.Fatalf("a longer deployed T was cut to the record's: %v", err)
	}
	if _, err := shorter.TakeOverStale(ctx, s.PK()); err != nil {
		t.Fatalf("after the record's wait-out: %v", err)
	}
}

// testTakeOverRaisesTheRecordsProtocol: a worker of a deploy with a
// longer T takes a record over; its requests are bounded by its own T, so
// the record keeps the larger one, and a worker of the shorter T waits it
// out.
func testTakeOverRaisesTheRecordsProtocol(ctx context.Context, t *testing.T, f *fixture) {
	s := scope()
	mustAcquire(t, f, s, request("1"))
	f.clock.Advance(testLease + time.Minute)
	longer := guardWith(f, idem.Protocol{InTransitBound: 10 * time.Second, ClockSkew: 2 * time.Second, Downstream: testProtocol.Downstream})
	c, err := longer.Begin(ctx, s, request("1"))
	if err != nil || c.Lease == nil || c.Lease.Attempt() != 2 {
		t.Fatalf("the longer deploy's take-over: %+v, %v", c, err)
	}
	if p := mustStatus(t, f, s.PK(), idem.StatusInProgress).Protocol; p.InTransitBound != 10*time.Second || p.ClockSkew != 2*time.Second || p.Downstream != testProtocol.Downstream {
		t.Fatalf("after the take-over the record's protocol is %+v, want 10 s, 2 s", p)
	}
	if err := c.Lease.Abandon(ctx); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(5 * time.Second) // past the claim's 3 s, within the taker's 12 s
	if _, err := f.guard.TakeOverStale(ctx, s.PK()); !errors.Is(err, idem.ErrLeaseLost) {
		t.Fatalf("the shorter deploy took over within the taker's T: %v", err)
	}
	f.clock.Advance(8 * time.Second)
	if _, err := f.guard.TakeOverStale(ctx, s.PK()); err != nil {
		t.Fatalf("after the taker's wait-out: %v", err)
	}
}

func testOtherDownstreamIsNotTakenOver(ctx context.Context, t *testing.T, f *fixture) {
	s := scope()
	mustAcquire(t, f, s, request("1"))
	f.clock.Advance(testLease + time.Minute)
	other := guardWith(f, idem.Protocol{InTransitBound: testProtocol.InTransitBound, ClockSkew: testProtocol.ClockSkew, Downstream: "another-acquirer"})
	if _, err := other.Begin(ctx, s, request("1")); !errors.Is(err, idem.ErrOtherDownstream) {
		t.Fatalf("a retry sending elsewhere: %v, want ErrOtherDownstream", err)
	}
	if _, err := other.TakeOverStale(ctx, s.PK()); !errors.Is(err, idem.ErrOtherDownstream) {
		t.Fatalf("a reconciler asking elsewhere: %v, want ErrOtherDownstream", err)
	}
	if rec := mustStatus(t, f, s.PK(), idem.StatusInProgress); rec.Attempt != 1 {
		t.Fatalf("the refusals wrote: attempt %d", rec.Attempt)
	}
	if lease := mustAcquire(t, f, s, request("1")); lease.Attempt() != 2 {
		t.Fatalf("the record's own downstream: attempt %d", lease.Attempt())
	}
}

// holdOne claims a fresh key and holds it, returning its scope and the
// token its lease had.
func holdOne(ctx context.Context, t *testing.T, f *fixture) (idem.Scope, string) {
	t.Helper()
	s := scope()
	lease := mustAcquire(t, f, s, request("100"))
	token := mustStatus(t, f, s.PK(), idem.StatusInProgress).LeaseToken
	if err := lease.HoldForOperator(ctx, "amount_differs", []byte(`{"asked":100,"answered":1000}`)); err != nil {
		t.Fatalf("HoldForOperator: %v", err)
	}
	if err := lease.Complete(ctx, created); !errors.Is(err, idem.ErrHeld) {
		t.Fatalf("Complete of a held lease: %v, want ErrHeld", err)
	}
	if err := lease.Release(ctx); !errors.Is(err, idem.ErrHeld) {
		t.Fatalf("Release of a held lease: %v, want ErrHeld", err)
	}
	if err := lease.Abandon(ctx); !errors.Is(err, idem.ErrLeaseLost) {
		t.Fatalf("the holding lease still writes: Abandon %v, want ErrLeaseLost", err)
	}
	return s, token
}

func testHeldRecordIsNeverTakenOverOrExpired(ctx context.Context, t *testing.T, f *fixture) {
	s, holder := holdOne(ctx, t, f)
	entryBefore := idem.InFlight{}
	rec := mustStatus(t, f, s.PK(), idem.StatusInProgress)
	if !rec.Held() || rec.Hold.Reason != "amount_differs" || string(rec.Hold.Evidence) != `{"asked":100,"answered":1000}` ||
		!rec.ExpiresAt.IsZero() || rec.LeaseExpiresAt.After(f.clock.Now()) {
		t.Fatalf("held record: %+v hold %+v", rec, rec.Hold)
	}
	entryBefore = idem.InFlight{PK: rec.PK, LeaseToken: rec.LeaseToken, LeaseExpiresAt: rec.LeaseExpiresAt}
	f.clock.Advance(idem.DefaultRetention + time.Hour) // past retention
	for i := range 2 {
		if _, err := f.guard.Begin(ctx, s, request("100")); !errors.Is(err, idem.ErrHeld) {
			t.Fatalf("Begin %d of a held record past retention: %v, want ErrHeld", i, err)
		}
	}
	if _, err := f.guard.Begin(ctx, s, request("999")); !errors.Is(err, idem.ErrKeyReused) {
		t.Fatalf("another request on a held key: %v, want ErrKeyReused", err)
	}
	if _, err := f.guard.TakeOverStale(ctx, s.PK()); !errors.Is(err, idem.ErrHeld) {
		t.Fatalf("TakeOverStale of a held record: %v, want ErrHeld", err)
	}
	if _, err := f.store.TakeOver(ctx, idem.Handover{PK: s.PK(), OldToken: rec.LeaseToken, NewToken: "another", LeaseExpiresAt: f.clock.Now().Add(time.Minute), Now: f.clock.Now()}); !errors.Is(err, idem.ErrLeaseLost) {
		t.Fatalf("the store took a held record over: %v", err)
	}
	if err := f.store.Flag(ctx, entryBefore, f.clock.Now()); !errors.Is(err, idem.ErrLeaseLost) {
		t.Fatalf("the store flagged a held record: %v", err)
	}
	if listed(t, f, s.PK()) {
		t.Fatal("a held record is listed among the shards' in-flight records")
	}
	var held []string
	for page, err := range idem.HeldRecords(ctx, f.store, f.clock.Now()) {
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page {
			held = append(held, e.PK)
		}
	}
	if !slices.Contains(held, s.PK()) {
		t.Fatalf("held listing %v lacks the record", held)
	}
	if rec := mustStatus(t, f, s.PK(), idem.StatusInProgress); rec.Attempt != 1 || !rec.Held() {
		t.Fatalf("after every refusal: %+v", rec)
	}
	// The store itself refuses what the Lease refuses: the holder's token
	// no longer holds the record, and no write completes a held record
	// without a settlement.
	for name, write := range map[string]func() error{
		"Complete": func() error { return f.store.Complete(ctx, s.PK(), holder, created, nil, time.Time{}) },
		"Release":  func() error { return f.store.Release(ctx, s.PK(), holder) },
		"SetLease": func() error { return f.store.SetLease(ctx, s.PK(), holder, f.clock.Now()) },
		"Hold": func() error {
			return f.store.Hold(ctx, s.PK(), holder, "again", idem.Hold{Reason: "again"}, f.clock.Now())
		},
		"TakeOver": func() error {
			_, err := f.store.TakeOver(ctx, idem.Handover{PK: s.PK(), OldToken: holder, NewToken: "x", LeaseExpiresAt: f.clock.Now().Add(time.Minute), Now: f.clock.Now()})
			return err
		},
	} {
		if err := write(); !errors.Is(err, idem.ErrLeaseLost) {
			t.Fatalf("the store let the holder's old token %s a held record: %v", name, err)
		}
	}
	current := mustStatus(t, f, s.PK(), idem.StatusInProgress)
	if err := f.store.Complete(ctx, s.PK(), current.LeaseToken, created, nil, time.Time{}); !errors.Is(err, idem.ErrLeaseLost) {
		t.Fatalf("a completion without a settlement of a held record: %v", err)
	}
	if err := f.store.Hold(ctx, s.PK(), current.LeaseToken, "again", idem.Hold{Reason: "again"}, f.clock.Now()); !errors.Is(err, idem.ErrLeaseLost) {
		t.Fatalf("a second hold with the held token: %v", err)
	}
	other := scope()
	mustAcquire(t, f, other, request("100"))
	token := mustStatus(t, f, other.PK(), idem.StatusInProgress).LeaseToken
	settled := &idem.Settlement{Action: idem.SettleAccept, By: "ops", At: f.clock.Now()}
	if err := f.store.Complete(ctx, other.PK(), token, created, settled, f.clock.Now().Add(time.Hour)); !errors.Is(err, idem.ErrLeaseLost) {
		t.Fatalf("a settlement of a record that is not held: %v", err)
	}
}

func testVoidConfirmedWaitsOutThenReleases(ctx context.Context, t *testing.T, f *fixture) {
	s, _ := holdOne(ctx, t, f)
	first := mustStatus(t, f, s.PK(), idem.StatusInProgress)
	f.clock.Advance(2 * time.Second) // less than the 3 s wait-out
	if _, err := f.guard.TakeOverHeld(ctx, s.PK(), "", voidBy("dec-void-1")); !errors.Is(err, idem.ErrTooEarly) {
		t.Fatalf("void-confirmed before the wait-out: %v, want ErrTooEarly", err)
	}
	short := guardWith(f, idem.Protocol{InTransitBound: time.Millisecond, ClockSkew: time.Millisecond, Downstream: testProtocol.Downstream})
	if _, err := short.TakeOverHeld(ctx, s.PK(), "", voidBy("dec-void-1")); !errors.Is(err, idem.ErrTooEarly) {
		t.Fatalf("a tool with a short T skipped the record's wait-out: %v, want ErrTooEarly", err)
	}
	if _, err := f.guard.TakeOverHeld(ctx, scope().PK(), "", voidBy("dec-void-1")); !errors.Is(err, idem.ErrNotFound) {
		t.Fatalf("TakeOverHeld of an absent record: %v", err)
	}
	f.clock.Advance(2 * time.Second)
	lease, err := f.guard.TakeOverHeld(ctx, s.PK(), "", voidBy("dec-void-1"))
	if err != nil {
		t.Fatalf("TakeOverHeld after the wait-out: %v", err)
	}
	if err := lease.Release(ctx); !errors.Is(err, idem.ErrHeld) {
		t.Fatalf("an ordinary release of a held record: %v", err)
	}
	decidedAt := f.clock.Now()
	if err := lease.VoidConfirmed(ctx); err != nil {
		t.Fatalf("VoidConfirmed: %v", err)
	}
	mustBeAbsent(t, f, s.PK())
	m, err := f.store.ReleaseMarker(ctx, first.DownstreamKey)
	if err != nil || m.PK != s.PK() || m.Decision.Action != idem.SettleVoidConfirmed || m.Decision.By != "ops:ana" || m.Decision.Decision != "dec-void-1" ||
		m.Decision.At.UnixMilli() != decidedAt.UnixMilli() {
		t.Fatalf("the release marker that outlives the delete: %+v, %v", m, err)
	}
	again := mustAcquire(t, f, s, request("100"))
	if again.Attempt() != 1 || again.DownstreamKey() == first.DownstreamKey {
		t.Fatalf("the retry after void-confirmed: attempt %d, same downstream key %v", again.Attempt(), again.DownstreamKey() == first.DownstreamKey)
	}
	if _, err := f.guard.TakeOverHeld(ctx, s.PK(), "", acceptBy("dec-accept-1")); !errors.Is(err, idem.ErrNotHeld) {
		t.Fatalf("TakeOverHeld of a record that is not held: %v, want ErrNotHeld", err)
	}
}

func testAcceptSettlesWithTheDecision(ctx context.Context, t *testing.T, f *fixture) {
	s, _ := holdOne(ctx, t, f)
	f.clock.Advance(idem.DefaultRetention) // decided long after the claim
	lease, err := f.guard.TakeOverHeld(ctx, s.PK(), "", acceptBy("dec-accept-1"))
	if err != nil {
		t.Fatalf("TakeOverHeld: %v", err)
	}
	if err := lease.VoidConfirmed(ctx); !errors.Is(err, idem.ErrTooEarly) {
		t.Fatalf("void-confirmed on a lease taken without the wait-out: %v, want ErrTooEarly", err)
	}
	if _, err := f.guard.TakeOverHeld(ctx, s.PK(), "", acceptBy("dec-accept-1")); !errors.Is(err, idem.ErrTooEarly) {
		t.Fatalf("a second operator while the first holds the lease: %v, want ErrTooEarly", err)
	}
	if err := lease.Accept(ctx, created); err != nil {
		t.Fatalf("Accept: %v", err)
	}
	rec := mustStatus(t, f, s.PK(), idem.StatusCompleted)
	st := rec.Hold.Settlement
	if rec.Held() || st == nil || st.Action != idem.SettleAccept || st.By != "ops:ana" || st.Decision != "dec-accept-1" || st.At.UnixMilli() != f.clock.Now().UnixMilli() ||
		rec.ExpiresAt.Unix() != f.clock.Now().Add(idem.DefaultRetention).Unix() || rec.Hold.Reason != "amount_differs" {
		t.Fatalf("settled record: %+v, hold %+v, settlement %+v", rec, rec.Hold, st)
	}
	f.clock.Advance(time.Hour)
	c, err := f.guard.Begin(ctx, s, request("100"))
	if err != nil || c.Replay == nil || string(c.Replay.Body) != string(created.Body) {
		t.Fatalf("replay after accept: %+v, %v", c, err)
	}
	if err := lease.Accept(ctx, created); !errors.Is(err, idem.ErrNotHeld) {
		t.Fatalf("a second Accept: %v", err)
	}
}

// testSettlingTakeOverRecordsTheDecision: an operator's take-over writes
// its decision on the hold (Settling: the action, who, the decision's id
// and the take-over's time), only for the record instance decided on; a
// later operator's take-over, once the lease ended, replaces it.
func testSettlingTakeOverRecordsTheDecision(ctx context.Context, t *testing.T, f *fixture) {
	s, _ := holdOne(ctx, t, f)
	rec := mustStatus(t, f, s.PK(), idem.StatusInProgress)
	f.clock.Advance(4 * time.Second) // past the 3 s wait-out
	if _, err := f.guard.TakeOverHeld(ctx, s.PK(), "another-intent", voidBy("dec-a")); !errors.Is(err, idem.ErrNotFound) {
		t.Fatalf("a decision on another intent of the key: %v, want ErrNotFound", err)
	}
	at := f.clock.Now()
	if _, err := f.guard.TakeOverHeld(ctx, s.PK(), rec.DownstreamKey, voidBy("dec-a")); err != nil {
		t.Fatal(err)
	}
	got := mustStatus(t, f, s.PK(), idem.StatusInProgress)
	if st := got.Hold.Settling; !got.Held() || st == nil || *st != (idem.Settlement{Action: idem.SettleVoidConfirmed, By: "ops:ana", Decision: "dec-a", At: st.At}) ||
		st.At.UnixMilli() != at.UnixMilli() || got.Hold.Settlement != nil {
		t.Fatalf("the settling take-over's record: hold %+v, settling %+v", got.Hold, got.Hold.Settling)
	}
	f.clock.Advance(2 * testLease) // the first operator's lease ended, its decision unfinished
	lease, err := f.guard.TakeOverHeld(ctx, s.PK(), rec.DownstreamKey, acceptBy("dec-b"))
	if err != nil {
		t.Fatal(err)
	}
	if st := mustStatus(t, f, s.PK(), idem.StatusInProgress).Hold.Settling; st == nil || st.Decision != "dec-b" || st.Action != idem.SettleAccept {
		t.Fatalf("the second take-over's settling: %+v", st)
	}
	if err := lease.VoidConfirmed(ctx); !errors.Is(err, idem.ErrTooEarly) {
		t.Fatalf("a void on a lease taken for an accept: %v, want ErrTooEarly", err)
	}
	if err := lease.Accept(ctx, created); err != nil {
		t.Fatal(err)
	}
	if st := mustStatus(t, f, s.PK(), idem.StatusCompleted).Hold.Settlement; st == nil || st.Decision != "dec-b" {
		t.Fatalf("the accept's settlement: %+v", st)
	}
}

// testReleaseMarkerNamesOneDecision: a void whose marker was written but
// whose delete never landed, followed by an accept that took the record
// over and gave it back, does not block the next void: the marker of the
// later take-over (a higher attempt) is written over the earlier one, and
// the record is released. A late write of the first void's marker, from
// its lost lease, cannot write over it; writing one's own marker again is
// harmless, as a retried write must be.
func testReleaseMarkerNamesOneDecision(ctx context.Context, t *testing.T, f *fixture) {
	s, _ := holdOne(ctx, t, f)
	rec := mustStatus(t, f, s.PK(), idem.StatusInProgress)
	f.clock.Advance(4 * time.Second)
	first, err := f.guard.TakeOverHeld(ctx, s.PK(), "", voidBy("dec-a"))
	if err != nil {
		t.Fatal(err)
	}
	// The first void wrote its marker, then died before its delete.
	marker := idem.ReleaseMarker{DownstreamKey: rec.DownstreamKey, PK: s.PK(), Attempt: first.Attempt(), Decision: *first.Record().Hold.Settling}
	for range 2 {
		if err := f.store.MarkRelease(ctx, marker); err != nil {
			t.Fatalf("the first void's marker, written (again): %v", err)
		}
	}
	f.clock.Advance(2 * testLease)
	accept, err := f.guard.TakeOverHeld(ctx, s.PK(), "", acceptBy("dec-b"))
	if err != nil {
		t.Fatal(err)
	}
	if err := accept.Abandon(ctx); err != nil { // refused: the terms changed, say
		t.Fatal(err)
	}
	f.clock.Advance(4 * time.Second)
	second, err := f.guard.TakeOverHeld(ctx, s.PK(), "", voidBy("dec-c"))
	if err != nil {
		t.Fatal(err)
	}
	if err := second.VoidConfirmed(ctx); err != nil {
		t.Fatalf("a void after an unfinished void and a refused accept: %v", err)
	}
	mustBeAbsent(t, f, s.PK())
	if m, err := f.store.ReleaseMarker(ctx, rec.DownstreamKey); err != nil || m.Decision.Decision != "dec-c" || m.Attempt != second.Attempt() {
		t.Fatalf("the marker after the second void: %+v, %v; want dec-c's", m, err)
	}
	if err := f.store.MarkRelease(ctx, marker); !errors.Is(err, idem.ErrOtherDecision) {
		t.Fatalf("the first void's late marker: %v, want ErrOtherDecision", err)
	}
	if err := first.VoidConfirmed(ctx); err == nil {
		t.Fatal("the first void's late attempt succeeded")
	}
	if m, _ := f.store.ReleaseMarker(ctx, rec.DownstreamKey); m == nil || m.Decision.Decision != "dec-c" {
		t.Fatalf("the first void's late attempt rewrote the marker: %+v", m)
	}
	if _, err := f.store.ReleaseMarker(ctx, "no-such-intent"); !errors.Is(err, idem.ErrNotFound) {
		t.Fatalf("the marker of an intent never voided: %v, want ErrNotFound", err)
	}
}

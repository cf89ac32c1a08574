package idemtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/idem"
)

// conflictConformance: every write of the state machine meets
// idem.ErrWriteConflict, as a strongly consistent global table answers a
// write that races another region's, and means what the engine says it
// means: a claim or a take-over is answered in flight, every other write
// is retried, and a write refused to the end leaves the record as it was.
var conflictConformance = []conformanceTest{
	{"ClaimConflictAnswersInFlight", testClaimConflictAnswersInFlight},
	{"ClaimConflictIsRetriedOnce", testClaimConflictIsRetriedOnce},
	{"TakeOverConflictAnswersInFlight", testTakeOverConflictAnswersInFlight},
	{"LeaseWritesRetryConflicts", testLeaseWritesRetryConflicts},
	{"OperatorAndReconcilerTakeOversConflict", testOperatorAndReconcilerTakeOversConflict},
	{"FlagConflictIsRetried", testFlagConflictIsRetried},
}

// conflicted is a guard as f's, on f's store behind a Conflicting that
// refuses as refuse says.
func conflicted(f *fixture, refuse func(string) bool) *idem.Guard {
	return idem.NewGuard(&Conflicting{Store: f.store, Refuse: refuse}, idem.Config{Now: f.clock.Now, DefaultLease: testLease, LeaseMargin: 5 * time.Second, Protocol: testProtocol})
}

// mustBeInFlight checks err is the in-flight answer a conflicted claim or
// take-over gets: retry in a second, wait out the lease this guard would
// have taken plus its own T and skew.
func mustBeInFlight(t *testing.T, err error, waitOut time.Duration) {
	t.Helper()
	var e *idem.InFlightError
	if !errors.As(err, &e) || e.RetryAfter != time.Second || e.WaitOut != waitOut {
		t.Fatalf("the conflicted step answered %v (%+v), want in flight, retry after 1 s, wait-out %s", err, e, waitOut)
	}
}

func testClaimConflictAnswersInFlight(ctx context.Context, t *testing.T, f *fixture) {
	s := scope()
	_, err := conflicted(f, RefuseFirst(WriteClaim, -1)).Begin(ctx, s, request("1"))
	mustBeInFlight(t, err, testLease+testProtocol.WaitOut(idem.Protocol{}))
	mustBeAbsent(t, f, s.PK())
	if lease := mustAcquire(t, f, s, request("1")); lease.Attempt() != 1 {
		t.Fatalf("the claim after the conflicts: attempt %d", lease.Attempt())
	}
}

func testClaimConflictIsRetriedOnce(ctx context.Context, t *testing.T, f *fixture) {
	s := scope()
	c, err := conflicted(f, RefuseFirst(WriteClaim, 1)).Begin(ctx, s, request("1"))
	if err != nil || c.Lease == nil || c.Lease.Attempt() != 1 {
		t.Fatalf("a claim whose first write conflicted: %+v, %v; want its lease", c, err)
	}
	mustStatus(t, f, s.PK(), idem.StatusInProgress)
}

func testTakeOverConflictAnswersInFlight(ctx context.Context, t *testing.T, f *fixture) {
	s := scope()
	mustAcquire(t, f, s, request("1"))
	before := mustStatus(t, f, s.PK(), idem.StatusInProgress)
	f.clock.Advance(testLease + time.Millisecond)
	_, err := conflicted(f, RefuseFirst(WriteTakeOver, -1)).Begin(ctx, s, request("1"))
	mustBeInFlight(t, err, testLease+testProtocol.WaitOut(idem.Protocol{}))
	if after := mustStatus(t, f, s.PK(), idem.StatusInProgress); after.LeaseToken != before.LeaseToken || after.Attempt != 1 {
		t.Fatalf("a conflicted take-over changed the record: %+v", after)
	}
	if lease := mustAcquire(t, f, s, request("1")); lease.Attempt() != 2 {
		t.Fatalf("the take-over after the conflict: attempt %d", lease.Attempt())
	}
}

// testLeaseWritesRetryConflicts: each write a lease makes is retried after
// a conflict, and one refused on every try returns ErrWriteConflict with the
// record as it was, the lease still the owner's.
func testLeaseWritesRetryConflicts(ctx context.Context, t *testing.T, f *fixture) {
	for _, w := range []struct {
		write string
		do    func(*idem.Lease) error
		done  func(*idem.Record, error) bool // the write took effect: the record after it
	}{
		{WriteComplete, func(l *idem.Lease) error { return l.Complete(ctx, created) },
			func(r *idem.Record, err error) bool { return err == nil && r.Status == idem.StatusCompleted }},
		{WriteRelease, func(l *idem.Lease) error { return l.Release(ctx) },
			func(_ *idem.Record, err error) bool { return errors.Is(err, idem.ErrNotFound) }},
		{WriteSetLease, func(l *idem.Lease) error { return l.Abandon(ctx) },
			func(r *idem.Record, err error) bool { return err == nil && !r.LeaseExpiresAt.After(f.clock.Now()) }},
		{WriteHold, func(l *idem.Lease) error { return l.HoldForOperator(ctx, "amount_differs", nil) },
			func(r *idem.Record, err error) bool { return err == nil && r.Held() }},
	} {
		// Refused once: retried, and done.
		s := scope()
		lease, err := conflicted(f, RefuseFirst(w.write, 1)).Begin(ctx, s, request("1"))
		if err != nil {
			t.Fatal(err)
		}
		if err := w.do(lease.Lease); err != nil {
			t.Fatalf("%s refused once: %v, want it retried", w.write, err)
		}
		if rec, err := f.guard.Lookup(ctx, s.PK()); !w.done(rec, err) {
			t.Fatalf("%s refused once, then retried: the record is %+v, %v", w.write, rec, err)
		}
		// Refused on every try: nothing written.
		s = scope()
		lease, err = conflicted(f, RefuseFirst(w.write, -1)).Begin(ctx, s, request("1"))
		if err != nil {
			t.Fatal(err)
		}
		before := mustStatus(t, f, s.PK(), idem.StatusInProgress)
		if err := w.do(lease.Lease); !errors.Is(err, idem.ErrWriteConflict) {
			t.Fatalf("%s refused on every try: %v, want ErrWriteConflict", w.write, err)
		}
		after := mustStatus(t, f, s.PK(), idem.StatusInProgress)
		if after.LeaseToken != before.LeaseToken || !after.LeaseExpiresAt.Equal(before.LeaseExpiresAt) || after.Held() {
			t.Fatalf("%s refused on every try changed the record: %+v, was %+v", w.write, after, before)
		}
	}
}

// testOperatorAndReconcilerTakeOversConflict: a reconciler's or an
// operator's take-over that conflicts has not taken over: ErrWriteConflict,
// the record as it was, and the same step succeeds once the conflicts stop.
func testOperatorAndReconcilerTakeOversConflict(ctx context.Context, t *testing.T, f *fixture) {
	s := scope()
	mustAcquire(t, f, s, request("1"))
	f.clock.Advance(testLease + time.Minute)
	if _, err := conflicted(f, RefuseFirst(WriteTakeOver, -1)).TakeOverStale(ctx, s.PK()); !errors.Is(err, idem.ErrWriteConflict) {
		t.Fatalf("a conflicted TakeOverStale: %v, want ErrWriteConflict", err)
	}
	if rec := mustStatus(t, f, s.PK(), idem.StatusInProgress); rec.Attempt != 1 {
		t.Fatalf("a conflicted TakeOverStale wrote: attempt %d", rec.Attempt)
	}
	if _, err := f.guard.TakeOverStale(ctx, s.PK()); err != nil {
		t.Fatalf("TakeOverStale without conflicts: %v", err)
	}

	held, _ := holdOne(ctx, t, f)
	f.clock.Advance(time.Minute)
	if _, err := conflicted(f, RefuseFirst(WriteTakeOverHeld, -1)).TakeOverHeld(ctx, held.PK(), "", voidBy("dec-void-1")); !errors.Is(err, idem.ErrWriteConflict) {
		t.Fatalf("a conflicted TakeOverHeld: %v, want ErrWriteConflict", err)
	}
	if rec := mustStatus(t, f, held.PK(), idem.StatusInProgress); rec.Attempt != 1 || !rec.Held() {
		t.Fatalf("a conflicted TakeOverHeld wrote: %+v", rec)
	}
	if _, err := f.guard.TakeOverHeld(ctx, held.PK(), "", voidBy("dec-void-1")); err != nil {
		t.Fatalf("TakeOverHeld without conflicts: %v", err)
	}
}

// testFlagConflictIsRetried: the sweeper's flag, through
// idem.RetryConflicts, is retried after a conflict and lands once; refused
// on every try, it leaves the entry unflagged.
func testFlagConflictIsRetried(ctx context.Context, t *testing.T, f *fixture) {
	s := scope()
	mustAcquire(t, f, s, request("1"))
	f.clock.Advance(2 * testLease)
	list := func() idem.InFlight {
		t.Helper()
		page, _, err := f.store.ListInFlight(ctx, idem.InFlightQuery{Shard: idem.ShardOf(s.PK()), EndedBefore: f.clock.Now().Add(24 * time.Hour), Limit: 10})
		if err != nil || len(page) != 1 {
			t.Fatalf("ListInFlight = %+v, %v", page, err)
		}
		return page[0]
	}
	entry := list()
	never := &Conflicting{Store: f.store, Refuse: RefuseFirst(WriteFlag, -1)}
	if err := idem.RetryConflicts(ctx, func() error { return never.Flag(ctx, entry, f.clock.Now()) }); !errors.Is(err, idem.ErrWriteConflict) {
		t.Fatalf("a flag refused on every try: %v", err)
	}
	if rec := mustStatus(t, f, s.PK(), idem.StatusInProgress); rec.ReconcileAttempts != 0 {
		t.Fatalf("a refused flag counted an attempt: %d", rec.ReconcileAttempts)
	}
	once := &Conflicting{Store: f.store, Refuse: RefuseFirst(WriteFlag, 1)}
	if err := idem.RetryConflicts(ctx, func() error { return once.Flag(ctx, entry, f.clock.Now()) }); err != nil {
		t.Fatalf("a flag refused once: %v, want it retried", err)
	}
	if rec := mustStatus(t, f, s.PK(), idem.StatusInProgress); rec.ReconcileAttempts != 1 {
		t.Fatalf("the retried flag counted %d attempts, want 1", rec.ReconcileAttempts)
	}
}

package idemtest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/idem"
)

// purgeConformance: the purge of a table without TTL deletes what has
// expired and nothing else, a key claimed afresh between the listing and
// the delete included.
var purgeConformance = []conformanceTest{
	{"PurgeDeletesOnlyTheExpired", testPurgeDeletesOnlyTheExpired},
	{"PurgeSparesAKeyClaimedAfresh", testPurgeSparesAKeyClaimedAfresh},
	{"PurgeSparesHeldRecords", testPurgeSparesHeldRecords},
	{"PurgeConflictIsRetried", testPurgeConflictIsRetried},
	{"PurgeListsASettledRecordByItsNewExpiry", testPurgeListsASettledRecordByItsNewExpiry},
}

// retention is the purge tests' guard's: records expire an hour after
// their claim.
const retention = time.Hour

// shortLived is f with a guard whose records expire after retention.
func shortLived(f *fixture) *fixture {
	g := idem.NewGuard(f.store, idem.Config{Now: f.clock.Now, DefaultLease: testLease, LeaseMargin: 5 * time.Second, Protocol: testProtocol, Retention: retention})
	return &fixture{store: f.store, clock: f.clock, guard: g}
}

// expired lists f's expired records from since to now, the keys in ks
// only (the store is shared with no other test, but be exact).
func expired(ctx context.Context, t *testing.T, f *fixture, since time.Time, ks ...string) []idem.Expired {
	t.Helper()
	var out []idem.Expired
	for page, err := range idem.ListExpired(ctx, f.store, since, f.clock.Now()) {
		if err != nil {
			t.Fatalf("ListExpired: %v", err)
		}
		for _, e := range page {
			if slices.Contains(ks, e.PK) {
				out = append(out, e)
			}
		}
	}
	return out
}

func testPurgeDeletesOnlyTheExpired(ctx context.Context, t *testing.T, f *fixture) {
	g := shortLived(f)
	start := f.clock.Now()
	done, stuck, fresh := scope(), scope(), scope()
	c := mustAcquire(t, g, done, request("1"))
	if err := c.Complete(ctx, created); err != nil {
		t.Fatal(err)
	}
	mustAcquire(t, g, stuck, request("1")) // left in flight
	f.clock.Advance(retention + time.Minute)
	mustAcquire(t, g, fresh, request("1")) // live for another hour
	list := expired(ctx, t, f, start, done.PK(), stuck.PK(), fresh.PK())
	if len(list) != 2 || slices.ContainsFunc(list, func(e idem.Expired) bool { return e.PK == fresh.PK() }) {
		t.Fatalf("listed %+v; want the completed and the stuck record, not the live one", list)
	}
	for _, e := range list {
		if err := f.store.Purge(ctx, e, f.clock.Now()); err != nil {
			t.Fatalf("Purge %s: %v", idem.Ref(e.PK), err)
		}
		if err := f.store.Purge(ctx, e, f.clock.Now()); !errors.Is(err, idem.ErrNotExpired) {
			t.Fatalf("Purge of a purged record: %v, want ErrNotExpired", err)
		}
	}
	if list := expired(ctx, t, f, start, done.PK(), stuck.PK(), fresh.PK()); len(list) != 0 {
		t.Fatalf("still listed after the purge: %+v", list)
	}
	mustStatus(t, f, fresh.PK(), idem.StatusInProgress)
}

// testPurgeSparesAKeyClaimedAfresh: the key expired and was listed, then a
// client claimed it afresh (a new record, a later expiry): the purge of
// the listing must not delete the new record, or a retry would charge
// under another downstream key.
func testPurgeSparesAKeyClaimedAfresh(ctx context.Context, t *testing.T, f *fixture) {
	g := shortLived(f)
	start := f.clock.Now()
	s := scope()
	c := mustAcquire(t, g, s, request("1"))
	if err := c.Complete(ctx, created); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(retention + time.Minute)
	list := expired(ctx, t, f, start, s.PK())
	if len(list) != 1 {
		t.Fatalf("listed %+v", list)
	}
	again, err := g.guard.Begin(ctx, s, request("1"))
	if err != nil || again.Lease == nil {
		t.Fatalf("the fresh claim: %+v, %v", again, err)
	}
	if err := f.store.Purge(ctx, list[0], f.clock.Now()); !errors.Is(err, idem.ErrNotExpired) {
		t.Fatalf("Purge of a key claimed afresh: %v, want ErrNotExpired", err)
	}
	if rec := mustStatus(t, f, s.PK(), idem.StatusInProgress); rec.DownstreamKey != again.Lease.DownstreamKey() {
		t.Fatalf("the fresh claim's record changed: %+v", rec)
	}
}

// testPurgeSparesHeldRecords: a held record never expires, so it is never
// listed; one held after its listing is not deleted.
func testPurgeSparesHeldRecords(ctx context.Context, t *testing.T, f *fixture) {
	g := shortLived(f)
	start := f.clock.Now()
	held, later := scope(), scope()
	c := mustAcquire(t, g, held, request("1"))
	if err := c.HoldForOperator(ctx, "amount_differs", nil); err != nil {
		t.Fatal(err)
	}
	late := mustAcquire(t, g, later, request("1"))
	f.clock.Advance(retention + time.Minute)
	list := expired(ctx, t, f, start, held.PK(), later.PK())
	if len(list) != 1 || list[0].PK != later.PK() {
		t.Fatalf("listed %+v; want only the record that is not held", list)
	}
	// The record is held after the listing (its late worker met a
	// mismatch): it has no end of retention any more.
	if err := late.HoldForOperator(ctx, "amount_differs", nil); err != nil {
		t.Fatal(err)
	}
	if err := f.store.Purge(ctx, list[0], f.clock.Now()); !errors.Is(err, idem.ErrNotExpired) {
		t.Fatalf("Purge of a record held since its listing: %v, want ErrNotExpired", err)
	}
	for _, s := range []idem.Scope{held, later} {
		if rec := mustStatus(t, f, s.PK(), idem.StatusInProgress); !rec.Held() {
			t.Fatalf("a held record changed: %+v", rec)
		}
	}
}

// testPurgeConflictIsRetried: a purge's delete that conflicts with another
// region's write is retried (idem.RetryConflicts); refused on every try,
// it deletes nothing.
func testPurgeConflictIsRetried(ctx context.Context, t *testing.T, f *fixture) {
	g := shortLived(f)
	start := f.clock.Now()
	s := scope()
	mustAcquire(t, g, s, request("1"))
	f.clock.Advance(retention + time.Minute)
	list := expired(ctx, t, f, start, s.PK())
	if len(list) != 1 {
		t.Fatalf("listed %+v", list)
	}
	never := &Conflicting{Store: f.store, Refuse: RefuseFirst(WritePurge, -1)}
	if err := idem.RetryConflicts(ctx, func() error { return never.Purge(ctx, list[0], f.clock.Now()) }); !errors.Is(err, idem.ErrWriteConflict) {
		t.Fatalf("a purge refused on every try: %v", err)
	}
	if len(expired(ctx, t, f, start, s.PK())) != 1 {
		t.Fatal("a refused purge deleted the record")
	}
	once := &Conflicting{Store: f.store, Refuse: RefuseFirst(WritePurge, 1)}
	if err := idem.RetryConflicts(ctx, func() error { return once.Purge(ctx, list[0], f.clock.Now()) }); err != nil {
		t.Fatalf("a purge refused once: %v, want it retried", err)
	}
	if len(expired(ctx, t, f, start, s.PK())) != 0 {
		t.Fatal("the retried purge left the record")
	}
}

// testPurgeListsASettledRecordByItsNewExpiry: a held record has no end of
// retention; the operator's accept gives it one, a retention from the
// decision, and the purge lists it under that one, not before.
func testPurgeListsASettledRecordByItsNewExpiry(ctx context.Context, t *testing.T, f *fixture) {
	g := shortLived(f)
	start := f.clock.Now()
	s := scope()
	c := mustAcquire(t, g, s, request("1"))
	if err := c.HoldForOperator(ctx, "amount_differs", nil); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(2 * retention) // decided after the claim's retention would have ended
	lease, err := g.guard.TakeOverHeld(ctx, s.PK(), "", acceptBy("dec-accept-1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := lease.Accept(ctx, created); err != nil {
		t.Fatal(err)
	}
	if list := expired(ctx, t, f, start, s.PK()); len(list) != 0 {
		t.Fatalf("a record settled just now is listed as expired: %+v", list)
	}
	ends := mustStatus(t, f, s.PK(), idem.StatusCompleted).ExpiresAt
	f.clock.Advance(retention + time.Minute)
	list := expired(ctx, t, f, start, s.PK())
	if len(list) != 1 || list[0].ExpiresAt.Unix() != ends.Unix() {
		t.Fatalf("after the settlement's retention: listed %+v", list)
	}
	if err := f.store.Purge(ctx, list[0], f.clock.Now()); err != nil {
		t.Fatalf("Purge of the settled record: %v", err)
	}
	mustBeAbsent(t, f, s.PK())
}

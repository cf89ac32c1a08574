package idem

import (
	"context"
	"fmt"
	"hash/fnv"
	"iter"
	"time"
)

// Shards is how many partitions the listing of in-flight records has, so
// sweepers can read them in parallel. It is part of the stored layout: a
// record is listed under ShardOf(PK) while in progress, so changing it
// hides the records already in flight from their sweepers.
const Shards = 32

// ShardOf is the in-flight shard of the record under pk, in [0, Shards).
func ShardOf(pk string) int {
	h := fnv.New32a()
	h.Write([]byte(pk))
	return int(h.Sum32() % Shards)
}

// InFlight is an in-progress record as a sweeper lists it.
type InFlight struct {
	PK             string
	LeaseToken     string
	LeaseExpiresAt time.Time
	// StaleAt is when a sweeper last flagged the record, zero until then.
	StaleAt time.Time
	// ReconcileAttempts counts the flags.
	ReconcileAttempts int
}

// InFlightQuery selects one page of one shard's in-flight records, or of
// the held ones.
type InFlightQuery struct {
	// Shard is in [0, Shards).
	Shard int
	// Held lists the records held for an operator instead (Record.Held),
	// which are in no shard; Shard must then be 0.
	Held bool
	// EndedBefore keeps the records whose lease ended before it.
	EndedBefore time.Time
	// Limit bounds the page, 1 to MaxPage.
	Limit int
	// After continues the listing after this entry, the last of the
	// previous page; nil starts it.
	After *InFlight
}

// MaxPage bounds InFlightQuery.Limit.
const MaxPage = 1000

// Validate reports a query no store runs: a shard out of range, or a
// limit below 1 or above MaxPage.
func (q InFlightQuery) Validate() error {
	if q.Shard < 0 || q.Shard >= Shards || q.Limit < 1 || q.Limit > MaxPage || (q.Held && q.Shard != 0) {
		return fmt.Errorf("in-flight query: shard %d of %d (held %t), limit %d of at most %d", q.Shard, Shards, q.Held, q.Limit, MaxPage)
	}
	return nil
}

// PageSize is the page ListEndedBefore asks for.
const PageSize = 100

// ListEndedBefore pages through shard's in-progress records whose lease ended
// before cutoff, oldest lease first, one store round trip per page. It
// stops at the first error, which it yields. Breaking out of the loop stops
// the reads. Held records are not among them (HeldRecords lists those).
func ListEndedBefore(ctx context.Context, store Store, shard int, cutoff time.Time) iter.Seq2[[]InFlight, error] {
	return pages(ctx, store, InFlightQuery{Shard: shard, EndedBefore: cutoff, Limit: PageSize})
}

// HeldRecords pages through the records held for an operator whose lease
// ended before cutoff, as ListEndedBefore does.
func HeldRecords(ctx context.Context, store Store, cutoff time.Time) iter.Seq2[[]InFlight, error] {
	return pages(ctx, store, InFlightQuery{Held: true, EndedBefore: cutoff, Limit: PageSize})
}

func pages(ctx context.Context, store Store, q InFlightQuery) iter.Seq2[[]InFlight, error] {
	return func(yield func([]InFlight, error) bool) {
		pageThrough(q, func(q InFlightQuery) ([]InFlight, bool, error) { return store.ListInFlight(ctx, q) },
			func(q *InFlightQuery, last *InFlight) { q.After = last }, yield)
	}
}

// pageThrough yields the pages list returns from q on, one call each, the
// next one after the last entry of the one before (after), until list says
// there are no more or fails, which it yields. It reports whether yield
// asked for more.
func pageThrough[Q, E any](q Q, list func(Q) ([]E, bool, error), after func(*Q, *E), yield func([]E, error) bool) bool {
	for {
		page, more, err := list(q)
		if err != nil {
			yield(nil, err)
			return false
		}
		if len(page) > 0 && !yield(page, nil) {
			return false
		}
		if !more || len(page) == 0 {
			return true
		}
		after(&q, &page[len(page)-1])
	}
}

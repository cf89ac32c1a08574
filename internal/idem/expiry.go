package idem

import (
	"context"
	"fmt"
	"iter"
	"time"
)

// A table without TTL (a strongly consistent global table) keeps its
// expired records until a purge deletes them. The purge finds them through
// a listing by the hour they expire in, in Shards buckets per hour so no
// one partition takes every claim's entry, and never scans the table.
// Expiry itself never waits for the purge: every read and condition checks
// ExpiresAt.

// ExpiryBucket is the listing bucket of a record under pk that expires at
// expiresAt: the hour of expiresAt, and the record's shard.
func ExpiryBucket(pk string, expiresAt time.Time) string {
	return bucketOf(expiresAt.Unix()/3600, ShardOf(pk))
}

func bucketOf(hour int64, shard int) string { return fmt.Sprintf("%d#%02d", hour, shard) }

// Expired is a record as the purge lists it: its key and the end of
// retention it was listed with, which its delete is conditioned on.
type Expired struct {
	PK        string
	ExpiresAt time.Time
}

// ExpiredQuery selects one page of one bucket's records whose retention
// ended before Before.
type ExpiredQuery struct {
	Bucket string
	Before time.Time
	// Limit bounds the page, 1 to MaxPage.
	Limit int
	// After continues the listing after this entry; nil starts it.
	After *Expired
}

// Validate reports a query no store runs: no bucket, or a limit out of
// range.
func (q ExpiredQuery) Validate() error {
	if q.Bucket == "" || q.Limit < 1 || q.Limit > MaxPage {
		return fmt.Errorf("expired query: bucket %q, limit %d of at most %d", q.Bucket, q.Limit, MaxPage)
	}
	return nil
}

// ListExpired pages through the records whose retention ended before now
// in the hours that began from since on, every bucket of each hour, one
// store round trip per page. It stops at the first error, which it
// yields.
func ListExpired(ctx context.Context, store Store, since, now time.Time) iter.Seq2[[]Expired, error] {
	list := func(q ExpiredQuery) ([]Expired, bool, error) { return store.ListExpired(ctx, q) }
	after := func(q *ExpiredQuery, last *Expired) { q.After = last }
	return func(yield func([]Expired, error) bool) {
		for hour := since.Unix() / 3600; hour <= now.Unix()/3600; hour++ {
			for shard := range Shards {
				if !pageThrough(ExpiredQuery{Bucket: bucketOf(hour, shard), Before: now, Limit: PageSize}, list, after, yield) {
					return
				}
			}
		}
	}
}

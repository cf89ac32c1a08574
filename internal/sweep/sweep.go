// Package sweep finds records left in flight and asks for their
// reconciliation. It never calls the acquirer: it flags records in the table
// and enqueues reconcile commands, which the SQS consumer executes.
package sweep

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/idempotent-payments/idempay/internal/command"
	"github.com/idempotent-payments/idempay/internal/idem"
)

// Queue is where reconcile commands go.
type Queue interface {
	// SendBatch sends up to MaxBatch bodies in one call.
	SendBatch(ctx context.Context, bodies []string) error
	// MaxBatch is the most bodies one SendBatch call takes.
	MaxBatch() int
}

// Defaults for the zero fields of Config.
const (
	DefaultBackoff     = time.Minute
	DefaultMaxBackoff  = time.Hour
	DefaultFailingAt   = 3
	DefaultStopMargin  = 2 * time.Second
	DefaultParallelism = 8
	DefaultRunTime     = time.Minute
)

// Config tunes a Sweeper.
type Config struct {
	// InTransitBound (T) and ClockSkew: only leases that ended more than
	// T + ClockSkew ago are flagged (DESIGN §4 rule 3). Required.
	InTransitBound, ClockSkew time.Duration
	// Backoff is the wait before a flagged record is flagged again; it
	// doubles with every attempt up to MaxBackoff.
	Backoff, MaxBackoff time.Duration
	// FailingAt: records flagged this many times or more are reported failing.
	FailingAt int
	// StopMargin is kept back from the context deadline to return cleanly.
	// A context without a deadline gets DefaultRunTime.
	StopMargin time.Duration
	// Parallelism bounds the shards read at once.
	Parallelism int
	// PurgeWindow, for a table without TTL, is how far back each run
	// purges: the records whose retention ended in the hours from this long
	// before now. Zero for a table with TTL, which deletes them itself.
	PurgeWindow time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Sweeper flags stale in-flight records and enqueues their reconciliation.
type Sweeper struct {
	store idem.Store
	queue Queue
	cfg   Config
}

// New returns a Sweeper with cfg's zero fields defaulted.
func New(store idem.Store, queue Queue, cfg Config) *Sweeper {
	if cfg.Backoff <= 0 {
		cfg.Backoff = DefaultBackoff
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = DefaultMaxBackoff
	}
	if cfg.FailingAt <= 0 {
		cfg.FailingAt = DefaultFailingAt
	}
	if cfg.StopMargin <= 0 {
		cfg.StopMargin = DefaultStopMargin
	}
	if cfg.Parallelism <= 0 {
		cfg.Parallelism = DefaultParallelism
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Sweeper{store: store, queue: queue, cfg: cfg}
}

// Report is what one run did. Failing, OldestStale and Held feed the
// alarms.
type Report struct {
	Flagged   int `json:"flagged"`
	BackedOff int `json:"backed_off"`
	// Failing counts records flagged FailingAt times or more that are still in flight.
	Failing int `json:"failing"`
	// OldestStale is how long the oldest stale lease seen has been over.
	OldestStale time.Duration `json:"oldest_stale_ns"`
	// Held counts the records held for an operator (idem.Record.Held):
	// they are in no shard, so they are never flagged, reconciled or
	// counted as stale; only a person settles them.
	Held int `json:"held"`
	// OldestHeld is how long the oldest of them has been held.
	OldestHeld time.Duration `json:"oldest_held_ns"`
	// HeldByOperation splits Held by the records' operation (charge,
	// refund).
	HeldByOperation map[string]int `json:"held_by_operation,omitempty"`
	// HeldCounted is false when the run had no time left to count them:
	// Held, HeldByOperation and OldestHeld then say nothing.
	HeldCounted bool `json:"held_counted"`
	// Purged counts the expired records deleted (a table without TTL).
	Purged int `json:"purged"`
	// Complete is false when the run stopped at its deadline with shards,
	// the held records or the purge left.
	Complete bool `json:"complete"`
}

// Run sweeps every shard in parallel until done or until the context
// deadline less the stop margin; what is left waits for the next run. No
// record is started after that point, and one started finishes (flag and
// enqueue) within the margin, so a record is never flagged without its
// command being sent. Then, if there is time left, it counts the held
// records (Complete is false when there was not).
//
// The cutoff is the deployment's T + skew (Config), one for every shard,
// even though a record may carry a longer T of its own: flagging early
// only sends a reconcile command, and the reconciler checks the record's
// values before it acts (idem.Guard.TakeOverStale), so an early command
// changes nothing and the record is flagged again after the back-off.
func (s *Sweeper) Run(ctx context.Context) (Report, error) {
	now := s.cfg.Now()
	stopAt, stop := context.WithTimeout(ctx, DefaultRunTime)
	if d, ok := ctx.Deadline(); ok {
		stop()
		stopAt, stop = context.WithDeadline(ctx, d.Add(-s.cfg.StopMargin))
	}
	defer stop()
	cutoff := now.Add(-(s.cfg.InTransitBound + s.cfg.ClockSkew))

	var (
		mu    sync.Mutex
		total = Report{Complete: true}
		errs  []error
		wg    sync.WaitGroup
		slots = make(chan struct{}, s.cfg.Parallelism)
	)
	for shard := range idem.Shards {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			r, err := s.sweepShard(ctx, stopAt, shard, cutoff, now)
			mu.Lock()
			defer mu.Unlock()
			total.Flagged += r.Flagged
			total.BackedOff += r.BackedOff
			total.Failing += r.Failing
			total.OldestStale = max(total.OldestStale, r.OldestStale)
			total.Complete = total.Complete && r.Complete
			if err != nil {
				errs = append(errs, err)
			}
		})
	}
	wg.Wait()
	if stopAt.Err() == nil { // held records are few: one page, within the margin
		held, byOperation, oldest, err := s.countHeld(ctx, now)
		total.Held, total.HeldByOperation, total.OldestHeld, total.HeldCounted = held, byOperation, oldest, err == nil
		if err != nil {
			errs = append(errs, err)
		}
	} else {
		total.Complete = false
	}
	if s.cfg.PurgeWindow > 0 {
		purged, done, err := s.purge(ctx, stopAt, now)
		total.Purged, total.Complete = purged, total.Complete && done
		if err != nil {
			errs = append(errs, err)
		}
	}
	return total, errors.Join(errs...)
}

// purge deletes the records whose retention ended within the window, each
// delete conditioned on the record still being the one listed
// (idem.Store.Purge), so a key claimed afresh since is never deleted. It
// starts no delete after stopAt; done is false when it stopped there.
func (s *Sweeper) purge(ctx, stopAt context.Context, now time.Time) (purged int, done bool, err error) {
	for page, err := range idem.ListExpired(stopAt, s.store, now.Add(-s.cfg.PurgeWindow), now) {
		if stopAt.Err() != nil {
			return purged, false, nil
		}
		if err != nil {
			return purged, false, fmt.Errorf("expired records: %w", err)
		}
		for _, e := range page {
			if stopAt.Err() != nil {
				return purged, false, nil
			}
			err := idem.RetryConflicts(ctx, func() error { return s.store.Purge(ctx, e, now) })
			switch {
			case err == nil:
				purged++
			case errors.Is(err, idem.ErrNotExpired), errors.Is(err, idem.ErrWriteConflict):
				// Changed since the listing, or another region is writing it:
				// the next run lists it again if it is still expired.
			default:
				return purged, false, fmt.Errorf("purge %s: %w", idem.Ref(e.PK), err)
			}
		}
	}
	return purged, stopAt.Err() == nil, nil
}

// countHeld counts the held records, those under an operator's lease
// too, and the age of the oldest hold, read from each record (the listing
// does not carry it; held records are few, so one read each). It only
// reads: a held record is left to its operator.
func (s *Sweeper) countHeld(ctx context.Context, now time.Time) (int, map[string]int, time.Duration, error) {
	n, byOperation, oldest := 0, map[string]int{}, time.Duration(0)
	for page, err := range idem.HeldRecords(ctx, s.store, now.Add(24*time.Hour)) {
		if err != nil {
			return n, byOperation, oldest, fmt.Errorf("held records: %w", err)
		}
		for _, e := range page {
			rec, err := s.store.Get(ctx, e.PK, now)
			if errors.Is(err, idem.ErrNotFound) {
				continue // settled since it was listed
			}
			if err != nil {
				return n, byOperation, oldest, fmt.Errorf("held record %s: %w", idem.Ref(e.PK), err)
			}
			if rec.Held() {
				n++
				byOperation[rec.Operation]++
				oldest = max(oldest, now.Sub(rec.Hold.At))
			}
		}
	}
	return n, byOperation, oldest, nil
}

// sweepShard sweeps one shard, one page at a time, sending the commands of
// the flagged records every MaxBatch, so a failed send leaves at most one
// batch flagged without its commands (flagged again after the back-off).
// stopAt is done at the invocation's deadline less the margin; the writes
// use ctx, so a record flagged before that point has its command sent. now
// is the sweeper's clock for lease arithmetic.
func (s *Sweeper) sweepShard(ctx, stopAt context.Context, shard int, cutoff, now time.Time) (Report, error) {
	var r Report
	if stopAt.Err() != nil {
		return r, nil
	}
	for page, err := range idem.ListEndedBefore(ctx, s.store, shard, cutoff) {
		if err != nil {
			return r, err
		}
		var batch []string
		for _, e := range page {
			r.OldestStale = max(r.OldestStale, now.Sub(e.LeaseExpiresAt))
			if e.ReconcileAttempts >= s.cfg.FailingAt {
				r.Failing++
			}
			if !e.StaleAt.IsZero() && now.Before(e.StaleAt.Add(s.backoff(e.ReconcileAttempts))) {
				r.BackedOff++
				continue
			}
			if stopAt.Err() != nil {
				return r, s.queue.SendBatch(ctx, batch)
			}
			err := idem.RetryConflicts(ctx, func() error { return s.store.Flag(ctx, e, now) })
			if errors.Is(err, idem.ErrLeaseLost) || errors.Is(err, idem.ErrWriteConflict) {
				// Resolved, taken over or flagged by another sweeper meanwhile;
				// or another region keeps writing it: the next run sees it again.
				continue
			} else if err != nil {
				return r, errors.Join(fmt.Errorf("flag %s: %w", idem.Ref(e.PK), err), s.queue.SendBatch(ctx, batch))
			}
			body, err := command.Reconcile(e.PK).Encode()
			if err != nil {
				return r, errors.Join(err, s.queue.SendBatch(ctx, batch))
			}
			batch = append(batch, body)
			r.Flagged++
			if len(batch) == s.queue.MaxBatch() {
				if err := s.queue.SendBatch(ctx, batch); err != nil {
					return r, err
				}
				batch = batch[:0]
			}
		}
		if err := s.queue.SendBatch(ctx, batch); err != nil {
			return r, err
		}
		if stopAt.Err() != nil {
			return r, nil
		}
	}
	r.Complete = true
	return r, nil
}

// backoff is the wait after the attempts-th flag: Backoff doubling to MaxBackoff.
func (s *Sweeper) backoff(attempts int) time.Duration {
	d := s.cfg.Backoff
	for i := 1; i < attempts && d < s.cfg.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, s.cfg.MaxBackoff)
}

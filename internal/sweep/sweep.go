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
	"github.com/idempotent-payments/idempay/internal/idem/dynamostore"
)

// Index is what the sweeper needs of the in-flight index.
type Index interface {
	EndedBefore(ctx context.Context, shard string, cutoff time.Time, limit int32, from dynamostore.Cursor) ([]dynamostore.InFlight, dynamostore.Cursor, error)
	Flag(ctx context.Context, e dynamostore.InFlight, now time.Time) error
}

// Queue is where reconcile commands go.
type Queue interface {
	SendBatch(ctx context.Context, bodies []string) error
}

// Defaults for the zero fields of Config.
const (
	DefaultBackoff     = time.Minute
	DefaultMaxBackoff  = time.Hour
	DefaultFailingAt   = 3
	DefaultStopMargin  = 2 * time.Second
	DefaultParallelism = 8
)

// Config tunes a Sweeper.
type Config struct {
	// InTransitBound (T) and ClockSkew: only leases that ended more than
	// T + ClockSkew ago are flagged (DESIGN §4 rule 3). Required.
	InTransitBound, ClockSkew time.Duration
	// Shards of the in-flight index (idem.DefaultShards).
	Shards int
	// Backoff is the wait before a flagged record is flagged again; it
	// doubles with every attempt up to MaxBackoff.
	Backoff, MaxBackoff time.Duration
	// FailingAt: records flagged this many times or more are reported failing.
	FailingAt int
	// StopMargin is kept back from the context deadline to return cleanly.
	StopMargin time.Duration
	// Parallelism bounds the shards read at once.
	Parallelism int
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Sweeper flags stale in-flight records and enqueues their reconciliation.
type Sweeper struct {
	index Index
	queue Queue
	cfg   Config
}

// New returns a Sweeper with cfg's zero fields defaulted.
func New(index Index, queue Queue, cfg Config) *Sweeper {
	if cfg.Shards <= 0 {
		cfg.Shards = idem.DefaultShards
	}
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
	return &Sweeper{index: index, queue: queue, cfg: cfg}
}

// OutcomeSwept is the Outcome of a successful run in the sweeper's EMF
// line; the heartbeat alarm counts it.
const OutcomeSwept = "swept"

// Report is what one run did. Failing and OldestStale feed the alarms.
type Report struct {
	Flagged   int `json:"flagged"`
	BackedOff int `json:"backed_off"`
	// Failing counts records flagged FailingAt times or more that are still in flight.
	Failing int `json:"failing"`
	// OldestStale is how long the oldest stale lease seen has been over.
	OldestStale time.Duration `json:"oldest_stale_ns"`
	// Complete is false when the run stopped at its deadline with shards left.
	Complete bool `json:"complete"`
}

// Run sweeps every shard in parallel until done or until the context
// deadline less the stop margin; what is left waits for the next run. No
// record is started after that point, and one started finishes (flag and
// enqueue) within the margin, so a record is never flagged without its
// command being sent.
func (s *Sweeper) Run(ctx context.Context) (Report, error) {
	now := s.cfg.Now()
	stopAt := time.Now().Add(time.Minute)
	if d, ok := ctx.Deadline(); ok {
		stopAt = d.Add(-s.cfg.StopMargin)
	}
	cutoff := now.Add(-(s.cfg.InTransitBound + s.cfg.ClockSkew))

	var (
		mu    sync.Mutex
		total = Report{Complete: true}
		errs  []error
		wg    sync.WaitGroup
		slots = make(chan struct{}, s.cfg.Parallelism)
	)
	for _, shard := range dynamostore.Shards(s.cfg.Shards) {
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
	return total, errors.Join(errs...)
}

// sweepShard sweeps one shard; stopAt is wall-clock time (the invocation's
// deadline less the margin), now the sweeper's clock for lease arithmetic.
func (s *Sweeper) sweepShard(ctx context.Context, stopAt time.Time, shard string, cutoff, now time.Time) (Report, error) {
	var r Report
	var batch []string
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := s.queue.SendBatch(ctx, batch)
		batch = batch[:0]
		return err
	}
	var cursor dynamostore.Cursor
	for {
		if time.Now().After(stopAt) {
			return r, flush()
		}
		entries, next, err := s.index.EndedBefore(ctx, shard, cutoff, 100, cursor)
		if err != nil {
			return r, errors.Join(err, flush())
		}
		for _, e := range entries {
			r.OldestStale = max(r.OldestStale, now.Sub(e.LeaseExpiresAt))
			if e.ReconcileAttempts >= s.cfg.FailingAt {
				r.Failing++
			}
			if !e.StaleAt.IsZero() && now.Before(e.StaleAt.Add(s.backoff(e.ReconcileAttempts))) {
				r.BackedOff++
				continue
			}
			if time.Now().After(stopAt) {
				return r, flush()
			}
			if err := s.index.Flag(ctx, e, now); errors.Is(err, idem.ErrLeaseLost) {
				continue // resolved, taken over or flagged by another sweeper meanwhile
			} else if err != nil {
				return r, errors.Join(fmt.Errorf("flag %s: %w", e.PK, err), flush())
			}
			body, err := command.Reconcile(e.PK).Encode()
			if err != nil {
				return r, errors.Join(err, flush())
			}
			batch = append(batch, body)
			r.Flagged++
			if len(batch) == 10 {
				if err := flush(); err != nil {
					return r, err
				}
			}
		}
		if next.Done() {
			r.Complete = true
			return r, flush()
		}
		cursor = next
	}
}

// backoff is the wait after the attempts-th flag: Backoff doubling to MaxBackoff.
func (s *Sweeper) backoff(attempts int) time.Duration {
	d := s.cfg.Backoff
	for i := 1; i < attempts && d < s.cfg.MaxBackoff; i++ {
		d *= 2
	}
	return min(d, s.cfg.MaxBackoff)
}

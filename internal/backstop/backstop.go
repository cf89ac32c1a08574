// Package backstop is each region's backstop, in the multi-region mode,
// for the outcome events: it publishes the ledger and refund rows a
// stopped region left unpublished, and those its own publisher left, and
// beats the
// region's heartbeat. The sweeper runs it every minute.
package backstop

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/outbox"
	"github.com/idempotent-payments/idempay/internal/publish"
)

// Publisher is one region's part, in the multi-region mode, in publishing
// every ledger row's event once. The region that wrote a row publishes
// its event from its own stream and marks the row (publish.Handler.Books). Every
// region's run lists the rows that have waited longer than StaleAfter:
//   - another region's row, when that region's heartbeat is older than
//     StaleAfter too (it has stopped), is published here and marked;
//   - its own row, once it has waited twice StaleAfter (its own publisher
//     is behind or broken), is published here and marked;
//   - any other row waits for its region.
//
// Then it beats this region's heartbeat, unless it failed to publish one
// of its own rows: a region that cannot publish stops beating, so the
// others take its rows over.
//
// No row is lost to a region that stops between writing a row and
// publishing it: the row stays listed until some region marks it. Two
// regions may publish one row (a region stopped only for a while, or two
// regions taking over together): the same event, which subscribers drop
// by its id.
type Publisher struct {
	// Region is this region.
	Region string
	// Books list the unpublished rows, of every operation alike; Rows
	// read them.
	Books charge.Books
	Rows  Rows
	Topic publish.Topic
	// StaleAfter is how old a region's last heartbeat is when that region
	// has stopped, and how long a row waits before anyone but its region
	// publishes it. Several of the runs' interval, so one late run is not
	// a stop.
	StaleAfter time.Duration
	// StopMargin is kept back from the context's deadline: no row is
	// started after that.
	StopMargin time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Rows read a row of any operation by its id (dynamo.Rows).
type Rows interface {
	Row(ctx context.Context, id string) (outbox.Row, error)
}

// Report is what one run did.
type Report struct {
	// TakenOver counts the rows this run published for regions that had
	// stopped, Republished its own rows its publisher had left.
	TakenOver   int `json:"taken_over"`
	Republished int `json:"republished"`
	// Waiting counts the rows past StaleAfter left to their region: one
	// that still beats, or this one for less than twice StaleAfter.
	Waiting int `json:"waiting"`
	// Stopped are the regions whose rows this run found with a stale
	// heartbeat.
	Stopped []string `json:"stopped,omitempty"`
	// Beat is whether the run beat this region's heartbeat.
	Beat bool `json:"beat"`
	// Complete is false when the run stopped at its deadline with rows
	// left to look at.
	Complete bool `json:"complete"`
}

// Run publishes the rows of the regions that have stopped and the rows its
// own publisher has left, then beats this region's heartbeat. A row it
// cannot publish is left listed for the next run, and the error says how
// many.
func (p *Publisher) Run(ctx context.Context) (Report, error) {
	now := time.Now
	if p.Now != nil {
		now = p.Now
	}
	started := now()
	report := Report{Complete: true}
	var stopAt time.Time
	if d, ok := ctx.Deadline(); ok {
		stopAt = d.Add(-p.StopMargin)
	}
	stale := map[string]bool{}
	var failed []error
	ownFailed := false
	for u, err := range p.Books.Unpublished(ctx, started.Add(-p.StaleAfter)) {
		if err != nil {
			failed = append(failed, err) // a listing that cannot go on ends here
			continue
		}
		if !stopAt.IsZero() && now().After(stopAt) {
			report.Complete = false
			break
		}
		due, err := p.due(ctx, u, started, stale, &report)
		if err != nil {
			failed = append(failed, err)
			continue
		}
		if !due {
			report.Waiting++
			continue
		}
		if err := p.publish(ctx, u.ID); err != nil {
			failed = append(failed, err)
			ownFailed = ownFailed || u.Region == p.Region
			continue
		}
		if u.Region == p.Region {
			report.Republished++
		} else {
			report.TakenOver++
		}
	}
	if !ownFailed {
		err := idem.RetryConflicts(ctx, func() error { return p.Books.Beat(ctx, p.Region, started) })
		if err != nil {
			failed = append(failed, err)
		}
		report.Beat = err == nil
	}
	if len(failed) > 0 {
		return report, fmt.Errorf("%d rows or reads failed: %w", len(failed), errors.Join(failed...))
	}
	return report, nil
}

// due reports whether the run publishes u: its own row that has waited
// twice StaleAfter, or another region's whose heartbeat, read once a run
// (stale), is older than StaleAfter.
func (p *Publisher) due(ctx context.Context, u charge.Unpublished, started time.Time, stale map[string]bool, report *Report) (bool, error) {
	if u.Region == p.Region {
		return started.Sub(u.Since) > 2*p.StaleAfter, nil
	}
	stopped, known := stale[u.Region]
	if !known {
		last, err := p.Books.LastBeat(ctx, u.Region)
		if err != nil {
			return false, err
		}
		stopped = started.Sub(last) > p.StaleAfter
		stale[u.Region] = stopped
		if stopped {
			report.Stopped = append(report.Stopped, u.Region)
		}
	}
	return stopped, nil
}

// publish publishes row id's event from its row, of any operation
// (publish.Row), which marks the row.
func (p *Publisher) publish(ctx context.Context, id string) error {
	row, err := p.Rows.Row(ctx, id)
	if err == nil {
		err = publish.Row(ctx, p.Topic, p.Books, row)
	}
	if err != nil {
		return fmt.Errorf("take over %s: %w", idem.Ref(id), err)
	}
	return nil
}

package publish

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/idem"
)

// TakeOver is one region's part, in the multi-region mode, in publishing
// every ledger row's event once. The region that wrote a row publishes
// its event from its own stream and marks the row (Handler.Books); every
// region beats its heartbeat each run; and a region whose heartbeat is
// older than StaleAfter has stopped: another region publishes its rows
// that have waited longer than StaleAfter, and marks them.
//
// No row is lost to a region that stops between writing a row and
// publishing it: the row stays listed until some region marks it. Two
// regions may publish one row (a region stopped only for a while, or two
// regions taking over together): the same event, which subscribers drop
// by its id.
type TakeOver struct {
	// Region is this region; its own rows are never taken over.
	Region string
	Books  charge.Publication
	Ledger charge.Ledger
	Topic  Topic
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

// TakeOverReport is what one run did.
type TakeOverReport struct {
	// TakenOver counts the rows of stopped regions this run published.
	TakenOver int `json:"taken_over"`
	// Waiting counts the rows past StaleAfter whose region still beats:
	// that region's publisher is behind. Own counts this region's own.
	Waiting int `json:"waiting"`
	Own     int `json:"own"`
	// Stopped are the regions whose rows this run found with a stale
	// heartbeat.
	Stopped []string `json:"stopped,omitempty"`
	// Complete is false when the run stopped at its deadline with rows
	// left to look at.
	Complete bool `json:"complete"`
}

// Run beats this region's heartbeat, then publishes the rows of the
// regions that have stopped. A row it cannot publish is left listed for
// the next run, and the error says how many.
func (t *TakeOver) Run(ctx context.Context) (TakeOverReport, error) {
	now := time.Now
	if t.Now != nil {
		now = t.Now
	}
	started := now()
	report := TakeOverReport{Complete: true}
	if err := idem.RetryConflicts(ctx, func() error { return t.Books.Beat(ctx, t.Region, started) }); err != nil {
		return report, err
	}
	stopAt := time.Time{}
	if d, ok := ctx.Deadline(); ok {
		stopAt = d.Add(-t.StopMargin)
	}
	stale := map[string]bool{}
	var failed []error
	for u, err := range t.Books.Unpublished(ctx, started.Add(-t.StaleAfter)) {
		if err != nil {
			return report, errors.Join(append(failed, err)...)
		}
		if !stopAt.IsZero() && now().After(stopAt) {
			report.Complete = false
			break
		}
		if u.Region == t.Region {
			report.Own++
			continue
		}
		stopped, known := stale[u.Region]
		if !known {
			last, err := t.Books.LastBeat(ctx, u.Region)
			if err != nil {
				failed = append(failed, err)
				continue
			}
			stopped = started.Sub(last) > t.StaleAfter
			stale[u.Region] = stopped
			if stopped {
				report.Stopped = append(report.Stopped, u.Region)
			}
		}
		if !stopped {
			report.Waiting++
			continue
		}
		if err := t.takeOver(ctx, u.ID); err != nil {
			failed = append(failed, err)
			continue
		}
		report.TakenOver++
	}
	if len(failed) > 0 {
		return report, fmt.Errorf("%d rows not taken over: %w", len(failed), errors.Join(failed...))
	}
	return report, nil
}

// takeOver publishes charge id's event from its row, through Row.
func (t *TakeOver) takeOver(ctx context.Context, id string) error {
	c, err := t.Ledger.Get(ctx, id)
	if err != nil {
		return fmt.Errorf("take over %s: %w", idem.Ref(id), err)
	}
	if err := Row(ctx, t.Topic, t.Books, c); err != nil {
		return fmt.Errorf("take over %s: %w", idem.Ref(id), err)
	}
	return nil
}

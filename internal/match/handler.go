package match

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/deploy"
	"github.com/idempotent-payments/idempay/internal/obs"
)

// Metrics are the metric of each kind of line (Kinds): the day's count,
// which an alarm per kind reads.
var Metrics = map[string]string{
	MovementWithoutRow:     obs.MetricMovementsWithoutRow,
	RowWithoutMovement:     obs.MetricRowsWithoutMovement,
	TermsDiffer:            obs.MetricTermsDiffer,
	RefundedOverCaptured:   obs.MetricRefundedOverCaptured,
	CapturedOverAuthorized: obs.MetricCapturedOverAuthorized,
}

// Handler is the match's trigger: a scheduled event (daily, at a time set
// per environment) that matches the days before (deploy.MatchLookback) and, with
// Today, the current day so far, and writes the counts by kind of each day
// it matched.
type Handler struct {
	Matcher *Matcher
	// Today also matches the current day up to now less the grace: the
	// local stack's runs every few minutes. Deployed, a day is matched
	// once it is over.
	Today  bool
	Logger *slog.Logger
	// Metrics gets each matched day's counts (Metrics); nil skips them.
	Metrics *obs.Metrics
}

// Days are the days a run at now matches: the MatchLookback days before now
// less the grace, latest first, and today with Today.
func (h *Handler) Days(now time.Time) []time.Time {
	var days []time.Time
	if h.Today {
		days = append(days, acquirer.DayOf(now))
	}
	last := acquirer.DayOf(now.Add(-h.Matcher.Grace)).Add(-24 * time.Hour)
	for i := range deploy.MatchLookback {
		days = append(days, last.Add(-time.Duration(i)*24*time.Hour))
	}
	return days
}

// Handle matches each of Days and logs each day's summary. A day that
// fails does not stop the others; the invocation then fails, so the
// function's errors alarm sees it, and the next run takes the day again.
func (h *Handler) Handle(ctx context.Context, _ events.EventBridgeEvent) ([]Summary, error) {
	var out []Summary
	var errs []error
	for _, day := range h.Days(h.Matcher.Now()) {
		sum, err := h.Matcher.Run(ctx, day)
		h.Logger.InfoContext(ctx, "match", "day", day.Format(time.DateOnly), "movements", sum.Movements, "rows", sum.Rows,
			"unmatched", sum.Unmatched(), "new", sum.New, "done", sum.Done, "skipped", sum.Skipped, "error", err)
		if err != nil {
			errs = append(errs, err)
		} else {
			out = append(out, sum)
		}
		// A day done, or held by another run, was told by the run that
		// matched it; a run that counted tells, even if its finish failed.
		if h.Metrics != nil && !sum.Skipped && sum.Counts != nil {
			values := make(map[string]float64, len(Metrics))
			for kind, metric := range Metrics {
				values[metric] = float64(sum.Counts[kind])
			}
			h.Metrics.Values(values)
		}
	}
	return out, errors.Join(errs...)
}

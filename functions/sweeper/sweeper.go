package main

import (
	"context"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idempotent-payments/idempay/internal/obs"
	"github.com/idempotent-payments/idempay/internal/sweep"
)

// Handler runs one sweep per scheduled event and logs its report, which the
// stale-records alarm reads.
type Handler struct {
	Sweeper *sweep.Sweeper
	Logger  *slog.Logger
	// Metrics gets the run's counts as EMF (StaleFlagged, StaleFailing,
	// OldestStaleSeconds, HeldRecords, OldestHeldSeconds): the stale- and
	// held-records alarms read them. Nil skips it.
	Metrics *obs.Metrics
}

// Handle runs one sweep. An error (a shard it could not read or flag) fails
// the invocation so the sweeper-errors alarm sees it; the next run retries.
func (h *Handler) Handle(ctx context.Context, _ events.EventBridgeEvent) (sweep.Report, error) {
	r, err := h.Sweeper.Run(ctx)
	h.Logger.InfoContext(ctx, "sweep", "flagged", r.Flagged, "backed_off", r.BackedOff, "failing", r.Failing,
		"oldest_stale_seconds", int(r.OldestStale.Seconds()), "held", r.Held, "oldest_held_seconds", int(r.OldestHeld.Seconds()),
		"complete", r.Complete, "error", err)
	if h.Metrics != nil {
		outcome := obs.OutcomeSwept
		if err != nil {
			outcome = obs.OutcomeSweepFailed
		}
		values := map[string]float64{
			obs.MetricStaleFlagged: float64(r.Flagged), obs.MetricStaleFailing: float64(r.Failing), obs.MetricOldestStaleSeconds: r.OldestStale.Seconds(),
		}
		if r.HeldCounted { // a run that could not count them says nothing of them
			values[obs.MetricHeldRecords], values[obs.MetricOldestHeldSeconds] = float64(r.Held), r.OldestHeld.Seconds()
		}
		h.Metrics.Record(outcome, values)
	}
	return r, err
}

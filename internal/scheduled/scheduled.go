// Package scheduled is the sweeper's trigger: the scheduled event
// (EventBridge, every minute) that probes the table, runs one sweep
// (package sweep), closes the lapsed authorizations (capture.Expiry) and,
// in the multi-region mode, runs the region's backstop (package
// backstop), and reports their counts as metrics.
package scheduled

import (
	"context"
	"errors"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idempotent-payments/idempay/internal/backstop"
	"github.com/idempotent-payments/idempay/internal/capture"
	"github.com/idempotent-payments/idempay/internal/obs"
	"github.com/idempotent-payments/idempay/internal/operations"
	"github.com/idempotent-payments/idempay/internal/sweep"
)

// Handler probes the table and runs one sweep per scheduled event and
// logs its report, which the stale-records alarm reads; in the
// multi-region mode it then runs the region's backstop, which publishes
// the events of regions that stopped and beats the region's heartbeat.
type Handler struct {
	Sweeper *sweep.Sweeper
	// Backstop is nil in one region.
	Backstop *backstop.Publisher
	// Expiry closes the lapsed authorizations' balances; nil skips it.
	Expiry *capture.Expiry
	Logger *slog.Logger
	// Metrics gets the run's counts as EMF (StaleFlagged, StaleFailing,
	// OldestStaleSeconds, HeldRecords, each operation's held records
	// (HeldRefunds, HeldCaptures, HeldVoids), OldestHeldSeconds, the
	// expiry's AuthorizationsClosed, AuthorizationsExpired and
	// AuthorizationsWaiting, and in the
	// multi-region mode EventsTakenOver and RegionsStopped): the stale-
	// and held-records alarms read them. It gets the table probe's
	// answer on a line of its own (TableProbe), which the table-probe
	// alarm reads. Nil skips it.
	Metrics *obs.Metrics
}

// Report is what one run did: the sweep's report, and the backstop's in
// the multi-region mode (take_over: the rows it took over from stopped
// regions and from its own publisher).
type Report struct {
	sweep.Report
	Backstop *backstop.Report      `json:"take_over,omitempty"`
	Expiry   *capture.ExpiryReport `json:"expiry,omitempty"`
}

// Handle probes the table (Sweeper.Probe) and records the answer at once,
// before anything else runs, so every run that starts records it whatever
// the sweep then does; then it runs one sweep, then the backstop, then
// the expiry (each stops short of the invocation's deadline). An
// error (a shard it could not read or flag, a row it could not publish)
// fails the invocation so the sweeper-errors alarm sees it; the next run
// retries. The probe's own failure is told by its metric alone.
func (h *Handler) Handle(ctx context.Context, _ events.EventBridgeEvent) (Report, error) {
	h.probe(ctx)
	r, err := h.Sweeper.Run(ctx)
	h.Logger.InfoContext(ctx, "sweep", "flagged", r.Flagged, "backed_off", r.BackedOff, "failing", r.Failing,
		"oldest_stale_seconds", int(r.OldestStale.Seconds()), "held", r.Held, "oldest_held_seconds", int(r.OldestHeld.Seconds()),
		"complete", r.Complete, "error", err)
	values := map[string]float64{
		obs.MetricStaleFlagged: float64(r.Flagged), obs.MetricStaleFailing: float64(r.Failing), obs.MetricOldestStaleSeconds: r.OldestStale.Seconds(),
	}
	if r.HeldCounted { // a run that could not count them says nothing of them
		values[obs.MetricHeldRecords], values[obs.MetricOldestHeldSeconds] = float64(r.Held), r.OldestHeld.Seconds()
		for _, reg := range operations.All() {
			if reg.HeldMetric != "" {
				values[reg.HeldMetric] = float64(r.HeldByOperation[reg.Name])
			}
		}
	}
	report := Report{Report: r}
	if h.Backstop != nil {
		t, terr := h.Backstop.Run(ctx)
		h.Logger.InfoContext(ctx, "take-over", "taken_over", t.TakenOver, "republished", t.Republished, "waiting", t.Waiting, "stopped", t.Stopped,
			"beat", t.Beat, "complete", t.Complete, "error", terr)
		values[obs.MetricEventsTakenOver] = float64(t.TakenOver + t.Republished)
		values[obs.MetricRegionsStopped] = float64(len(t.Stopped))
		report.Backstop, err = &t, errors.Join(err, terr)
	}
	if h.Expiry != nil { // after the backstop, whose heartbeat says the region runs
		x, xerr := h.Expiry.Run(ctx)
		h.Logger.InfoContext(ctx, "expiry", "closed", x.Closed, "expired", x.Expired, "waiting", x.Waiting, "complete", x.Complete, "error", xerr)
		values[obs.MetricAuthorizationsClosed], values[obs.MetricAuthorizationsWaiting] = float64(x.Closed), float64(x.Waiting)
		values[obs.MetricAuthorizationsExpired] = float64(x.Expired)
		report.Expiry, err = &x, errors.Join(err, xerr)
	}
	if h.Metrics != nil {
		outcome := obs.OutcomeSwept
		if err != nil {
			outcome = obs.OutcomeSweepFailed
		}
		h.Metrics.Record(outcome, values)
	}
	return report, err
}

// probe makes the table probe's one read and records its answer:
// MetricTableProbe 1 when the table answered, 0 when not.
func (h *Handler) probe(ctx context.Context) {
	err := h.Sweeper.Probe(ctx)
	h.Logger.InfoContext(ctx, "table probe", "answered", err == nil, "error", err)
	if h.Metrics != nil {
		answered := 1.0
		if err != nil {
			answered = 0
		}
		h.Metrics.Values(map[string]float64{obs.MetricTableProbe: answered})
	}
}

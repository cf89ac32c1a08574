package scheduled

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/capture"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/charge/chargetest"
	"github.com/idempotent-payments/idempay/internal/command"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/idem/idemtest"
	"github.com/idempotent-payments/idempay/internal/obs"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/refund/refundtest"
	"github.com/idempotent-payments/idempay/internal/sweep"
	"github.com/idempotent-payments/idempay/internal/sweep/sweeptest"
)

// failingList is a store whose in-flight listing is down.
type failingList struct{ idem.Store }

func (failingList) ListInFlight(context.Context, idem.InFlightQuery) ([]idem.InFlight, bool, error) {
	return nil, false, errors.New("listing is down")
}

// invoke runs the handler on the scheduled event as the runtime would:
// the JSON payload in, the JSON answer out.
func invoke(t *testing.T, store idem.Store, now func() time.Time) (sweep.Report, string, string, error) {
	t.Helper()
	event, err := os.ReadFile("testdata/scheduled-event.json")
	if err != nil {
		t.Fatal(err)
	}
	var logs, emf bytes.Buffer
	q := &sweeptest.Queue{} // the SQS path proper is tested against the emulator in internal/sweep
	h := &Handler{
		Sweeper: sweep.New(store, q, sweep.Config{InTransitBound: 5 * time.Second, ClockSkew: time.Second, Now: now}),
		Logger:  slog.New(slog.NewJSONHandler(&logs, nil)),
		Metrics: obs.NewMetrics(&emf, "sweeper", "test"),
	}
	out, err := lambda.NewHandler(h.Handle).Invoke(context.Background(), event)
	var r sweep.Report
	if err == nil {
		if jerr := json.Unmarshal(out, &r); jerr != nil {
			t.Fatalf("answer %s: %v", out, jerr)
		}
		bodies := q.Drain()
		if len(bodies) != r.Flagged {
			t.Fatalf("%d commands sent for %d flagged", len(bodies), r.Flagged)
		}
		for _, b := range bodies {
			if c, derr := command.Decode(b); derr != nil || c.Type != command.TypeReconcile {
				t.Fatalf("command %s: %v", b, derr)
			}
		}
	}
	return r, logs.String(), emf.String(), err
}

// TestScheduledEvent: the scheduled event sweeps; the report is the
// answer, the log line and the EMF metrics; neither names an account or a
// key.
func TestScheduledEvent(t *testing.T) {
	t.Parallel()
	store := idemtest.NewMemoryStore()
	clock := idemtest.NewClock(time.Now())
	guard := idem.NewGuard(store, idem.Config{Now: clock.Now, DefaultLease: time.Second})
	for i := range 3 {
		s := idem.Scope{Operation: "charge", Account: "acct_secret", Key: fmt.Sprintf("key-secret-%03d", i)}
		if _, err := guard.Begin(context.Background(), s, idem.Canonical{{Name: "amount", Value: "1"}}); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(time.Minute)
	r, logs, emf, err := invoke(t, store, clock.Now)
	if err != nil || r.Flagged != 3 || !r.Complete || r.OldestStale < 59*time.Second {
		t.Fatalf("report %+v, %v", r, err)
	}
	if !strings.Contains(logs, `"flagged":3`) || !strings.Contains(emf, `"StaleFlagged":3`) || !strings.Contains(emf, string(obs.OutcomeSwept)) {
		t.Fatalf("log %s\nEMF %s", logs, emf)
	}
	for _, secret := range []string{"acct_secret", "key-secret"} {
		if strings.Contains(logs+emf, secret) {
			t.Fatalf("%s logged: %s %s", secret, logs, emf)
		}
	}
	if r, _, _, err := invoke(t, store, clock.Now); err != nil || r.Flagged != 0 || r.BackedOff != 3 {
		t.Fatalf("second run within the back-off: %+v, %v", r, err)
	}
}

// TestSweepFailureFailsTheInvocation: a store that cannot list fails the
// invocation, so the errors alarm sees it, and the metric says so.
func TestSweepFailureFailsTheInvocation(t *testing.T) {
	t.Parallel()
	_, logs, emf, err := invoke(t, failingList{idemtest.NewMemoryStore()}, time.Now)
	if err == nil || !strings.Contains(err.Error(), "listing is down") {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(emf, "sweep_failed") || !strings.Contains(logs, "listing is down") {
		t.Fatalf("log %s\nEMF %s", logs, emf)
	}
}

// failingGet is a store whose reads fail: the table does not answer the
// probe.
type failingGet struct{ idem.Store }

func (failingGet) Get(context.Context, string, time.Time) (*idem.Record, error) {
	return nil, errors.New("read timed out")
}

// tableDown is a store that answers nothing: neither the probe's read nor
// the sweep's listing.
type tableDown struct{ failingList }

func (tableDown) Get(context.Context, string, time.Time) (*idem.Record, error) {
	return nil, errors.New("read timed out")
}

// probes are the TableProbe values of the EMF lines in emf, each checked
// to be a line of its own, on the function and environment dimensions
// only (no Outcome, no Requests).
func probes(t *testing.T, emf string) []float64 {
	t.Helper()
	var out []float64
	for _, line := range strings.Split(strings.TrimSpace(emf), "\n") {
		var doc map[string]any
		if err := json.Unmarshal([]byte(line), &doc); err != nil {
			t.Fatalf("EMF line %q: %v", line, err)
		}
		v, ok := doc[obs.MetricTableProbe].(float64)
		if !ok {
			continue
		}
		if doc[obs.DimensionOutcome] != nil || doc[obs.MetricRequests] != nil || doc[obs.DimensionFunction] != "sweeper" {
			t.Fatalf("the probe's line counts a request or has no function: %s", line)
		}
		out = append(out, v)
	}
	return out
}

// TestTableProbe: every run records the table probe once, on a line of its
// own and before the sweep's: 1 when the table answered its read, 0 when
// not, whether the sweep then succeeds or fails; a failed probe alone does
// not fail the run.
func TestTableProbe(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		store     idem.Store
		probe     float64
		sweepFail bool
	}{
		{"table answers, sweep succeeds", idemtest.NewMemoryStore(), 1, false},
		{"table answers, sweep fails", failingList{idemtest.NewMemoryStore()}, 1, true},
		{"read fails, sweep succeeds", failingGet{idemtest.NewMemoryStore()}, 0, false},
		{"table down, sweep fails", tableDown{failingList{idemtest.NewMemoryStore()}}, 0, true},
	} {
		_, logs, emf, err := invoke(t, c.store, time.Now)
		if (err != nil) != c.sweepFail {
			t.Errorf("%s: the run's error %v", c.name, err)
		}
		if got := probes(t, emf); len(got) != 1 || got[0] != c.probe {
			t.Errorf("%s: TableProbe %v, want [%g]\nEMF %s", c.name, got, c.probe, emf)
		}
		if first, _, _ := strings.Cut(emf, "\n"); !strings.Contains(first, `"`+obs.MetricTableProbe+`"`) {
			t.Errorf("%s: the probe is not recorded before the sweep's line: %s", c.name, emf)
		}
		if want := fmt.Sprintf(`"answered":%t`, c.probe == 1); !strings.Contains(logs, `"msg":"table probe"`) || !strings.Contains(logs, want) {
			t.Errorf("%s: log %s", c.name, logs)
		}
	}
}

// TestExpiryInTheRun: a run closes the lapsed authorizations after the
// sweep: the report, the log line and the metrics say how many.
func TestExpiryInTheRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Now()
	ledger := chargetest.NewLedger()
	balances := refundtest.NewMemoryBalances()
	if _, err := ledger.Write(ctx, charge.Charge{Origin: op.Origin{ID: charge.ID(strings.Repeat("a", 40)), CreatedAt: now.Add(-time.Hour)},
		Status: acquirer.StatusAuthorized, Amount: 500, Currency: "BRL", AuthorizationExpiresAt: now.Add(-time.Minute)}); err != nil {
		t.Fatal(err)
	}
	var logs, emf bytes.Buffer
	h := &Handler{
		Sweeper: sweep.New(idemtest.NewMemoryStore(), &sweeptest.Queue{}, sweep.Config{InTransitBound: 5 * time.Second, ClockSkew: time.Second}),
		Expiry:  &capture.Expiry{Authorizations: ledger, Balances: balances.Captures()},
		Logger:  slog.New(slog.NewJSONHandler(&logs, nil)),
		Metrics: obs.NewMetrics(&emf, "sweeper", "test"),
	}
	r, err := h.Handle(ctx, events.EventBridgeEvent{})
	if err != nil || r.Expiry == nil || *r.Expiry != (capture.ExpiryReport{Closed: 1, Expired: 1, Complete: true}) {
		t.Fatalf("report %+v, %v", r.Expiry, err)
	}
	if !strings.Contains(logs.String(), `"msg":"expiry","closed":1`) || !strings.Contains(emf.String(), `"AuthorizationsClosed":1`) ||
		!strings.Contains(emf.String(), `"AuthorizationsExpired":1`) {
		t.Fatalf("log %s\nEMF %s", logs.String(), emf.String())
	}
}

package systemtest_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/localapi"
	"github.com/idempotent-payments/idempay/internal/obs"
	"github.com/idempotent-payments/idempay/internal/route"
)

// The anonymous load of TestProbeUnderAnonymousLoad: callers looping on
// the health route without a token, while the sweeper runs probeSweeps
// times, sweepGap apart.
const (
	anonymousCallers = 40
	probeSweeps      = 4
	sweepGap         = time.Second
)

// TestProbeUnderAnonymousLoad: what decides a region's health is the
// sweeper's table probe, which no caller of the API can reach: while 40
// callers without a token loop on GET /health, every sweep records the
// probe's metric, and it is 1 every time. The control: the health route
// is indeed under load all along (its answers are counted, and every one
// is an answer: 200 while the table answers), so the probe held up under
// a load that is real. A charge made under the load still succeeds.
func TestProbeUnderAnonymousLoad(t *testing.T) {
	t.Parallel()
	logs, err := os.CreateTemp(t.TempDir(), "functions-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { appendLogs(t, logs) })
	s := newStackWith(t, localapi.StackConfig{Output: logs})
	_, healthPath, _ := strings.Cut(route.Health, " ")

	ctx, stop := context.WithCancel(context.Background())
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: anonymousCallers}} // each caller keeps its connection
	defer client.CloseIdleConnections()
	var (
		mu       sync.Mutex
		statuses = map[int]int{}
		failures []error
		wg       sync.WaitGroup
	)
	for range anonymousCallers {
		wg.Go(func() {
			for ctx.Err() == nil {
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+healthPath, nil)
				if err != nil {
					t.Error(err)
					return
				}
				resp, err := client.Do(req)
				if err != nil {
					if ctx.Err() == nil {
						mu.Lock()
						failures = append(failures, err)
						mu.Unlock()
					}
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				mu.Lock()
				statuses[resp.StatusCode]++
				mu.Unlock()
			}
		})
	}
	answered := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, c := range statuses {
			n += c
		}
		return n
	}

	var sweeps []time.Duration
	for range probeSweeps {
		time.Sleep(sweepGap)
		before, start := answered(), time.Now()
		if _, err := s.Sweep(context.Background()); err != nil {
			t.Fatalf("sweep under load: %v", err)
		}
		sweeps = append(sweeps, time.Since(start))
		if answered() == before {
			t.Errorf("no health answer during a sweep: the load stopped")
		}
	}
	// A charge under the same load: the local gateway has no route
	// throttle (API Gateway's is publicRate, infra/stack.go), so this only
	// says what the load costs a charge here; the probe above took no part.
	start := time.Now()
	if r := postCharge(t, s, "acct_health", "health-load-0001", visa); r.status != http.StatusCreated {
		t.Fatalf("a charge under the load: %d %s", r.status, r.body)
	}
	charge := time.Since(start)
	stop()
	wg.Wait()

	probes := tableProbes(t, logs.Name())
	if len(probes) != probeSweeps || slices.ContainsFunc(probes, func(v float64) bool { return v != 1 }) {
		t.Fatalf("the table probe over %d sweeps under load: %v, want 1 each", probeSweeps, probes)
	}
	// The control: the load was real, and answered.
	mu.Lock()
	defer mu.Unlock()
	total := 0
	for _, c := range statuses {
		total += c
	}
	if len(failures) > 0 || total < anonymousCallers*probeSweeps || statuses[http.StatusOK] != total {
		t.Fatalf("the anonymous load: %d answers by status %v, %d failed (first: %v); want at least %d, all 200",
			total, statuses, len(failures), append(failures, nil)[0], anonymousCallers*probeSweeps)
	}
	t.Logf("%d anonymous callers: %d health answers (%v) over %d sweeps; the sweeps took %v; the probe %v; a charge took %v",
		anonymousCallers, total, statuses, probeSweeps, sweeps, probes, charge)
}

// tableProbes are the sweeper's TableProbe values in the function log at
// path, in order.
func tableProbes(t *testing.T, path string) []float64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []float64
	for _, line := range strings.Split(string(b), "\n") {
		var doc map[string]any
		if json.Unmarshal([]byte(line), &doc) != nil || doc["_aws"] == nil || doc[obs.DimensionFunction] != obs.FunctionSweeper {
			continue
		}
		if v, ok := doc[obs.MetricTableProbe].(float64); ok {
			out = append(out, v)
		}
	}
	return out
}

package systemtest_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idempotent-payments/idempay/internal/deploy"
	"github.com/idempotent-payments/idempay/internal/idem/dynamostore/dynamotest"
	"github.com/idempotent-payments/idempay/internal/localapi"
)

// memorySizes are the memory sizes the cost report compares.
var memorySizes = []int{128, 256, 512, 1024}

// memoryLoad is how many requests each phase of a path sends.
const memoryLoad = 300

// BenchmarkMemorySizes: the charge API as Lambda runs it at each memory
// size of memorySizes: a stack whose every execution environment runs
// under that size's CPU quota and memory limit (StackConfig.Shape), two
// charge environments. For each path (first executions, replays of one
// key, storms of 20 on a key):
//
//   - capacity_rps_per_env: what the two environments answer at most,
//     loaded by benchClients closed-loop clients, per environment;
//     throttled_pct is the share of CFS periods in which they used their
//     whole quota then: low where this machine, not the quota, is the
//     limit;
//   - p50_ms and p99_ms: the latency at half of that capacity, requests
//     sent open-loop at a steady rate, each timed from when it was due;
//   - billed_ms: the charge function's invocations then, each rounded up
//     to the millisecond as Lambda bills them, on average; cpu_ms: the
//     environments' CPU (their cgroups') per request; publisher_invocations
//     and publisher_billed_ms: the publisher's invocations per request
//     then, and their billed duration; log_bytes: the bytes every function
//     logged per request then, the emulator's report lines included, as
//     CloudWatch Logs ingests Lambda's; raw_put_ms: the median conditional
//     put to DynamoDB Local before the size's run, the yardstick of its
//     latencies.
//
// cold-start: the first invocation of a new environment of that size
// against the next (cold_ms, warm_ms): the bootstrap's start and its
// clients, which Lambda bills as the init phase. memory: each charge
// environment's RSS (cgroup, no page cache) after the run (rss_mb) and
// its peak (peak_rss_mb), and the invocations the two served, per
// environment (invocations).
// Where cgroups cannot be made, the stack runs unshaped and every
// sub-benchmark reports shaped=0. Each size runs on a DynamoDB Local of
// its own, started afresh (benchStack), so no size inherits the stream
// records of the runs before it.
func BenchmarkMemorySizes(b *testing.B) {
	for _, mb := range memorySizes {
		b.Run(fmt.Sprintf("%dMB", mb), func(b *testing.B) {
			logs, err := os.CreateTemp(b.TempDir(), "functions-*.log")
			if err != nil {
				b.Fatal(err)
			}
			defer logs.Close()
			s, token, run := benchStack(b, "memory", func(c *localapi.StackConfig) {
				c.Shape, c.MemoryMB, c.SweepInterval, c.Output = true, mb, -1, logs
			})
			shaped := 1.0
			if s.Unshaped != "" {
				b.Logf("unshaped: %s", s.Unshaped)
				shaped = 0
			}
			for i := range 2 * benchClients { // both environments warm
				if err := benchCharge(s, token, fmt.Sprintf("memory-warm-%s-%d", run, i), 201); err != nil {
					b.Fatal(err)
				}
			}
			raw := ms(rawPut(b))
			for _, path := range []struct {
				name string
				key  func(prefix string, i int) string
				want []int
			}{
				{"first-execution", func(p string, i int) string { return fmt.Sprint(p, i) }, []int{201}},
				{"replay", func(p string, _ int) string { return p + "replayed" }, []int{201}},
				{"storm-of-20", func(p string, i int) string { return fmt.Sprint(p, i/20) }, []int{201, 409}},
			} {
				b.Run(path.name, func(b *testing.B) {
					for iter := 0; b.Loop(); iter++ {
						prefix := fmt.Sprintf("memory-%s-%s-%d-", path.name, run, iter)
						send := func(phase string) func(i int) error {
							if path.name == "replay" { // the key completed before its replays
								if err := benchCharge(s, token, path.key(prefix+phase+"-", 0), 201); err != nil {
									b.Fatal(err)
								}
							}
							return func(i int) error { return benchCharge(s, token, path.key(prefix+phase+"-", i), path.want...) }
						}
						m := measurePath(b, s, logs, send("capacity"), send("half"))
						b.ReportMetric(m.capacity/2, "capacity_rps_per_env")
						b.ReportMetric(m.throttled*100, "throttled_pct")
						b.ReportMetric(ms(m.p50), "p50_ms")
						b.ReportMetric(ms(m.p99), "p99_ms")
						b.ReportMetric(m.billed, "billed_ms")
						b.ReportMetric(ms(m.cpu), "cpu_ms")
						b.ReportMetric(m.publisherInvocations, "publisher_invocations")
						b.ReportMetric(m.publisherBilled, "publisher_billed_ms")
						b.ReportMetric(m.logBytes, "log_bytes")
						b.ReportMetric(raw, "raw_put_ms")
						b.ReportMetric(shaped, "shaped")
						b.ReportMetric(0, "ns/op")
					}
				})
			}
			b.Run("cold-start", func(b *testing.B) {
				for b.Loop() {
					cold, warm := coldStart(b, mb, shaped == 1)
					b.ReportMetric(ms(cold), "cold_ms")
					b.ReportMetric(ms(warm), "warm_ms")
					b.ReportMetric(shaped, "shaped")
					b.ReportMetric(0, "ns/op")
				}
			})
			b.Run("memory", func(b *testing.B) {
				envs, err := s.Charge.Environments()
				if err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
				}
				var rss, peak int64
				for _, e := range envs {
					rss, peak = max(rss, e.RSS), max(peak, e.PeakRSS)
				}
				b.ReportMetric(float64(rss)/(1<<20), "rss_mb")
				b.ReportMetric(float64(peak)/(1<<20), "peak_rss_mb")
				b.ReportMetric(float64(s.Charge.Invocations())/2, "invocations")
				b.ReportMetric(shaped, "shaped")
				b.ReportMetric(0, "ns/op")
			})
		})
	}
}

// pathFigures are one path's figures at one memory size.
type pathFigures struct {
	capacity  float64 // requests/s of both environments, closed loop
	throttled float64 // the share of CFS periods the environments were throttled in, at capacity
	p50, p99  time.Duration
	billed    float64       // ms per invocation, each rounded up
	cpu       time.Duration // the environments' CPU per request, at half capacity
	// publisherInvocations per request and their billed ms, logBytes per
	// request, at half capacity
	publisherInvocations, publisherBilled, logBytes float64
}

// measurePath loads the path to capacity (closedLoop) and then at half of
// it (openLoop), memoryLoad requests each; logs is where the functions
// log.
func measurePath(b *testing.B, s *localapi.Stack, logs *os.File, closedLoop, openLoop func(i int) error) pathFigures {
	b.Helper()
	var m pathFigures
	before := usage(b, s)
	m.capacity = closedLoopRate(b, memoryLoad, closedLoop)
	after := usage(b, s)
	if periods := after.Periods - before.Periods; periods > 0 {
		m.throttled = float64(after.Throttled-before.Throttled) / float64(periods)
	}
	s.Charge.RecordDurations()
	s.Publisher.RecordDurations()
	logged := fileSize(b, logs)
	lat := openLoopLatencies(b, memoryLoad, m.capacity/2, openLoop)
	time.Sleep(time.Second) // the last rows' events published
	durations, published := s.Charge.TakeDurations(), s.Publisher.TakeDurations()
	m.logBytes = float64(fileSize(b, logs)-logged) / memoryLoad
	end := usage(b, s)
	m.p50, m.p99 = lat[len(lat)/2], lat[len(lat)*99/100]
	for _, d := range durations {
		m.billed += math.Ceil(float64(d) / float64(time.Millisecond))
	}
	m.billed /= float64(max(1, len(durations)))
	m.cpu = (end.CPU - after.CPU) / memoryLoad
	m.publisherInvocations = float64(len(published)) / memoryLoad
	for _, d := range published {
		m.publisherBilled += math.Ceil(float64(d) / float64(time.Millisecond))
	}
	m.publisherBilled /= float64(max(1, len(published)))
	return m
}

// fileSize is f's size now.
func fileSize(b *testing.B, f *os.File) int64 {
	b.Helper()
	fi, err := f.Stat()
	if err != nil {
		b.Fatal(err)
	}
	return fi.Size()
}

// usage adds up the charge environments' counters.
func usage(b *testing.B, s *localapi.Stack) localapi.Environment {
	b.Helper()
	envs, err := s.Charge.Environments()
	if err != nil {
		b.Fatal(err)
	}
	var total localapi.Environment
	for _, e := range envs {
		total.CPU += e.CPU
		total.Periods += e.Periods
		total.Throttled += e.Throttled
	}
	return total
}

// closedLoopRate sends n requests from benchClients clients, each sending
// its next as soon as its last is answered, and returns requests/s.
func closedLoopRate(b *testing.B, n int, next func(i int) error) float64 {
	b.Helper()
	var mu sync.Mutex
	var failed error
	work := make(chan int)
	start := time.Now()
	var wg sync.WaitGroup
	for range benchClients {
		wg.Go(func() {
			for i := range work {
				if err := next(i); err != nil {
					mu.Lock()
					failed = err
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	if failed != nil {
		b.Fatal(failed)
	}
	return float64(n) / time.Since(start).Seconds()
}

// openLoopLatencies sends n requests at rate a second, each when it is
// due whatever the others are doing, and returns their latencies, sorted,
// each from when it was due (so a request that waited for an environment
// counts its wait).
func openLoopLatencies(b *testing.B, n int, rate float64, next func(i int) error) []time.Duration {
	b.Helper()
	interval := time.Duration(float64(time.Second) / rate)
	lat := make([]time.Duration, n)
	var mu sync.Mutex
	var failed error
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		due := start.Add(time.Duration(i) * interval)
		time.Sleep(time.Until(due))
		wg.Go(func() {
			err := next(i)
			lat[i] = time.Since(due)
			if err != nil {
				mu.Lock()
				failed = err
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if failed != nil {
		b.Fatal(failed)
	}
	slices.Sort(lat)
	saveLatencies(b, lat)
	return lat
}

// coldStart is the first invocation of a new charge environment of
// memoryMB (shaped when shape) and the one after it.
func coldStart(b *testing.B, memoryMB int, shape bool) (cold, warm time.Duration) {
	b.Helper()
	cfg := localapi.PoolConfig{
		RIE: rieBin, Bootstrap: filepath.Join(binDir, deploy.Local().Function(deploy.FunctionCharge).Binary, "bootstrap"), Name: "charge", Instances: 1,
		Timeout: 10 * time.Second, Env: []string{"TABLE_NAME=cold-start", "ACQUIRER_URL=http://127.0.0.1:1", "ACQUIRER_ID=sandbox"},
	}
	if shape {
		cfg.MemoryMB = memoryMB
	}
	p, err := localapi.StartPool(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	for _, d := range []*time.Duration{&cold, &warm} {
		t0 := time.Now()
		if _, err := p.Invoke(context.Background(), getEvent); err != nil {
			b.Fatal(err)
		}
		*d = time.Since(t0)
	}
	return cold, warm
}

// rawPut is the median of 50 conditional puts straight to DynamoDB
// Local, one at a time: the yardstick of each size's run.
func rawPut(b *testing.B) time.Duration {
	b.Helper()
	client := dynamotest.Client(b)
	table := dynamotest.NewTable(b, client)
	lat := make([]time.Duration, 50)
	for i := range lat {
		t0 := time.Now()
		_, err := client.PutItem(context.Background(), &dynamodb.PutItemInput{
			TableName:           aws.String(table),
			Item:                map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: fmt.Sprint("raw-", i)}},
			ConditionExpression: aws.String("attribute_not_exists(pk)"),
		})
		if err != nil {
			b.Fatal(err)
		}
		lat[i] = time.Since(t0)
	}
	slices.Sort(lat)
	return lat[len(lat)/2]
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

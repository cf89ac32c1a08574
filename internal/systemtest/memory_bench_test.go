package systemtest_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
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
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/idempotent-payments/idempay/internal/charging"
	"github.com/idempotent-payments/idempay/internal/deploy"
	"github.com/idempotent-payments/idempay/internal/dynamo/dynamotest"
	"github.com/idempotent-payments/idempay/internal/localapi"
	"github.com/idempotent-payments/idempay/internal/route"
)

// memorySizes are the memory sizes the cost report compares.
var memorySizes = []int{128, 256, 512, 1024}

// sizesToMeasure are memorySizes, or the one size LOCAL_MEMORY_MB names
// (`make bench LOCAL_MEMORY_MB=512`).
func sizesToMeasure(b *testing.B) []int {
	b.Helper()
	mb, err := localapi.MemoryFromEnv(os.Getenv)
	if err != nil {
		b.Fatal(err)
	}
	if mb > 0 {
		return []int{mb}
	}
	return memorySizes
}

// memoryLoad is how many requests each phase of a path sends; sweeps is
// how many sweeper runs the sweep is timed over.
const (
	memoryLoad = 300
	// actionsPerCharge: the refund and capture paths' actions on each
	// charge, half of refund.MaxEntries, so its balances average a
	// quarter of the cap.
	actionsPerCharge = 25
	sweeps           = 5
)

// actionPath is an HTTP path that acts on charges made before its load,
// untimed, each of the body charge: perCharge POSTs of body to routeKey
// on each.
type actionPath struct {
	name, routeKey, body string
	charge               string
	perCharge            int
}

// actionPaths are the action paths BenchmarkMemorySizes measures:
// refunds of 1 unit and captures of 1 unit that leave the rest capturable,
// actionsPerCharge on each charge or authorization, so the balances the
// load updates hold 1 to actionsPerCharge entries; and a void of each
// authorization.
var actionPaths = []actionPath{
	{name: "refund", routeKey: route.Refund, body: `{"amount": 1}`, charge: visa, perCharge: actionsPerCharge},
	{name: "capture", routeKey: route.Capture, body: `{"amount": 1, "final": false}`, charge: visaAuthorization, perCharge: actionsPerCharge},
	{name: "void", routeKey: route.Void, body: `{}`, charge: visaAuthorization, perCharge: 1},
}

// BenchmarkMemorySizes: the charge API as Lambda runs it at each memory
// size of sizesToMeasure: a stack whose every execution environment runs
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
//     then, and their billed duration; log_bytes: the bytes of the JSON
//     lines every function wrote per request then (functionLines), which
//     CloudWatch Logs ingests: the emulator's START, END and REPORT lines
//     are left out, as the stack's system log level WARN drops Lambda's;
//     raw_put_ms: the median conditional
//     put to DynamoDB Local before the size's run, the yardstick of its
//     latencies.
//
// refund, capture and void (actionPaths): the same figures of each
// action path, its charges or authorizations made before the load,
// untimed.
//
// queue-command: charge commands on the first producer's queue, through
// the local event source mapping (one poller, so one consumer environment
// at work at a time): capacity_rps_per_env is what it handles with
// memoryLoad commands waiting, and p50_ms and p99_ms are each command's
// time from its send to the end of the invocation that handled it
// (Stack.Commands) when sent at half that rate; billed_ms and cpu_ms are
// per consumer invocation and per command, commands_per_invocation the
// batches' mean size then.
//
// floor-first-execution and floor-replay: the yardstick (BenchmarkFunctionCPU)
// in two environments of that size, invoked directly: the round trips of
// a first execution (4) or none, as a replay of one key is served from
// the warm cache: its capacity per environment and its CPU per request,
// what the charge paths would reach if the bootstrap spent nothing above
// the floor.
//
// sweep: the sweeper's billed duration per run, over sweeps runs on the
// table the paths left (nothing stale in it), its environment warm.
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
	for _, mb := range sizesToMeasure(b) {
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
						reportPath(b, measurePath(b, s, logs, send("capacity"), send("half")), shaped)
						b.ReportMetric(raw, "raw_put_ms")
					}
				})
			}
			for _, a := range actionPaths {
				b.Run(a.name, func(b *testing.B) {
					for iter := 0; b.Loop(); iter++ {
						prefix := fmt.Sprintf("memory-%s-%s-%d-", a.name, run, iter)
						send := func(phase string) func(i int) error {
							charges := benchCharges(b, s, token, fmt.Sprint(prefix, phase, "-charge-"), (memoryLoad+a.perCharge-1)/a.perCharge, a.charge)
							return func(i int) error {
								return benchAct(s, token, a.routeKey, charges[i/a.perCharge], fmt.Sprint(prefix, phase, "-", i), a.body)
							}
						}
						reportPath(b, measurePath(b, s, logs, send("capacity"), send("half")), shaped)
					}
				})
			}
			b.Run("queue-command", func(b *testing.B) {
				for iter := 0; b.Loop(); iter++ {
					m := measureQueue(b, s, logs, fmt.Sprintf("memory-queue-%s-%d-", run, iter))
					b.ReportMetric(m.capacity, "capacity_rps_per_env")
					b.ReportMetric(m.throttled*100, "throttled_pct")
					b.ReportMetric(ms(m.p50), "p50_ms")
					b.ReportMetric(ms(m.p99), "p99_ms")
					b.ReportMetric(m.billed, "billed_ms")
					b.ReportMetric(ms(m.cpu), "cpu_ms")
					if m.invocations > 0 {
						b.ReportMetric(1/m.invocations, "commands_per_invocation")
					}
					b.ReportMetric(m.publisherInvocations, "publisher_invocations")
					b.ReportMetric(m.publisherBilled, "publisher_billed_ms")
					b.ReportMetric(m.logBytes, "log_bytes")
					b.ReportMetric(shaped, "shaped")
					b.ReportMetric(0, "ns/op")
				}
			})
			b.Run("sweep", func(b *testing.B) {
				ctx := context.Background()
				if _, err := s.Sweep(ctx); err != nil { // its environment warm
					b.Fatal(err)
				}
				for b.Loop() {
					s.Sweeper.Durations.Record()
					for range sweeps {
						if _, err := s.Sweep(ctx); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(billedMS(s.Sweeper.Durations.Take()), "billed_ms")
					b.ReportMetric(shaped, "shaped")
					b.ReportMetric(0, "ns/op")
				}
			})
			floor := startYardstick(b, mb*int(shaped), nil)
			for _, f := range []struct {
				path  string
				calls int
			}{{"floor-first-execution", 4}, {"floor-replay", 0}} {
				b.Run(f.path, func(b *testing.B) {
					payload := yardstickEvent(f.calls)
					for b.Loop() {
						invoke := func(int) error {
							_, err := floor.Invoke(context.Background(), payload)
							return err
						}
						rate := closedLoopRate(b, memoryLoad, invoke)
						before := usage(b, floor) // its CPU at half of capacity, as the paths'
						var failed firstError
						paced(memoryLoad, rate/2, func(i int, _ time.Time) {
							if err := invoke(i); err != nil {
								failed.set(err)
							}
						})
						if err := failed.get(); err != nil {
							b.Fatal(err)
						}
						b.ReportMetric(rate/2, "capacity_rps_per_env")
						b.ReportMetric(ms((usage(b, floor).CPU-before.CPU)/memoryLoad), "cpu_ms")
						b.ReportMetric(float64(f.calls), "round_trips")
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
				invocations := 0
				for _, e := range envs {
					rss, peak = max(rss, e.RSS), max(peak, e.PeakRSS)
					invocations += e.Invocations
				}
				b.ReportMetric(float64(rss)/(1<<20), "rss_mb")
				b.ReportMetric(float64(peak)/(1<<20), "peak_rss_mb")
				b.ReportMetric(float64(invocations)/float64(max(1, len(envs))), "invocations")
				b.ReportMetric(shaped, "shaped")
				b.ReportMetric(0, "ns/op")
			})
		})
	}
}

// afterInvocations is how many invocations each environment of
// BenchmarkMemoryAfterInvocations serves: as many as its warm cache holds
// (charging.DefaultCacheSize), so the cache ends full.
const afterInvocations = charging.DefaultCacheSize

// BenchmarkMemoryAfterInvocations: the RSS of each of the two charge
// environments at the smallest memory size measured after afterInvocations first
// executions each, every one of a key of its own, so that its warm cache
// ends full: the most (rss_mb) and the peak (peak_rss_mb) of the two, and
// the fewest invocations either served (invocations). The environments
// have the size's memory limit but no CPU quota (StackConfig.MemoryOnly):
// at 128 MB's quota the requests would take about 20 minutes, and the
// quota changes how long they take, not what the process keeps. An
// environment replaced on the way (killed at its memory limit, say)
// fails the benchmark.
func BenchmarkMemoryAfterInvocations(b *testing.B) {
	mb := sizesToMeasure(b)[0]
	s, token, run := benchStack(b, "memory-after", func(c *localapi.StackConfig) {
		c.Shape, c.MemoryMB, c.MemoryOnly, c.SweepInterval = true, mb, true, -1
	})
	if s.Unshaped != "" { // no groups: no counters to read
		b.Logf("unshaped: %s", s.Unshaped)
		b.ReportMetric(0, "shaped")
		return
	}
	for b.Loop() {
		for round := 0; ; round++ {
			envs, err := s.Charge.Environments()
			if err != nil {
				b.Fatal(err)
			}
			if n := s.Charge.Replaced(); n > 0 || round > 3 {
				b.Fatalf("after %d rounds, %d environments replaced (out of memory?): %+v", round, n, envs)
			}
			fewest := afterInvocations
			for _, e := range envs {
				fewest = min(fewest, e.Invocations)
			}
			if fewest >= afterInvocations {
				var rss, peak int64
				for _, e := range envs {
					rss, peak = max(rss, e.RSS), max(peak, e.PeakRSS)
				}
				b.ReportMetric(float64(rss)/(1<<20), "rss_mb")
				b.ReportMetric(float64(peak)/(1<<20), "peak_rss_mb")
				b.ReportMetric(float64(fewest), "invocations")
				b.ReportMetric(float64(mb), "memory_mb")
				b.ReportMetric(1, "shaped")
				break
			}
			closedLoopRate(b, 2*(afterInvocations-fewest), func(i int) error {
				return benchCharge(s, token, fmt.Sprintf("after-%s-%d-%d", run, round, i), 201)
			})
		}
	}
	b.ReportMetric(0, "ns/op")
}

// pathFigures are one path's figures at one memory size.
type pathFigures struct {
	capacity  float64 // requests/s of both environments, closed loop
	throttled float64 // the share of CFS periods the environments were throttled in, at capacity
	p50, p99  time.Duration
	// At half capacity: invocations per request of the loaded function,
	// billed ms per invocation (each rounded up), its environments' CPU
	// per request; the publisher's invocations per request and their
	// billed ms; the bytes logged per request.
	invocations, billed                             float64
	cpu                                             time.Duration
	publisherInvocations, publisherBilled, logBytes float64
}

// reportPath reports an HTTP path's figures: its capacity per
// environment (of two), the rest as measurePath took them.
func reportPath(b *testing.B, m pathFigures, shaped float64) {
	b.ReportMetric(m.capacity/2, "capacity_rps_per_env")
	b.ReportMetric(m.throttled*100, "throttled_pct")
	b.ReportMetric(ms(m.p50), "p50_ms")
	b.ReportMetric(ms(m.p99), "p99_ms")
	b.ReportMetric(m.billed, "billed_ms")
	b.ReportMetric(ms(m.cpu), "cpu_ms")
	b.ReportMetric(m.publisherInvocations, "publisher_invocations")
	b.ReportMetric(m.publisherBilled, "publisher_billed_ms")
	b.ReportMetric(m.logBytes, "log_bytes")
	b.ReportMetric(shaped, "shaped")
	b.ReportMetric(0, "ns/op")
}

// measurePath loads the path to capacity (closedLoop) and then at half of
// it (openLoop), memoryLoad requests each; logs is where the functions
// log.
func measurePath(b *testing.B, s *localapi.Stack, logs *os.File, closedLoop, openLoop func(i int) error) pathFigures {
	b.Helper()
	var m pathFigures
	var lat []time.Duration
	_, runtimes := s.Charge.Processes()
	profiled(b, b.Name(), runtimes, func() {
		before := usage(b, s.Charge)
		m.capacity = closedLoopRate(b, memoryLoad, closedLoop)
		m.throttled = throttled(before, usage(b, s.Charge))
		atHalf(b, s, s.Charge, logs, &m, func() { lat = openLoopLatencies(b, memoryLoad, m.capacity/2, openLoop) })
	})
	m.p50, m.p99 = lat[len(lat)/2], lat[len(lat)*99/100]
	return m
}

// measureQueue sends memoryLoad charge commands to the first producer's
// queue at once (in batches of 10) and times how fast the consumer
// handles them: its capacity, one environment at a time. Then it sends
// memoryLoad more, one at a time at half that rate, and takes each one's
// time from its send to the end of the invocation that handled it.
func measureQueue(b *testing.B, s *localapi.Stack, logs *os.File, prefix string) pathFigures {
	b.Helper()
	ctx := context.Background()
	account := localapi.DefaultProducers[0].Accounts[0]
	body := func(phase string, i int) *string {
		return aws.String(chargeCommand(account, fmt.Sprint(prefix, phase, "-", i), visa))
	}
	var m pathFigures
	var times []time.Duration
	_, runtimes := s.Consumer.Processes()
	profiled(b, b.Name(), runtimes, func() {
		before := usage(b, s.Consumer)
		s.Commands.Record()
		start := time.Now()
		for i := 0; i < memoryLoad; i += 10 {
			var entries []sqstypes.SendMessageBatchRequestEntry
			for j := i; j < min(i+10, memoryLoad); j++ {
				entries = append(entries, sqstypes.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(j)), MessageBody: body("capacity", j)})
			}
			out, err := s.SQS.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(s.QueueURL), Entries: entries})
			if err != nil || len(out.Failed) > 0 {
				b.Fatalf("send: %v %+v", err, out)
			}
		}
		handledAll(b, s, memoryLoad)
		m.capacity = memoryLoad / time.Since(start).Seconds()
		m.throttled = throttled(before, usage(b, s.Consumer))
		atHalf(b, s, s.Consumer, logs, &m, func() {
			s.Commands.Record()
			var failed firstError
			paced(memoryLoad, m.capacity/2, func(i int, _ time.Time) {
				if _, err := s.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(s.QueueURL), MessageBody: body("half", i)}); err != nil {
					failed.set(err)
				}
			})
			if err := failed.get(); err != nil {
				b.Fatal(err)
			}
			times = handledAll(b, s, memoryLoad)
		})
	})
	slices.Sort(times)
	m.p50, m.p99 = times[len(times)/2], times[len(times)*99/100]
	return m
}

// handledAll waits until the consumer has handled n commands since
// s.Commands began recording, and returns their times.
func handledAll(b *testing.B, s *localapi.Stack, n int) []time.Duration {
	b.Helper()
	var times []time.Duration
	for deadline := time.Now().Add(2 * time.Minute); len(times) < n; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d commands handled after 2 minutes", len(times), n)
		}
		times = append(times, s.Commands.Take()...)
	}
	return times
}

// atHalf runs load, memoryLoad requests at half capacity, and fills in
// m's figures of it from pool, the function it loads, from the publisher
// and from logs, where the functions log.
func atHalf(b *testing.B, s *localapi.Stack, pool *localapi.Pool, logs *os.File, m *pathFigures, load func()) {
	b.Helper()
	pool.Durations.Record()
	s.Publisher.Durations.Record()
	logged, start := fileSize(b, logs), usage(b, pool)
	load()
	time.Sleep(time.Second) // the last rows' events published
	durations, published := pool.Durations.Take(), s.Publisher.Durations.Take()
	m.logBytes = float64(functionLines(b, logs, logged)) / memoryLoad
	m.cpu = (usage(b, pool).CPU - start.CPU) / memoryLoad
	m.invocations = float64(len(durations)) / memoryLoad
	m.billed = billedMS(durations)
	m.publisherInvocations = float64(len(published)) / memoryLoad
	m.publisherBilled = billedMS(published)
}

// billedMS is the mean of durations, each rounded up to the millisecond
// as Lambda bills them.
func billedMS(durations []time.Duration) float64 {
	var total float64
	for _, d := range durations {
		total += math.Ceil(float64(d) / float64(time.Millisecond))
	}
	return total / float64(max(1, len(durations)))
}

// throttled is the share of CFS periods between before and after in
// which the environments used their whole quota.
func throttled(before, after localapi.Environment) float64 {
	if periods := after.Periods - before.Periods; periods > 0 {
		return float64(after.Throttled-before.Throttled) / float64(periods)
	}
	return 0
}

// functionLines is the size of the lines the functions wrote to f from
// offset on: their JSON lines, each with its newline. The emulator's own
// lines (START, END, REPORT and its diagnostics) are not counted.
func functionLines(b *testing.B, f *os.File, offset int64) int64 {
	b.Helper()
	sc := bufio.NewScanner(io.NewSectionReader(f, offset, fileSize(b, f)-offset))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var n int64
	for sc.Scan() {
		if line := sc.Bytes(); len(line) > 0 && line[0] == '{' {
			n += int64(len(line)) + 1
		}
	}
	if err := sc.Err(); err != nil {
		b.Fatal(err)
	}
	return n
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

// usage adds up the counters of pool's environments.
func usage(b *testing.B, pool *localapi.Pool) localapi.Environment {
	b.Helper()
	envs, err := pool.Environments()
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
	_, elapsed, err := drive(benchClients, n, next)
	if err != nil {
		b.Fatal(err)
	}
	return float64(n) / elapsed.Seconds()
}

// openLoopLatencies sends n requests at rate a second, each when it is
// due whatever the others are doing, and returns their latencies, sorted,
// each from when it was due (so a request that waited for an environment
// counts its wait).
func openLoopLatencies(b *testing.B, n int, rate float64, next func(i int) error) []time.Duration {
	b.Helper()
	lat := make([]time.Duration, n)
	var failed firstError
	paced(n, rate, func(i int, due time.Time) {
		err := next(i)
		lat[i] = time.Since(due)
		if err != nil {
			failed.set(err)
		}
	})
	if err := failed.get(); err != nil {
		b.Fatal(err)
	}
	slices.Sort(lat)
	saveLatencies(b, lat)
	return lat
}

// paced runs do(i, due) for i below n, each in a goroutine of its own
// started when it is due, at rate a second, whatever the others are doing,
// and returns when all have returned.
func paced(n int, rate float64, do func(i int, due time.Time)) {
	interval := time.Duration(float64(time.Second) / rate)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		due := start.Add(time.Duration(i) * interval)
		time.Sleep(time.Until(due))
		wg.Go(func() { do(i, due) })
	}
	wg.Wait()
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

package systemtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/deploy"
	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/localapi"
	"github.com/idempotent-payments/idempay/internal/route"
	"github.com/idempotent-payments/idempay/internal/systemtest/yardstick"
)

// cpuOf is the CPU the processes have used so far: the time each of
// their threads has spent on a CPU, user and system, in nanoseconds
// (/proc/PID/task/TID/schedstat, its first field). /proc/PID/stat's
// utime and stime count in ticks of 10 ms, and each reading is cut to a
// whole tick: over a block of 100 requests of about a millisecond each,
// that is up to a tenth of the block's figure. A thread that ends takes
// its time with it; the Go processes measured keep theirs.
func cpuOf(tb testing.TB, pids ...int) time.Duration {
	tb.Helper()
	var total time.Duration
	for _, pid := range pids {
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		if err != nil {
			tb.Fatalf("process %d: %v", pid, err)
		}
		for _, task := range tasks {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, task.Name()))
			if err != nil {
				continue // the thread has ended
			}
			ns, err := strconv.ParseInt(strings.Fields(string(b))[0], 10, 64)
			if err != nil {
				tb.Fatalf("process %d, thread %s: schedstat %q", pid, task.Name(), b)
			}
			total += time.Duration(ns)
		}
	}
	return total
}

// dynamoDBLocal finds the DynamoDB Local process serving
// AWS_ENDPOINT_URL_DYNAMODB, by its command line.
func dynamoDBLocal(tb testing.TB) int {
	tb.Helper()
	u, err := url.Parse(os.Getenv("AWS_ENDPOINT_URL_DYNAMODB"))
	if err != nil || u.Port() == "" {
		tb.Fatalf("AWS_ENDPOINT_URL_DYNAMODB=%q", os.Getenv("AWS_ENDPOINT_URL_DYNAMODB"))
	}
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range cmdlines {
		b, _ := os.ReadFile(f)
		args := strings.Split(string(b), "\x00")
		for i, a := range args {
			if a == "-port" && i+1 < len(args) && args[i+1] == u.Port() && strings.Contains(string(b), "DynamoDBLocal") {
				pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
				return pid
			}
		}
	}
	tb.Fatalf("no DynamoDB Local process on port %s", u.Port())
	return 0
}

// BenchmarkFunctionCPU: process CPU per request, as the bill counts it —
// the CPU time of each process of the pipeline (cpuOf), around cpuRounds ×
// cpuBlock requests an iteration on each path, each on keys of its own: a
// first execution, a replay, a request whose key is in flight, a refund, a
// capture and a void (through the charge function's two instances) and a
// charge command from the queue (the consumer's two). The processes are
// the function's bootstraps, their emulators (the RIE), DynamoDB Local,
// and the sandbox acquirer; first executions and replays come through the
// gateway in this process from the load's clients in a child process
// (childRole), so they also have the gateway's and the clients' figures;
// the other paths' requests are sent from this process, and have not. At 128
// MB Lambda gives a function about 1/14 of a vCPU, so a CPU millisecond
// here costs about 14 ms of wall time there (projected_128MB_ms). With
// -benchtime Kx a figure is the mean over all K iterations' requests
// (tally). The table's stream is left unread throughout: the publisher's
// invocations would compete with the function for the machine's cores,
// which in Lambda they do not share.
//
// The sdk-floor-* runs are the SDK floor (yardstick.SDKHandler, and
// SDKQueueHandler for the queue's commands): each path's DynamoDB calls
// through aws-sdk-go-v2 with the functions' client, on the stack's table,
// and its acquirer POST, nothing else. What the function spends above it
// is the engine's and the handler's. The function's path and its SDK
// floor take turns within each iteration, in cpuRounds blocks each
// (measureInTurns), each going first in half the rounds, so that the two
// are measured over the same stretch of the machine's time; the
// function's sub-benchmark reports the ratio (x_sdk_floor) and the
// floor's its figures.
//
// The floor-* runs are the plain yardstick, measured after: the yardstick
// function (a handler that makes the same number of plain HTTP round
// trips, each answered after yardstickLatency, and nothing else) under the
// same RIE, invoked directly.
func BenchmarkFunctionCPU(b *testing.B) {
	sandboxURL, sandboxPID := startSandbox(b)
	s, token, run := benchStack(b, cpuStack, func(c *localapi.StackConfig) {
		c.AcquirerURL, c.SweepInterval, c.NoEventSourceMapping, c.NoStreamMapping = sandboxURL, -1, true, true
	})
	c := &cpuBench{s: s, token: token, run: run, db: dynamoDBLocal(b), sandboxPID: sandboxPID}
	c.warm(b, "start")
	c.rec = recordPaths(b, s, token, "cpu-recorded-"+run)
	warmSDK := func(i int) []byte {
		return c.rec.sdkEvent(yardstick.BenchFirstExecution, fmt.Sprintf("sdk-warm-%s-%d", run, i))
	}
	c.sdk = startYardstick(b, 0, warmSDK,
		yardstick.EnvMode+"="+yardstick.ModeSDK, yardstick.EnvTable+"="+s.TableName, deploy.EnvSkipResponseCRC32+"=true",
		yardstick.EnvAnswer+"="+c.rec.answers())
	c.sdkQueue = startYardstick(b, 0, func(i int) []byte { return sqsEvent(fmt.Sprintf("sdk-queue-warm-%s-%d", run, i)) },
		yardstick.EnvMode+"="+yardstick.ModeSDKQueue, yardstick.EnvTable+"="+s.TableName, deploy.EnvSkipResponseCRC32+"=true")
	for i, batch := range commandBatches(b, s, "cpu-queue-warm-"+run+"-", 2*benchClients, 1) { // both consumers warm
		if err := deliverBatch(s.Consumer, batch); err != nil {
			b.Fatalf("warm-up %d: %v", i, err)
		}
	}
	floors := map[string]*tally{} // the SDK floor's, by its sub-benchmark, measured in turns with the function's
	for _, p := range yardstick.Benches {
		b.Run(p.Path, func(b *testing.B) {
			var fn, floor tally
			floorName := strings.TrimSuffix(b.Name(), p.Path) + p.Floor // its profiles' name
			for iter := 0; b.Loop(); iter++ {
				rounds := make([]cpuRound, cpuRounds)
				for r := range rounds {
					rounds[r] = c.round(b, p.Path, iter, r)
				}
				if onCompleted(p.Path) {
					c.freshRuntimes(b, p.Path, iter)
				}
				for r, round := range rounds {
					if p.Path == yardstick.BenchInFlight {
						// Claimed just before, by a worker that holds them
						// for a minute.
						claimKeys(b, s, round.keys, cpuBlock)
					}
					function := func() { c.measureFunction(b, &fn, round) }
					floorBlock := func() { c.measureFloor(b, &floor, floorName, round) }
					if r%2 == 0 { // each goes first in half the rounds
						function()
						floorBlock()
					} else {
						floorBlock()
						function()
					}
				}
			}
			fn.report(b)
			b.ReportMetric(fn.mean("bootstrap_cpu_ms")/floor.mean("bootstrap_cpu_ms"), "x_sdk_floor")
			b.ReportMetric(fn.mean("bootstrap_cpu_ms")*14, "projected_128MB_ms")
			b.ReportMetric(float64(fn.requests)/fn.wall.Seconds(), "req/s")
			b.ReportMetric(0, "ns/op")
			floors[p.Floor] = &floor
		})
		b.Run(p.Floor, func(b *testing.B) {
			floor := floors[p.Floor]
			if floor == nil {
				b.Skipf("measured in turns with %s: run both", p.Path)
			}
			floor.report(b)
			b.ReportMetric(float64(floor.requests)/floor.wall.Seconds(), "req/s")
			b.ReportMetric(0, "ns/op")
		})
	}
	floor := startYardstick(b, 0, nil)
	for _, floorOf := range []struct {
		path  string
		calls int
	}{{"floor-first-execution", 4}, {"floor-replay", 1}} {
		b.Run(floorOf.path, func(b *testing.B) {
			payload := yardstickEvent(floorOf.calls)
			var t tally
			for b.Loop() {
				emulators, runtimes := floor.Processes()
				fn0, rie0 := cpuOf(b, runtimes...), cpuOf(b, emulators...)
				profiled(b, b.Name(), runtimes, func() {
					load(b, cpuRounds*cpuBlock, func(int) error {
						_, err := floor.Invoke(context.Background(), payload)
						return err
					})
				})
				t.add("bootstrap_cpu_ms", cpuOf(b, runtimes...)-fn0)
				t.add("rie_cpu_ms", cpuOf(b, emulators...)-rie0)
				t.requests += cpuRounds * cpuBlock
			}
			t.report(b)
			b.ReportMetric(float64(floorOf.calls), "round_trips")
			b.ReportMetric(float64(yardstickLatency.Microseconds())/1000, "answered_after_ms")
		})
	}
}

// cpuBench is what BenchmarkFunctionCPU's paths share: the stack and its
// account's token, the run's prefix for keys, the processes measured
// beside the function's (DynamoDB Local, the sandbox acquirer), the
// function's recorded paths, and the SDK floor's pools (sdkQueue for the
// queue's commands, sdk for the other paths).
type cpuBench struct {
	s              *localapi.Stack
	token, run     string
	db, sandboxPID int
	rec            recorded
	sdk, sdkQueue  *localapi.Pool
}

// cpuRound is one round of one of BenchmarkFunctionCPU's iterations on a
// path: the function's keys and the floor's, and what was made ready on
// them before the iteration's first block.
type cpuRound struct {
	path          string
	keys, sdkKeys string            // prefixes, the function's and the floor's
	charges       []string          // the ids of the charges made on keys (read by refunds) or authorized (by captures, voids); replays' are unread
	batches       []events.SQSEvent // queue commands: received, to deliver
}

// keysOf is round r of iteration iter on path, its keys named and nothing
// made ready.
func (c *cpuBench) keysOf(path string, iter, r int) cpuRound {
	return cpuRound{path: path, keys: fmt.Sprintf("cpu-%s-%s-%d-%d-", path, c.run, iter, r), sdkKeys: fmt.Sprintf("sdk-%s-%s-%d-%d-", path, c.run, iter, r)}
}

// sdkKey is the floor's i-th key of the round.
func (r cpuRound) sdkKey(i int) string { return r.sdkKeys + strconv.Itoa(i) }

// group is processes whose CPU a block adds up under one metric unit.
type group struct {
	unit string
	pids []int
}

// groups are the processes a block on pool measures: its runtimes (the
// first group, profiled), their emulators, DynamoDB Local, then more.
func (c *cpuBench) groups(pool *localapi.Pool, more ...group) []group {
	emulators, runtimes := pool.Processes()
	return append([]group{{"bootstrap_cpu_ms", runtimes}, {"rie_cpu_ms", emulators}, {"dynamodb_cpu_ms", []int{c.db}}}, more...)
}

// warm charges 2 × benchClients keys named after name through the
// gateway, so that both charge instances run, their runtimes started.
func (c *cpuBench) warm(b *testing.B, name string) {
	b.Helper()
	for i := range 2 * benchClients {
		if err := benchCharge(c.s, c.token, fmt.Sprintf("cpu-warm-%s-%s-%d", name, c.run, i), 201); err != nil {
			b.Fatal(err)
		}
	}
}

// round makes round r of iteration iter on path ready, on keys of its
// own: the function's charges for replays and refunds, and its
// authorizations for captures and voids, made beforehand, and the
// floor's by its own first executions; the floor's keys in flight,
// claimed; or the commands, put on the queue and received.
func (c *cpuBench) round(b *testing.B, path string, iter, r int) cpuRound {
	b.Helper()
	round := c.keysOf(path, iter, r)
	switch path {
	case yardstick.BenchReplay, yardstick.BenchRefund:
		round.charges = benchCharges(b, c.s, c.token, round.keys, cpuBlock, visa)
	case yardstick.BenchCapture, yardstick.BenchVoid:
		round.charges = benchCharges(b, c.s, c.token, round.keys, cpuBlock, visaAuthorization)
	case yardstick.BenchQueueCommand:
		round.batches = commandBatches(b, c.s, round.keys, cpuBlock, commandBatch)
	}
	switch {
	case onCompleted(path):
		mustDrive(b, cpuBlock, c.floorRequests(round, yardstick.BenchFirstExecution))
	case path == yardstick.BenchInFlight: // claimed for the whole iteration (no lease), the function's just before each block (claimKeys)
		mustDrive(b, cpuBlock, func(i int) error {
			return yardstick.Hold(context.Background(), c.s.DynamoDB, c.s.TableName, round.sdkKey(i))
		})
	}
	return round
}

// onCompleted reports whether path's requests read the record of a key
// completed beforehand: a replay's own, or that of the charge a refund, a
// capture or a void acts on.
func onCompleted(path string) bool {
	_, act := acts[path]
	return act || path == yardstick.BenchReplay
}

// freshRuntimes replaces the charge function's runtimes and the floor's
// with fresh ones, warmed on keys of round -1, so that nothing comes from
// the warm cache of the instance that completed a key (a replay's record,
// or the record of the charge a refund, a capture or a void acts on):
// each request makes its round trips, as the floor's do. Both are
// measured on processes of the same age.
func (c *cpuBench) freshRuntimes(b *testing.B, path string, iter int) {
	b.Helper()
	before := c.keysOf(path, iter, -1)
	c.s.Charge.KillIdleRuntimes()
	c.warm(b, before.keys)
	c.sdk.KillIdleRuntimes()
	warmPool(b, c.sdk, func(i int) []byte { return c.rec.sdkEvent(yardstick.BenchFirstExecution, before.sdkKey(i)) })
}

// acts are the requests on a charge BenchmarkFunctionCPU measures, by
// path: each one's route and body.
var acts = map[string]struct{ route, body string }{
	yardstick.BenchRefund:  {route.Refund, `{"amount": 1}`},
	yardstick.BenchCapture: {route.Capture, `{"amount": 1, "final": false}`},
	yardstick.BenchVoid:    {route.Void, `{}`},
}

// floorRequests asks the SDK floor for path's calls on round's keys.
func (c *cpuBench) floorRequests(round cpuRound, path string) func(i int) error {
	return func(i int) error { return c.rec.invokeSDK(c.sdk, path, round.sdkKey(i)) }
}

// measureFunction sends round's requests to the function as its path's
// come (the queue's commands delivered from this process, as the event
// source mapping does; requests in flight, refunds, captures and voids
// from this process; first executions and replays through the gateway
// from the load's clients), and adds their CPU to t.
func (c *cpuBench) measureFunction(b *testing.B, t *tally, round cpuRound) {
	b.Helper()
	sandbox := group{"sandbox_cpu_ms", []int{c.sandboxPID}}
	act, isAct := acts[round.path]
	switch {
	case round.path == yardstick.BenchQueueCommand:
		measureInTurns(b, t, b.Name(), cpuBlock, c.groups(c.s.Consumer, sandbox), func() {
			t.wall += mustDrive(b, len(round.batches), func(i int) error { return deliverBatch(c.s.Consumer, round.batches[i]) })
		})
	case round.path == yardstick.BenchInFlight:
		measureInTurns(b, t, b.Name(), cpuBlock, c.groups(c.s.Charge, sandbox), func() {
			t.wall += mustDrive(b, cpuBlock, func(i int) error {
				return benchCharge(c.s, c.token, round.keys+strconv.Itoa(i), http.StatusConflict)
			})
		})
	case isAct:
		measureInTurns(b, t, b.Name(), cpuBlock, c.groups(c.s.Charge, sandbox), func() {
			t.wall += mustDrive(b, cpuBlock, func(i int) error {
				return benchAct(c.s, c.token, act.route, round.charges[i], round.keys+round.path+"-"+strconv.Itoa(i), act.body)
			})
		})
	default:
		measureInTurns(b, t, b.Name(), cpuBlock, c.groups(c.s.Charge, group{"gateway_cpu_ms", []int{os.Getpid()}}, sandbox), func() {
			clients, wall := runLoad(b, c.s.URL, c.token, round.keys, cpuBlock)
			t.add("clients_cpu_ms", clients)
			t.wall += wall
		})
	}
}

// measureFloor asks the SDK floor for round's path on its keys (the
// queue's floor for the same batches, renamed) and adds its CPU to t,
// profiled under name.
func (c *cpuBench) measureFloor(b *testing.B, t *tally, name string, round cpuRound) {
	b.Helper()
	if round.path == yardstick.BenchQueueCommand {
		measureInTurns(b, t, name, cpuBlock, c.groups(c.sdkQueue), func() {
			t.wall += mustDrive(b, len(round.batches), func(i int) error {
				return deliverBatch(c.sdkQueue, renamed(round.batches[i], func(j int) string { return round.sdkKey(commandBatch*i + j) }))
			})
		})
		return
	}
	measureInTurns(b, t, name, cpuBlock, c.groups(c.sdk), func() { t.wall += mustDrive(b, cpuBlock, c.floorRequests(round, round.path)) })
}

// cpuStack names BenchmarkFunctionCPU's stack and account (benchStack).
const cpuStack = "cpu"

// Each iteration of BenchmarkFunctionCPU sends each path's requests in
// cpuRounds blocks of cpuBlock, the function's and its SDK floor's taking
// turns; the queue's commands are delivered in batches of commandBatch,
// the most an event source mapping of a standard queue delivers by
// default. Eight rounds of 100: a single run (one iteration, as `go test
// -bench` runs it) of four rounds moved a replay's ratio by up to a tenth
// from one run to the next.
const (
	cpuRounds    = 8
	cpuBlock     = 100
	commandBatch = 10
)

// measureInTurns runs one block of n requests (send), the first group's
// processes profiled under name, and adds to t each group's CPU, under
// its unit, and the block's requests.
func measureInTurns(b *testing.B, t *tally, name string, n int, groups []group, send func()) {
	b.Helper()
	before := make([]time.Duration, len(groups))
	for i, g := range groups {
		before[i] = cpuOf(b, g.pids...)
	}
	profiled(b, name, groups[0].pids, send)
	for i, g := range groups {
		t.add(g.unit, cpuOf(b, g.pids...)-before[i])
	}
	t.requests += n
}

// mustDrive makes n requests with next from benchClients goroutines,
// fails b on the first error, and returns the time they took.
func mustDrive(b *testing.B, n int, next func(i int) error) time.Duration {
	b.Helper()
	_, wall, err := drive(benchClients, n, next)
	if err != nil {
		b.Fatal(err)
	}
	return wall
}

// tally sums each process's CPU over a sub-benchmark's iterations, so
// that -benchtime Nx reports the mean over all N iterations' requests,
// not the last iteration's alone.
type tally struct {
	cpu      map[string]time.Duration // by metric unit
	units    []string                 // in the order first added
	requests int
	wall     time.Duration
}

func (t *tally) add(unit string, d time.Duration) {
	if t.cpu == nil {
		t.cpu = map[string]time.Duration{}
	}
	if _, ok := t.cpu[unit]; !ok {
		t.units = append(t.units, unit)
	}
	t.cpu[unit] += d
}

// mean is unit's CPU per request, in milliseconds.
func (t *tally) mean(unit string) float64 {
	return float64(t.cpu[unit].Microseconds()) / 1000 / float64(max(1, t.requests))
}

// report reports each unit's mean.
func (t *tally) report(b *testing.B) {
	for _, unit := range t.units {
		b.ReportMetric(t.mean(unit), unit)
	}
}

// yardstickLatency is how long the yardstick's round trips wait for their
// answer: no longer than a DynamoDB Local write takes under the first
// executions' load (an instance spends about 11 ms on one first execution,
// most of it in its 3 writes, so 3 ms or more each). Waiting is not free: each wait parks the goroutine and
// idles the thread, and at once-answered round trips the same yardstick
// spends about half as much CPU.
const yardstickLatency = 2 * time.Millisecond

// startYardstick builds the yardstick function and starts two instances of
// it under the RIE, shaped at memoryMB when it is not 0, with env, their
// plain round trips answered, after yardstickLatency, by a server in this
// process with a body about the size of DynamoDB's answer to a claim. The
// instances are warmed with warm's events (nil: a plain one-trip event).
func startYardstick(b *testing.B, memoryMB int, warm func(i int) []byte, env ...string) *localapi.Pool {
	b.Helper()
	bootstrap := filepath.Join(binDir, "yardstick", "bootstrap")
	if err := localapi.Build(context.Background(), bootstrap, "./internal/systemtest/yardstick/bootstrap"); err != nil {
		b.Fatal(err)
	}
	answer := bytes.Repeat([]byte("y"), 300)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		time.Sleep(yardstickLatency)
		_, _ = w.Write(answer)
	}))
	b.Cleanup(srv.Close)
	p, err := localapi.StartPool(localapi.PoolConfig{
		RIE: rieBin, Bootstrap: bootstrap, Name: "yardstick", Instances: 2, Timeout: 10 * time.Second,
		Env: append([]string{yardstick.EnvURL + "=" + srv.URL}, env...), MemoryMB: memoryMB,
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(p.Close)
	if warm == nil {
		warm = func(int) []byte { return yardstickEvent(1) }
	}
	warmPool(b, p, warm)
	return p
}

// warmPool invokes p with warm's events as the function's stack is warmed
// (2 × benchClients requests), so that both instances run, their runtimes
// started.
// A fresh runtime's warm-up is tried up to three times: once in six
// runs of `make bench-cpu`, the emulator answered a first invocation
// with a 502 and no body.
func warmPool(b *testing.B, p *localapi.Pool, warm func(i int) []byte) {
	b.Helper()
	for i := range 2 * benchClients {
		for try := 1; ; try++ {
			_, err := p.Invoke(context.Background(), warm(i))
			if err == nil {
				break
			}
			if try == 3 {
				b.Fatal(err)
			}
			b.Logf("warm-up %d, try %d: %v", i, try, err)
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// recorded is what the charge function read and wrote on each path the
// SDK floor stands for (yardstick.SDKPaths): the event the gateway built
// from the load's request, and the function's answer, as the JSON Lambda
// returned.
type recorded map[string]exchange

type exchange struct {
	event  events.APIGatewayV2HTTPRequest
	answer []byte
	status int // the answer's
}

// recordPaths charges key as the load does, charges it again (its
// replay), charges a key a worker holds (in flight, answered 409), refunds
// the charge, and captures and voids authorizations of their own, as
// BenchmarkFunctionCPU's requests do (acts). It sends them through a
// gateway of the stack's trust whose routes invoke the stack's charge
// function and keep each event and answer: the stack's own gateway
// invokes the function directly, with nothing between to keep them.
func recordPaths(b *testing.B, s *localapi.Stack, token, key string) recorded {
	b.Helper()
	rec := &recording{target: s.Charge}
	srv := httptest.NewServer(&localapi.Gateway{Trust: localapi.Trust{Secret: secret}, Routes: []localapi.Route{
		{Key: route.Create, Target: rec, Scope: route.Scopes[route.Create]},
		{Key: route.Refund, Target: rec, Scope: route.Scopes[route.Refund]},
		{Key: route.Capture, Target: rec, Scope: route.Scopes[route.Capture]},
		{Key: route.Void, Target: rec, Scope: route.Scopes[route.Void]},
	}})
	defer srv.Close()
	out := recorded{}
	keep := func(path string, err error) {
		if err != nil {
			b.Fatal(err)
		}
		var ex exchange
		if err := json.Unmarshal(rec.payload, &ex.event); err != nil {
			b.Fatal(err)
		}
		var answer events.APIGatewayV2HTTPResponse
		if err := json.Unmarshal(rec.answer, &answer); err != nil {
			b.Fatal(err)
		}
		ex.answer, ex.status = rec.answer, answer.StatusCode
		out[path] = ex
	}
	resp, err := benchPost(srv.URL+route.ChargesPath, token, key, visa, http.StatusCreated)
	keep(yardstick.BenchFirstExecution, err)
	_, err = benchPost(srv.URL+route.ChargesPath, token, key, visa, http.StatusCreated)
	keep(yardstick.BenchReplay, err)
	claimKeys(b, s, key+"-in-flight-", 1)
	_, err = benchPost(srv.URL+route.ChargesPath, token, key+"-in-flight-0", visa, http.StatusConflict)
	keep(yardstick.BenchInFlight, err)
	charges := map[string]string{yardstick.BenchRefund: strings.TrimPrefix(resp.Get("Location"), route.ChargesPath+"/")}
	for _, path := range []string{yardstick.BenchCapture, yardstick.BenchVoid} {
		auth, err := benchPost(srv.URL+route.ChargesPath, token, key+"-"+path+"-authorization", visaAuthorization, http.StatusCreated)
		if err != nil {
			b.Fatal(err)
		}
		charges[path] = strings.TrimPrefix(auth.Get("Location"), route.ChargesPath+"/")
	}
	for path, act := range acts {
		_, err = benchPost(srv.URL+route.Path(act.route, charges[path]), token, key+"-"+path, act.body, http.StatusCreated)
		keep(path, err)
	}
	return out
}

// commandBatches puts n charge commands (the visa charge, keys prefix0 to
// prefix(n-1), for the first producer's first account) on the first
// producer's queue, receives and deletes them, and returns them as the
// event source mapping would deliver them, in batches of size.
func commandBatches(b *testing.B, s *localapi.Stack, prefix string, n, size int) []events.SQSEvent {
	b.Helper()
	ctx := context.Background()
	account := localapi.DefaultProducers[0].Accounts[0]
	for i := 0; i < n; i += 10 {
		var entries []sqstypes.SendMessageBatchRequestEntry
		for j := i; j < min(i+10, n); j++ {
			entries = append(entries, sqstypes.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(j)), MessageBody: aws.String(chargeCommand(account, prefix+strconv.Itoa(j), visa))})
		}
		if out, err := s.SQS.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(s.QueueURL), Entries: entries}); err != nil || len(out.Failed) > 0 {
			b.Fatalf("send commands: %v, %v", out, err)
		}
	}
	msgs := receiveAll(b, s, s.QueueURL, n, 30*time.Second)
	if len(msgs) != n {
		b.Fatalf("received %d of %d commands", len(msgs), n)
	}
	// Deleted at once, as the event source mapping deletes what the
	// consumer has done: none comes back once its visibility ends.
	for i := 0; i < n; i += 10 {
		var entries []sqstypes.DeleteMessageBatchRequestEntry
		for j, m := range msgs[i:min(i+10, n)] {
			entries = append(entries, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(j)), ReceiptHandle: m.ReceiptHandle})
		}
		if out, err := s.SQS.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(s.QueueURL), Entries: entries}); err != nil || len(out.Failed) > 0 {
			b.Fatalf("delete commands: %v, %v", out, err)
		}
	}
	var batches []events.SQSEvent
	for i, m := range msgs {
		if i%size == 0 {
			batches = append(batches, events.SQSEvent{})
		}
		last := &batches[len(batches)-1]
		last.Records = append(last.Records, events.SQSMessage{MessageId: *m.MessageId, ReceiptHandle: *m.ReceiptHandle, Body: *m.Body, EventSource: "aws:sqs", EventSourceARN: s.QueueARN})
	}
	return batches
}

// deliverBatch invokes pool with batch and requires that no message
// failed.
func deliverBatch(pool *localapi.Pool, batch events.SQSEvent) error {
	payload, err := json.Marshal(batch)
	if err != nil {
		return err
	}
	out, err := pool.Invoke(context.Background(), payload)
	if err != nil {
		return err
	}
	var resp events.SQSEventResponse
	if err := json.Unmarshal(out, &resp); err != nil || len(resp.BatchItemFailures) != 0 {
		return fmt.Errorf("a batch of %d answered %.200s", len(batch.Records), out)
	}
	return nil
}

// renamed is batch with its j-th message's id replaced by id(j): the
// same messages, new keys for the queue's SDK floor.
func renamed(batch events.SQSEvent, id func(j int) string) events.SQSEvent {
	out := events.SQSEvent{Records: slices.Clone(batch.Records)}
	for j := range out.Records {
		out.Records[j].MessageId = id(j)
	}
	return out
}

// sqsEvent is a batch of one message whose id is id.
func sqsEvent(id string) []byte {
	payload, _ := json.Marshal(events.SQSEvent{Records: []events.SQSMessage{{MessageId: id, Body: "{}", EventSource: "aws:sqs"}}})
	return payload
}

// claimKeys claims the visa charge under the keys prefix0 to
// prefix(n-1) for the benchmarks' account, as a worker that has just begun
// it does (the engine's own Begin, a lease of a minute): until the lease
// ends, a request on one of the keys is answered 409, in flight.
func claimKeys(b *testing.B, s *localapi.Stack, prefix string, n int) {
	b.Helper()
	guard := idem.NewGuard(dynamo.Open(s.DynamoDB, s.TableName).Store(), idem.Config{})
	canonical := canonicalOf(b, visa)
	mustDrive(b, n, func(i int) error {
		_, err := guard.Begin(context.Background(), idem.Scope{Operation: charge.Operation, Account: benchAccount(cpuStack), Key: prefix + strconv.Itoa(i)}, canonical)
		return err
	})
}

// recording is an invoker that keeps the last payload and answer of its
// target.
type recording struct {
	target          localapi.Invoker
	payload, answer []byte
}

func (r *recording) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	out, err := r.target.Invoke(ctx, payload)
	r.payload, r.answer = payload, out
	return out, err
}

// answers is the SDK floor's EnvAnswer: each path's recorded answer.
func (r recorded) answers() string {
	all := map[string]json.RawMessage{}
	for path, ex := range r {
		all[path] = ex.answer
	}
	out, err := json.Marshal(all)
	if err != nil {
		panic(err)
	}
	return string(out)
}

// sdkEvent is path's recorded event, its key replaced by key and encoded
// again (the same members, within a few bytes of its size), that asks the
// SDK floor for path's calls on key.
func (r recorded) sdkEvent(path, key string) []byte {
	ev := r[path].event
	ev.Headers = maps.Clone(ev.Headers)
	ev.Headers["idempotency-key"], ev.Headers[yardstick.KeyHeader], ev.Headers[yardstick.PathHeader] = key, key, path
	payload, err := json.Marshal(ev)
	if err != nil {
		panic(err)
	}
	return payload
}

// invokeSDK asks the SDK floor for path's calls on key, and requires
// path's recorded status back: a function error is an error, not a cheap
// request.
func (r recorded) invokeSDK(sdk *localapi.Pool, path, key string) error {
	out, err := sdk.Invoke(context.Background(), r.sdkEvent(path, key))
	if err != nil {
		return err
	}
	var got events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(out, &got); err != nil || got.StatusCode != r[path].status {
		return fmt.Errorf("the SDK floor, asked for a %s of %s, answered %.200s", path, key, out)
	}
	return nil
}

// yardstickEvent is a charge's API Gateway event that asks the yardstick
// for calls round trips.
func yardstickEvent(calls int) []byte {
	return fmt.Appendf(nil, `{"version":"2.0","routeKey":"POST /v1/charges","rawPath":"/v1/charges","headers":{%q:"%d"},"body":%q,"requestContext":{"http":{"method":"POST"}}}`, yardstick.CallsHeader, calls, visa)
}

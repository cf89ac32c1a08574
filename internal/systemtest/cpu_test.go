package systemtest_test

import (
	"bytes"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// clockTick is Linux's USER_HZ, the unit of utime and stime in /proc.
const clockTick = 10 * time.Millisecond

// cpuOf is the user plus system CPU the processes have used so far
// (/proc/PID/stat, fields 14 and 15: every thread of the process).
func cpuOf(tb testing.TB, pids ...int) time.Duration {
	tb.Helper()
	var total time.Duration
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			tb.Fatalf("process %d: %v", pid, err)
		}
		fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:])) // fields from the third on
		utime, _ := strconv.ParseInt(fields[11], 10, 64)
		stime, _ := strconv.ParseInt(fields[12], 10, 64)
		total += time.Duration(utime+stime) * clockTick
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
// utime + stime of the charge function's bootstraps, of their emulators,
// and of DynamoDB Local, around N first executions and, separately, N
// replays of other keys, through the gateway and two instances; and of
// this process, which runs the gateway, the sandbox acquirer and the
// load's clients (harness_cpu_ms: the three together). At 128 MB
// Lambda gives a function about 1/14 of a vCPU, so a CPU millisecond here
// costs about 14 ms of wall time there (projected_128MB_ms).
func BenchmarkFunctionCPU(b *testing.B) {
	s, token, run := benchStack(b, "cpu")
	db := dynamoDBLocal(b)
	const n = 400
	for i := range 2 * benchClients { // both instances warm, their runtimes started
		if err := benchCharge(s, token, fmt.Sprintf("cpu-warm-%s-%d", run, i), 201); err != nil {
			b.Fatal(err)
		}
	}
	for _, path := range []string{"first-execution", "replay"} {
		b.Run(path, func(b *testing.B) {
			for iter := 0; b.Loop(); iter++ {
				replayKey := func(i int) string { return fmt.Sprintf("cpu-replay-%s-%d-%d", run, iter, i) }
				if path == "replay" { // keys of their own, completed beforehand
					for i := range n {
						if err := benchCharge(s, token, replayKey(i), 201); err != nil {
							b.Fatal(err)
						}
					}
				}
				emulators, runtimes := s.Charge.Processes()
				self := os.Getpid() // the gateway, the sandbox and the load's clients
				fn0, rie0, db0, self0 := cpuOf(b, runtimes...), cpuOf(b, emulators...), cpuOf(b, db), cpuOf(b, self)
				load(b, n, func(i int) error {
					if path == "replay" {
						return benchCharge(s, token, replayKey(i), 201)
					}
					return benchCharge(s, token, fmt.Sprintf("cpu-first-%s-%d-%d", run, iter, i), 201)
				})
				per := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / n }
				fn := per(cpuOf(b, runtimes...) - fn0)
				b.ReportMetric(fn, "bootstrap_cpu_ms")
				b.ReportMetric(per(cpuOf(b, emulators...)-rie0), "rie_cpu_ms")
				b.ReportMetric(per(cpuOf(b, db)-db0), "dynamodb_cpu_ms")
				b.ReportMetric(per(cpuOf(b, self)-self0), "harness_cpu_ms")
				b.ReportMetric(fn*14, "projected_128MB_ms")
			}
		})
	}
}

package main

import (
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idempotent-payments/idempay/internal/cost"
)

const sample = `goos: linux
goarch: amd64
pkg: github.com/idempotent-payments/idempay/functions/charge
cpu: Example CPU
BenchmarkHandler/first-2         	   61234	     18700 ns/op	    4321 B/op	      52 allocs/op
BenchmarkLocalAPI/first_executions-2   	       1	1234567890 ns/op	       173.0 req/s	        12.50 p99_ms
BenchmarkSweep 	       1	        20.00 flagged/s	         0 ns/op
PASS
`

// TestParseKeepsTheReportedUnits: benchfmt reads the lines; the figures
// stay in the units the benchmarks reported (ns/op, not sec/op), under
// names without the GOMAXPROCS suffix.
func TestParseKeepsTheReportedUnits(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bench.txt")
	if err := os.WriteFile(path, []byte(sample), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := parse(path)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]metrics{
		"Handler/first":             {"ns/op": 18700, "B/op": 4321, "allocs/op": 52},
		"LocalAPI/first_executions": {"ns/op": 1234567890, "req/s": 173, "p99_ms": 12.5},
		"Sweep":                     {"flagged/s": 20, "ns/op": 0},
	} {
		for unit, v := range want {
			if got[name][unit] != v {
				t.Errorf("%s %s = %v, want %v (all: %v)", name, unit, got[name][unit], v, got)
			}
		}
	}
}

// TestParseTakesTheMedianOfRuns: a benchmark run three times is reported
// by the median of each unit, so that the bills of runs joined in one
// file are the bills of their medians.
func TestParseTakesTheMedianOfRuns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bench.txt")
	runs := "BenchmarkMemorySizes/256MB/first-execution-2 \t 1\t 46.4 p99_ms\t 16.5 billed_ms\n" +
		"BenchmarkMemorySizes/256MB/first-execution-2 \t 1\t 45.5 p99_ms\t 16.0 billed_ms\n" +
		"BenchmarkMemorySizes/256MB/first-execution-2 \t 1\t 42.0 p99_ms\t 13.4 billed_ms\n"
	if err := os.WriteFile(path, []byte(runs), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := parse(path)
	if err != nil {
		t.Fatal(err)
	}
	if m := got["MemorySizes/256MB/first-execution"]; m["p99_ms"] != 45.5 || m["billed_ms"] != 16.0 {
		t.Fatalf("got %v, want the medians 45.5 and 16.0", m)
	}
}

// TestChart: the latency series become a PNG.
func TestChart(t *testing.T) {
	dir := t.TempDir()
	for name, ms := range map[string]string{"first": "1.5\n2.5\n9\n", "replays": "0.5 0.7 0.9"} {
		if err := os.WriteFile(filepath.Join(dir, "latency-BenchmarkLocalAPI_"+name+".txt"), []byte(ms), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	series, err := latencies(dir)
	if err != nil || len(series) != 2 {
		t.Fatalf("latencies: %v, %v", series, err)
	}
	out := filepath.Join(dir, "latency.png")
	if err := chart(out, series); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil || img.Bounds().Dx() < 600 {
		t.Fatalf("chart: %v, %v", img, err)
	}
	if r := report(nil, series); !strings.Contains(r, "first") {
		t.Fatalf("report does not name the series:\n%s", r)
	}
}

// TestReportDividesByTheFloor: the bootstrap's CPU is shown next to the
// yardstick's of the same run, and divided by it.
func TestReportDividesByTheFloor(t *testing.T) {
	got := report(map[string]metrics{
		"FunctionCPU/first-execution":       {"bootstrap_cpu_ms": 2, "gateway_cpu_ms": 0.5},
		"FunctionCPU/floor-first-execution": {"bootstrap_cpu_ms": 0.8},
	}, nil)
	if want := "| first-execution | 2 | 0.80 | 2.50 | — | — | — | 0.50 |"; !strings.Contains(got, want) {
		t.Fatalf("no row %q in:\n%s", want, got)
	}
}

// TestMemorySection: each size's bills are internal/cost's of the run's
// figures, and each function's size chosen is the cheapest that meets
// its p99 target; a size that misses it is not chosen however cheap.
func TestMemorySection(t *testing.T) {
	r := map[string]metrics{"UnitsPerPath/first-execution": {"WRU/op": 5, "RRU/op": 0}}
	for size, m := range map[int]metrics{
		128:  {"billed_ms": 60, "p99_ms": 140, "shaped": 1, "throttled_pct": 90},
		256:  {"billed_ms": 25, "p99_ms": 70, "shaped": 1, "throttled_pct": 80},
		512:  {"billed_ms": 14, "p99_ms": 40, "shaped": 1, "throttled_pct": 50},
		1024: {"billed_ms": 10, "p99_ms": 30, "shaped": 1, "throttled_pct": 10},
	} {
		m["publisher_invocations"], m["publisher_billed_ms"], m["log_bytes"] = 0.1, 20, 800
		r[fmt.Sprintf("MemorySizes/%dMB/first-execution", size)] = m
		r[fmt.Sprintf("MemorySizes/%dMB/cold-start", size)] = metrics{"cold_ms": 100.4, "warm_ms": 10}
		r[fmt.Sprintf("MemorySizes/%dMB/queue-command", size)] = metrics{"billed_ms": 3000 / float64(size), "commands_per_invocation": 2, "p99_ms": 1200 - float64(size),
			"publisher_invocations": 0.5, "publisher_billed_ms": 10, "log_bytes": 1000, "shaped": 1}
		r[fmt.Sprintf("MemorySizes/%dMB/sweep", size)] = metrics{"billed_ms": 100}
	}
	got := memorySection(r)
	bill256, _ := billOf(r, 256)
	want := cost.Total(cost.PerMillion(cost.Usage{MemoryMB: 256, BilledMS: 25 + 300, Invocations: 1, ColdStartMS: 91, ColdShare: 0.01, APIRequests: 1, WriteUnits: 5,
		Publishes: 1, EventRequests: 0.2, PublisherInvocations: 0.1, PublisherBilledMS: 20, PublisherMemoryMB: 256, LogBytes: 800}))
	if math.Abs(bill256.total-want) > 1e-12 {
		t.Fatalf("256 MB: $%.6f, want $%.6f", bill256.total, want)
	}
	queue256, _ := queueBillOf(r, 256)
	// 2 commands an invocation: one wave of acquirer calls, 2 SQS requests.
	want = cost.Total(cost.PerMillion(cost.Usage{MemoryMB: 256, BilledMS: 3000.0/256 + 300, Invocations: 0.5, ColdStartMS: 91, ColdShare: 0.01, WriteUnits: 5,
		CommandRequests: 2, Publishes: 1, EventRequests: 0.2, PublisherInvocations: 0.5, PublisherBilledMS: 10, PublisherMemoryMB: 256, LogBytes: 1000}))
	if math.Abs(queue256.total-want) > 1e-12 {
		t.Fatalf("a queue command at 256 MB: $%.6f, want $%.6f", queue256.total, want)
	}
	// Refunds at the charge function's size: the refund path's duration,
	// the units of the first refund and of the cap's.
	r["MemorySizes/256MB/refund"] = metrics{"billed_ms": 30, "publisher_invocations": 0.1, "publisher_billed_ms": 20, "log_bytes": 900, "shaped": 1}
	r["RefundUnits/refund-1"], r["RefundUnits/refund-50"] = metrics{"WRU/op": 7, "RRU/op": 2}, metrics{"WRU/op": 21, "RRU/op": 2}
	withRefunds := memorySection(r)
	fullest, _ := refundBillOf(r, 256, 50)
	want = cost.Total(cost.PerMillion(cost.Usage{MemoryMB: 256, BilledMS: 30 + 300, Invocations: 1, ColdStartMS: 91, ColdShare: 0.01, APIRequests: 1, WriteUnits: 21,
		ReadUnits: 2, Publishes: 1, EventRequests: 0.2, PublisherInvocations: 0.1, PublisherBilledMS: 20, PublisherMemoryMB: 256, LogBytes: 900}))
	if math.Abs(fullest.total-want) > 1e-12 || lastRefund(r) != 50 || !strings.Contains(withRefunds, "A million refunds over HTTP at the charge function's size, 256 MB") {
		t.Fatalf("a charge's 50th refund at 256 MB: $%.6f, want $%.6f; last %d\n%s", fullest.total, want, lastRefund(r), withRefunds)
	}
	// Captures and voids at the charge function's size: each path's
	// duration, the units of an authorization's first capture and of its
	// 150th action for captures, of a void for voids.
	r["MemorySizes/256MB/capture"] = metrics{"billed_ms": 28, "publisher_invocations": 0.2, "publisher_billed_ms": 15, "log_bytes": 950, "shaped": 1}
	r["MemorySizes/256MB/void"] = metrics{"billed_ms": 26, "publisher_invocations": 0.3, "publisher_billed_ms": 12, "log_bytes": 1100, "shaped": 1}
	r["CaptureUnits"] = metrics{"first-WRU/op": 7, "first-RRU/op": 2, "first-$/M": 4.625, "150th-WRU/op": 8, "150th-RRU/op": 3, "void-WRU/op": 6, "void-RRU/op": 1}
	withCaptures := memorySection(r)
	at256 := func(billed, writes, reads, publisherInvocations, publisherMS, logs float64) float64 {
		return cost.Total(cost.PerMillion(cost.Usage{MemoryMB: 256, BilledMS: billed + 300, Invocations: 1, ColdStartMS: 91, ColdShare: 0.01, APIRequests: 1,
			WriteUnits: writes, ReadUnits: reads, Publishes: 1, EventRequests: 0.2, PublisherInvocations: publisherInvocations, PublisherBilledMS: publisherMS,
			PublisherMemoryMB: 256, LogBytes: logs}))
	}
	var totals []any
	for _, c := range []struct {
		action string
		want   float64
	}{
		{"first", at256(28, 7, 2, 0.2, 15, 950)}, {"150th", at256(28, 8, 3, 0.2, 15, 950)}, {"void", at256(26, 6, 1, 0.3, 12, 1100)},
	} {
		bill, ok := captureBillOf(r, 256, c.action)
		if !ok || math.Abs(bill.total-c.want) > 1e-12 {
			t.Errorf("a million of action %s at 256 MB: $%.6f (%v), want $%.6f", c.action, bill.total, ok, c.want)
		}
		totals = append(totals, bill.total)
	}
	for _, want := range []string{
		"A million captures and a million voids over HTTP at the charge function's size, 256 MB",
		"| part | an authorization's first capture | its 150th action | a void |",
		fmt.Sprintf("| **total** | **%.4f** | **%.4f** | **%.4f** |", totals...),
		"| capture | ", "| void | ",
	} {
		if lastAction(r) != "150th" || !strings.Contains(withCaptures, want) {
			t.Fatalf("last action %q; no %q in:\n%s", lastAction(r), want, withCaptures)
		}
	}
	if _, ok := captureBillOf(r, 512, "void"); ok {
		t.Errorf("a void bill at 512 MB, where the run measured no void")
	}
	sweep, _ := sweeperMonthly(r, 128)
	if want := 43200 * (0.125*0.1*cost.LambdaGBSecond + cost.LambdaRequest); math.Abs(sweep-want) > 1e-12 {
		t.Fatalf("a month of sweeps at 128 MB: $%.6f, want $%.6f", sweep, want)
	}
	for _, row := range []string{
		"| charge | cheapest with a first execution's p99 within 100 ms | ", // 128 MB misses the p99, 512 MB costs more
		"| consumer, reconciler | cheapest with a command's p99 within 1000 ms | ", "| publisher | cheapest per event | ", "| sweeper | ",
	} {
		i := strings.Index(got, row)
		if i < 0 {
			t.Fatalf("no row %q in:\n%s", row, got)
		}
		line := got[i : i+strings.Index(got[i:], "\n")]
		wantSize := map[bool]string{true: "**256 MB** |", false: "**128 MB** |"}[strings.HasPrefix(row, "| charge") || strings.HasPrefix(row, "| consumer")]
		if !strings.HasSuffix(line, wantSize) {
			t.Errorf("%s, want %s", line, wantSize)
		}
	}
	if !strings.Contains(got, "| 1024 MB (machine-bound) | first-execution |") {
		t.Fatalf("a size throttled in 10 %% of periods is not marked machine-bound:\n%s", got)
	}
}

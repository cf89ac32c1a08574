package main

import (
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
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

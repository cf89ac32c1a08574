package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReportTakesMediansOverRuns: the medians of three runs, the ratio as
// the median of each run's, and a path without a floor, or without its
// ratios, refused.
func TestReportTakesMediansOverRuns(t *testing.T) {
	var out strings.Builder
	for _, run := range []struct{ fe, feRatio, replay, floorFE, floorReplay string }{
		{"2.5", "1.30", "1.2", "1.7", "0.8"},
		{"2.0", "1.10", "1.0", "2.0", "0.9"},
		{"3.0", "1.40", "1.4", "1.6", "0.7"},
	} {
		out.WriteString("goos: linux\n" +
			"BenchmarkFunctionCPU/first-execution-2 1 " + run.fe + " bootstrap_cpu_ms 0.6 clients_cpu_ms " + run.feRatio + " x_sdk_floor\n" +
			"BenchmarkFunctionCPU/replay-2 1 " + run.replay + " bootstrap_cpu_ms 1.2 x_sdk_floor\n" +
			"BenchmarkFunctionCPU/floor-first-execution-2 1 1.0 bootstrap_cpu_ms\n" +
			"BenchmarkFunctionCPU/sdk-floor-first-execution-2 1 " + run.floorFE + " bootstrap_cpu_ms\n" +
			"BenchmarkFunctionCPU/sdk-floor-replay-2 1 " + run.floorReplay + " bootstrap_cpu_ms\n" +
			"BenchmarkFunctionCPU/in-flight-2 1 1.2 bootstrap_cpu_ms 1.2 x_sdk_floor\n" +
			"BenchmarkFunctionCPU/sdk-floor-in-flight-2 1 1.0 bootstrap_cpu_ms\n" +
			"BenchmarkFunctionCPU/refund-2 1 4.4 bootstrap_cpu_ms 1.1 x_sdk_floor\n" +
			"BenchmarkFunctionCPU/sdk-floor-refund-2 1 4.0 bootstrap_cpu_ms\n" +
			"BenchmarkFunctionCPU/queue-command-2 1 2.4 bootstrap_cpu_ms 1.2 x_sdk_floor\n" +
			"BenchmarkFunctionCPU/sdk-floor-queue-command-2 1 2.0 bootstrap_cpu_ms\n" +
			"BenchmarkFunctionCPU/capture-2 1 4.4 bootstrap_cpu_ms 1.1 x_sdk_floor\n" +
			"BenchmarkFunctionCPU/sdk-floor-capture-2 1 4.0 bootstrap_cpu_ms\n" +
			"BenchmarkFunctionCPU/void-2 1 4.4 bootstrap_cpu_ms 1.1 x_sdk_floor\n" +
			"BenchmarkFunctionCPU/sdk-floor-void-2 1 4.0 bootstrap_cpu_ms\n" +
			"BenchmarkOther-2 1 9 bootstrap_cpu_ms\n")
	}
	name := filepath.Join(t.TempDir(), "cpu.txt")
	if err := os.WriteFile(name, []byte(out.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	runs := map[string]map[string][]float64{}
	if err := read(name, runs); err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	ratios, err := report(&table, runs)
	if err != nil {
		t.Fatal(err)
	}
	// The median of 1.30, 1.10 and 1.40, not 2.5 over 1.7.
	if got := ratios["first-execution"]; got != 1.30 {
		t.Errorf("first execution: %.3f, want 1.30", got)
	}
	if got := ratios["refund"]; got != 1.1 {
		t.Errorf("refund: %.3f, want 1.1", got)
	}
	if !strings.Contains(table.String(), "| first execution | 2.50 ms | 1.70 ms | 1.30× | 3 |") {
		t.Errorf("table:\n%s", table.String())
	}
	delete(runs["refund"], "x_sdk_floor")
	if _, err := report(&table, runs); err == nil {
		t.Error("a path without its ratios was reported")
	}
	delete(runs, "sdk-floor-replay")
	if _, err := report(&table, runs); err == nil {
		t.Error("a path without its floor's runs was reported")
	}
}

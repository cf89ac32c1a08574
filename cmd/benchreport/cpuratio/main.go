// Command cpuratio holds the charge function to its SDK floor. It reads
// the output of several runs of BenchmarkFunctionCPU, takes the median of
// each path's bootstrap_cpu_ms over the runs, and prints the function's
// ratio over the SDK floor for first executions, replays, requests in
// flight, refunds and the queue's commands. It exits 1 when the first-execution ratio passes
// MaxFirstExecutionRatio.
//
//	go run ./cpuratio results/cpu.txt
package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/idempotent-payments/idempay/cmd/benchreport/benchruns"
	"github.com/idempotent-payments/idempay/internal/systemtest/yardstick"
)

// MaxFirstExecutionRatio is the most a first execution may cost over the
// SDK floor's before `make bench` fails.
const MaxFirstExecutionRatio = 1.5

// The sub-benchmarks of BenchmarkFunctionCPU compared, and the metric.
const (
	bench  = "FunctionCPU/" // as benchfmt names it, without "Benchmark"
	metric = "bootstrap_cpu_ms"
)

// A path is the function's sub-benchmark and its SDK floor's.
type path struct{ name, function, floor string }

var paths = []path{
	{"first execution", yardstick.BenchFirstExecution, yardstick.BenchSDKFloorFirstExecution},
	{"replay", yardstick.BenchReplay, yardstick.BenchSDKFloorReplay},
	{"in flight", yardstick.BenchInFlight, yardstick.BenchSDKFloorInFlight},
	{"refund", yardstick.BenchRefund, yardstick.BenchSDKFloorRefund},
	{"queue command", yardstick.BenchQueueCommand, yardstick.BenchSDKFloorQueueCommand},
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: cpuratio BENCH_OUTPUT...")
		os.Exit(2)
	}
	runs := map[string][]float64{}
	for _, name := range os.Args[1:] {
		if err := read(name, runs); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	ratios, err := report(os.Stdout, runs)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if r := ratios[paths[0].name]; r > MaxFirstExecutionRatio {
		fmt.Printf("FAIL: the first execution costs %.2f× its SDK floor, more than %.1f×\n", r, MaxFirstExecutionRatio)
		os.Exit(1)
	}
}

// read adds each BenchmarkFunctionCPU sub-benchmark's metric in the named
// file to runs, by sub-benchmark name (without the GOMAXPROCS suffix).
func read(name string, runs map[string][]float64) error {
	all := benchruns.Runs{}
	if err := all.Read(name); err != nil {
		return err
	}
	for full, units := range all {
		if sub, ok := strings.CutPrefix(full, bench); ok {
			runs[sub] = append(runs[sub], units[metric]...)
		}
	}
	return nil
}

// report writes each path's medians and ratio to w as a Markdown table and
// returns the ratios by path. A path without runs of both is an error.
func report(w io.Writer, runs map[string][]float64) (map[string]float64, error) {
	ratios := map[string]float64{}
	fmt.Fprintf(w, "| path | the function (%s, median) | the SDK floor (median) | ratio | runs |\n|---|---|---|---|---|\n", metric)
	for _, p := range paths {
		fn, floor := runs[p.function], runs[p.floor]
		if len(fn) == 0 || len(floor) == 0 {
			return nil, fmt.Errorf("%s: %d runs of %s and %d of %s", p.name, len(fn), p.function, len(floor), p.floor)
		}
		ratios[p.name] = benchruns.Median(fn) / benchruns.Median(floor)
		fmt.Fprintf(w, "| %s | %.2f ms | %.2f ms | %.2f× | %d |\n", p.name, benchruns.Median(fn), benchruns.Median(floor), ratios[p.name], min(len(fn), len(floor)))
	}
	return ratios, nil
}

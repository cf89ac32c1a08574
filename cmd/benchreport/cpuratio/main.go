// Command cpuratio holds the charge function to its SDK floor. It reads
// the output of several runs of BenchmarkFunctionCPU and prints, for each
// path it measures (yardstick.Benches: first executions, replays,
// requests in flight, refunds, the queue's commands, captures and
// voids), the median over the runs of each run's ratio of the function
// over its floor (x_sdk_floor: the two measured in turns), beside the
// medians of each's bootstrap_cpu_ms. It exits 1 when the first-execution
// ratio passes MaxFirstExecutionRatio.
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

// The sub-benchmarks of BenchmarkFunctionCPU compared, and the metrics:
// each one's CPU, and the function's ratio over its floor in the same run.
const (
	bench  = "FunctionCPU/" // as benchfmt names it, without "Benchmark"
	metric = "bootstrap_cpu_ms"
	ratio  = "x_sdk_floor"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: cpuratio BENCH_OUTPUT...")
		os.Exit(2)
	}
	runs := map[string]map[string][]float64{}
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
	if r := ratios[yardstick.BenchFirstExecution]; r > MaxFirstExecutionRatio {
		fmt.Printf("FAIL: the first execution costs %.2f× its SDK floor, more than %.1f×\n", r, MaxFirstExecutionRatio)
		os.Exit(1)
	}
}

// read adds each BenchmarkFunctionCPU sub-benchmark's units in the named
// file to runs, by sub-benchmark name (without the GOMAXPROCS suffix) and
// unit.
func read(name string, runs map[string]map[string][]float64) error {
	all := benchruns.Runs{}
	if err := all.Read(name); err != nil {
		return err
	}
	for full, units := range all {
		if sub, ok := strings.CutPrefix(full, bench); ok {
			if runs[sub] == nil {
				runs[sub] = map[string][]float64{}
			}
			for unit, values := range units {
				runs[sub][unit] = append(runs[sub][unit], values...)
			}
		}
	}
	return nil
}

// report writes each path's (yardstick.Benches) medians and ratio to w as
// a Markdown table and returns the ratios by path (Bench.Path): the median
// of the function's runs' ratios. A path without runs of both, or without
// its ratios, is an error.
func report(w io.Writer, runs map[string]map[string][]float64) (map[string]float64, error) {
	ratios := map[string]float64{}
	fmt.Fprintf(w, "| path | the function (%s, median) | the SDK floor (median) | ratio (median of the runs') | runs |\n|---|---|---|---|---|\n", metric)
	for _, p := range yardstick.Benches {
		fn, floor, x := runs[p.Path][metric], runs[p.Floor][metric], runs[p.Path][ratio]
		if len(fn) == 0 || len(floor) == 0 || len(x) == 0 {
			return nil, fmt.Errorf("%s: %d runs of %s, %d of %s and %d ratios", p.Name, len(fn), p.Path, len(floor), p.Floor, len(x))
		}
		ratios[p.Path] = benchruns.Median(x)
		fmt.Fprintf(w, "| %s | %.2f ms | %.2f ms | %.2f× | %d |\n", p.Name, benchruns.Median(fn), benchruns.Median(floor), ratios[p.Path], len(x))
	}
	return ratios, nil
}

// Package benchruns reads `go test -bench` output that may hold several
// runs of the same benchmarks (-count, or the outputs of several runs
// joined), for the report and the CPU ratio alike.
package benchruns

import (
	"bytes"
	"os"
	"slices"

	"golang.org/x/perf/benchfmt"
)

// Runs are every value each benchmark reported, by its name (without
// "Benchmark" and the GOMAXPROCS suffix: "MemorySizes/256MB/replay") and
// unit, in the units it reported them in (benchfmt's OrigUnit: ns/op, not
// sec/op), one value per run, in the order read.
type Runs map[string]map[string][]float64

// Read adds the results in the named file to runs.
func (runs Runs) Read(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	r := benchfmt.NewReader(f, name)
	for r.Scan() {
		res, ok := r.Result().(*benchfmt.Result)
		if !ok {
			continue // configuration lines and syntax errors: not results
		}
		base, parts := res.Name.Parts()
		if n := len(parts); n > 0 && bytes.HasPrefix(parts[n-1], []byte("-")) {
			parts = parts[:n-1]
		}
		full := string(bytes.Join(append([][]byte{base}, parts...), nil))
		if runs[full] == nil {
			runs[full] = map[string][]float64{}
		}
		for _, v := range res.Values {
			unit, value := v.Unit, v.Value
			if v.OrigUnit != "" {
				unit, value = v.OrigUnit, v.OrigValue
			}
			runs[full][unit] = append(runs[full][unit], value)
		}
	}
	return r.Err()
}

// Median of values, the mean of the middle two for an even count; 0 for
// none.
func Median(values []float64) float64 {
	s := slices.Sorted(slices.Values(values))
	n := len(s)
	switch {
	case n == 0:
		return 0
	case n%2 == 1:
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

package benchruns

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestReadKeepsEveryRun: two runs of the same benchmarks, in one file and
// in two, give each benchmark's values in the order read, in the units
// reported, under names without the GOMAXPROCS suffix.
func TestReadKeepsEveryRun(t *testing.T) {
	dir := t.TempDir()
	one := "BenchmarkMemorySizes/256MB/replay-2 \t 1\t 21.3 p99_ms\t 2.60 billed_ms\n" +
		"BenchmarkHandler/first-2 \t 61234\t 18700 ns/op\n" +
		"BenchmarkMemorySizes/256MB/replay-2 \t 1\t 20.7 p99_ms\t 3.02 billed_ms\n"
	two := "goos: linux\nBenchmarkMemorySizes/256MB/replay-2 \t 1\t 15.1 p99_ms\t 2.72 billed_ms\nPASS\n"
	runs := Runs{}
	for name, text := range map[string]string{"one.txt": one, "two.txt": two} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"one.txt", "two.txt"} {
		if err := runs.Read(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if got := runs["MemorySizes/256MB/replay"]["p99_ms"]; !slices.Equal(got, []float64{21.3, 20.7, 15.1}) {
		t.Errorf("p99_ms: %v", got)
	}
	if got := runs["Handler/first"]["ns/op"]; !slices.Equal(got, []float64{18700}) {
		t.Errorf("ns/op: %v, want the reported unit", got)
	}
	if err := runs.Read(filepath.Join(dir, "absent.txt")); err == nil {
		t.Error("an absent file: no error")
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		values []float64
		want   float64
	}{{[]float64{4, 1, 3, 2}, 2.5}, {[]float64{21.3, 20.7, 15.1}, 20.7}, {[]float64{7}, 7}, {nil, 0}} {
		if got := Median(c.values); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.values, got, c.want)
		}
	}
}

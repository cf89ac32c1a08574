package setup

import (
	"runtime/debug"
	"testing"

	"github.com/idempotent-payments/idempay/internal/deploy"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestProcessors(t *testing.T) {
	t.Parallel()
	for env, want := range map[string]int{"": 1, "4": 0, "1": 0} {
		if got := Processors(envOf(map[string]string{deploy.EnvGOMAXPROCS: env})); got != want {
			t.Errorf("GOMAXPROCS=%q: Processors = %d, want %d", env, got, want)
		}
	}
}

// TestReaders: each reader defaults an unset variable, and refuses a bad
// value with an error naming the variable.
func TestReaders(t *testing.T) {
	t.Parallel()
	env := envOf(map[string]string{"D": "2s", "N": "7", "B": "true", "BAD": "x"})
	if d, err := Duration(env, "D", 0); err != nil || d.Seconds() != 2 {
		t.Errorf("Duration: %v, %v", d, err)
	}
	if n, err := PositiveInt(env, "UNSET", 3); err != nil || n != 3 {
		t.Errorf("PositiveInt default: %d, %v", n, err)
	}
	if n, err := PositiveInt(env, "N", 3); err != nil || n != 7 {
		t.Errorf("PositiveInt: %d, %v", n, err)
	}
	if b, err := Boolean(env, "B"); err != nil || !b {
		t.Errorf("Boolean: %v, %v", b, err)
	}
	for name, read := range map[string]func() error{
		"Duration":    func() error { _, err := Duration(env, "BAD", 0); return err },
		"PositiveInt": func() error { _, err := PositiveInt(env, "BAD", 1); return err },
		"Boolean":     func() error { _, err := Boolean(env, "BAD"); return err },
		"Require":     func() error { _, err := Require(env, "UNSET"); return err },
	} {
		if err := read(); err == nil {
			t.Errorf("%s: a bad value accepted", name)
		}
	}
}

// TestLimitHeap: the heap's soft limit is the share of the function's
// memory size, and nothing without it.
func TestLimitHeap(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	if got := LimitHeap(func(string) string { return "" }, 0.8); got != 0 {
		t.Fatalf("without a memory size: %d", got)
	}
	if got := LimitHeap(func(string) string { return "1024" }, 0.8); got != 858993459 || debug.SetMemoryLimit(-1) != got {
		t.Fatalf("1,024 MB at 0.8: %d", got)
	}
}

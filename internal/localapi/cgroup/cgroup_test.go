package cgroup

import (
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/deploy"
)

// TestQuotaApplied: a busy process in a 128 MB group uses its share of a
// vCPU and no more, by the group's own counters, and is throttled in most
// periods; the group's memory limit is its memory size. Where groups
// cannot be made the test says the run is unshaped.
func TestQuotaApplied(t *testing.T) {
	if err := Available(); err != nil {
		t.Logf("unshaped: %v", err)
		return
	}
	const memoryMB, run = 128, 2 * time.Second
	g, err := New("quota-test", memoryMB)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := g.Remove(); err != nil {
			t.Error(err)
		}
	}()
	if q, err := g.Quota(); err != nil || q != 1447*time.Microsecond {
		t.Fatalf("quota %v, %v; want 20 ms × 128/1769", q, err)
	}
	if limit, err := readInt(filepath.Join(g.dir("memory"), "memory.limit_in_bytes")); err != nil || limit != memoryMB<<20 {
		t.Fatalf("memory limit %d, %v", limit, err)
	}
	busy := exec.Command("sh", "-c", "while :; do :; done")
	if err := busy.Start(); err != nil {
		t.Fatal(err)
	}
	if err := g.Add(busy.Process.Pid); err != nil {
		_ = busy.Process.Kill()
		t.Fatal(err)
	}
	start, before := time.Now(), mustUsage(t, g)
	time.Sleep(run)
	after, wall := mustUsage(t, g), time.Since(start)
	_ = busy.Process.Kill()
	_ = busy.Wait()
	share, want := float64(after.CPU-before.CPU)/float64(wall), deploy.CPUShare(memoryMB)
	t.Logf("a busy process at %d MB used %.4f of a vCPU (its share %.4f), throttled in %d of %d periods", memoryMB, share, want, after.Throttled, after.Periods)
	if share > want*1.1 || share < want*0.7 || after.Throttled < after.Periods/2 {
		t.Fatalf("used %.4f of a vCPU, share %.4f, throttled %d of %d periods: the quota is not applied", share, want, after.Throttled, after.Periods)
	}
}

func mustUsage(t *testing.T, g *Group) Usage {
	t.Helper()
	u, err := g.Usage()
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestUnthrottle: an unthrottled group has no CPU quota and keeps its
// memory limit.
func TestUnthrottle(t *testing.T) {
	if err := Available(); err != nil {
		t.Logf("unshaped: %v", err)
		return
	}
	g, err := New("unthrottle-test", 128)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := g.Remove(); err != nil {
			t.Error(err)
		}
	}()
	if err := g.Unthrottle(); err != nil {
		t.Fatal(err)
	}
	if q, err := g.Quota(); err != nil || q >= 0 {
		t.Fatalf("quota %v, %v; want none (-1)", q, err)
	}
	if limit, err := readInt(filepath.Join(g.dir("memory"), "memory.limit_in_bytes")); err != nil || limit != 128<<20 {
		t.Fatalf("memory limit %d, %v", limit, err)
	}
}

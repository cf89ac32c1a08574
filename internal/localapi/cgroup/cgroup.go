// Package cgroup shapes a local execution environment as Lambda sizes one:
// its processes (the Runtime Interface Emulator and the bootstrap it
// starts) in a group of their own, with a CPU quota of the memory size's
// share of one vCPU (deploy.CPUShare) and a memory limit of the memory
// size, on Linux's cgroup v1 (the cpu, cpuacct and memory controllers); and
// it reads what the group used from the group's own counters.
package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/idempotent-payments/idempay/internal/deploy"
)

// Root is where the controllers are mounted.
const Root = "/sys/fs/cgroup"

// Period is every group's CFS period. The kernel refuses a quota under 1
// ms, and at 128 MB the share is 1/13.8 of a vCPU, so the period must be
// at least 13.8 ms; 20 ms is the shortest round period above that. A
// longer one lets a burst of CPU run longer before the throttle and then
// stalls it longer (up to the period less the quota: 18.6 ms at 128 MB),
// so the tail latency of a path that needs more than one period's quota
// grows with it.
const Period = 20 * time.Millisecond

// minQuota is the kernel's least quota.
const minQuota = time.Millisecond

// controllers are those a group is made in.
var controllers = []string{"cpu", "cpuacct", "memory"}

// parent is the folder of this program's groups in each controller.
const parent = "idempay"

// Available reports whether groups can be made here: nil, or why not (no
// cgroup v1 controller mounted, or not writable: not root).
func Available() error {
	for _, c := range controllers {
		dir := filepath.Join(Root, c)
		if _, err := os.Stat(filepath.Join(dir, "cgroup.procs")); err != nil {
			return fmt.Errorf("no cgroup v1 %s controller at %s", c, dir)
		}
		if err := os.MkdirAll(filepath.Join(dir, parent), 0o755); err != nil {
			return fmt.Errorf("cgroup v1 %s controller not writable: %w", c, err)
		}
	}
	return nil
}

// Group is one execution environment's cgroup.
type Group struct {
	name     string
	memoryMB int
}

// seq keeps the groups of one process apart.
var seq atomic.Int64

// New makes a group for an environment of memoryMB, named after name:
// its CPU quota is memoryMB's share of a vCPU per Period, and its memory
// limit memoryMB.
func New(name string, memoryMB int) (*Group, error) {
	if !deploy.ValidMemory(memoryMB) {
		return nil, fmt.Errorf("cgroup %s: %d MB, want Lambda's %d to %d", name, memoryMB, deploy.MinMemoryMB, deploy.MaxMemoryMB)
	}
	g := &Group{name: fmt.Sprintf("%s-%d-%d", name, os.Getpid(), seq.Add(1)), memoryMB: memoryMB}
	for _, c := range controllers {
		if err := os.MkdirAll(g.dir(c), 0o755); err != nil {
			return nil, fmt.Errorf("cgroup %s: %w", g.name, err)
		}
	}
	quota := max(minQuota, time.Duration(float64(Period)*deploy.CPUShare(memoryMB)))
	for _, w := range []struct{ controller, file, value string }{
		{"cpu", "cpu.cfs_period_us", strconv.FormatInt(Period.Microseconds(), 10)},
		{"cpu", "cpu.cfs_quota_us", strconv.FormatInt(quota.Microseconds(), 10)},
		{"memory", "memory.limit_in_bytes", strconv.FormatInt(int64(memoryMB)<<20, 10)},
	} {
		if err := os.WriteFile(filepath.Join(g.dir(w.controller), w.file), []byte(w.value), 0); err != nil {
			_ = g.Remove()
			return nil, fmt.Errorf("cgroup %s: %s = %s: %w", g.name, w.file, w.value, err)
		}
	}
	return g, nil
}

func (g *Group) dir(controller string) string { return filepath.Join(Root, controller, parent, g.name) }

// Unthrottle lifts the group's CPU quota and keeps its memory limit: for
// runs that measure memory, which the quota would only slow.
func (g *Group) Unthrottle() error {
	if err := os.WriteFile(filepath.Join(g.dir("cpu"), "cpu.cfs_quota_us"), []byte("-1"), 0); err != nil {
		return fmt.Errorf("cgroup %s: unthrottle: %w", g.name, err)
	}
	return nil
}

// MemoryMB is the group's memory size.
func (g *Group) MemoryMB() int { return g.memoryMB }

// Quota is the CPU time the group may use per Period, as the kernel holds it.
func (g *Group) Quota() (time.Duration, error) {
	us, err := readInt(filepath.Join(g.dir("cpu"), "cpu.cfs_quota_us"))
	return time.Duration(us) * time.Microsecond, err
}

// Add moves process pid into the group, in every controller; the
// processes it starts from then on are in it too.
func (g *Group) Add(pid int) error {
	for _, c := range controllers {
		if err := os.WriteFile(filepath.Join(g.dir(c), "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			return fmt.Errorf("cgroup %s: add %d: %w", g.name, pid, err)
		}
	}
	return nil
}

// Usage is what a group's processes used, from its counters.
type Usage struct {
	// CPU is the CPU time used since the group was made (cpuacct.usage).
	CPU time.Duration
	// RSS is the anonymous memory its processes hold now (memory.stat's
	// rss: no page cache, no mapped files).
	RSS int64
	// Periods and Throttled are the CFS periods it ran in and those in
	// which it used its whole quota (cpu.stat).
	Periods, Throttled int64
}

// Usage reads the group's counters.
func (g *Group) Usage() (Usage, error) {
	var u Usage
	ns, err := readInt(filepath.Join(g.dir("cpuacct"), "cpuacct.usage"))
	if err != nil {
		return u, err
	}
	u.CPU = time.Duration(ns)
	mem, err := readStat(filepath.Join(g.dir("memory"), "memory.stat"))
	if err != nil {
		return u, err
	}
	cpu, err := readStat(filepath.Join(g.dir("cpu"), "cpu.stat"))
	if err != nil {
		return u, err
	}
	u.RSS, u.Periods, u.Throttled = mem["rss"], cpu["nr_periods"], cpu["nr_throttled"]
	return u, nil
}

// Remove deletes the group; its processes must have ended.
func (g *Group) Remove() error {
	var errs []error
	for _, c := range controllers {
		if err := os.Remove(g.dir(c)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// readStat reads a file of "name value" lines.
func readStat(path string) (map[string]int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, line := range strings.Split(string(b), "\n") {
		if name, value, ok := strings.Cut(line, " "); ok {
			if n, err := strconv.ParseInt(value, 10, 64); err == nil {
				out[name] = n
			}
		}
	}
	return out, nil
}

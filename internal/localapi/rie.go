// Package localapi runs the functions locally as they run in AWS: the real
// bootstrap binaries under the AWS Lambda Runtime Interface Emulator, a pool
// of execution environments per function, and a gateway that turns HTTP
// requests into API Gateway HTTP API (payload v2) events after checking the
// bearer JWT.
package localapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/idempotent-payments/idempay/internal/localapi/cgroup"
)

// ErrNoInstance: every instance stayed busy for the whole wait.
var ErrNoInstance = errors.New("no free function instance")

// ErrPoolClosed: the pool was closed; it starts no instance again.
var ErrPoolClosed = errors.New("function pool closed")

// FunctionError is an invocation that failed inside the runtime (a crash, a
// timeout): what API Gateway answers 5xx for.
type FunctionError struct {
	Status int
	Body   []byte
}

func (e *FunctionError) Error() string {
	return fmt.Sprintf("function failed: emulator status %d: %.200s", e.Status, e.Body)
}

// PoolConfig describes one function's execution environments.
type PoolConfig struct {
	// RIE is the aws-lambda-rie binary; Bootstrap the function binary.
	RIE, Bootstrap string
	// Instances is the number of execution environments (at least 1).
	Instances int
	// Timeout is the function timeout (whole seconds; AWS_LAMBDA_FUNCTION_TIMEOUT).
	Timeout time.Duration
	// Env is the function's environment, added to this process's.
	Env []string
	// Name is the function name (logs, AWS_LAMBDA_FUNCTION_NAME).
	Name string
	// Output receives the emulators' and functions' output (discarded when
	// nil). It is handed to the processes as a file, never through a pipe:
	// a killed emulator's runtime may outlive it for a moment, and a pipe it
	// holds would keep the emulator's Wait from returning.
	Output *os.File
	// Wait bounds how long an invocation waits for a free instance (30 s).
	Wait time.Duration
	// MemoryMB, when set, shapes each instance as a Lambda execution
	// environment of that size: its emulator and its bootstrap in a cgroup
	// of their own, with that size's CPU quota and memory limit (package
	// cgroup). An instance that cannot be put in its group fails to start.
	// MemoryOnly keeps the memory limit and lifts the CPU quota.
	MemoryMB   int
	MemoryOnly bool
	// pick, when set, picks an emulator's two addresses (its own and its
	// runtime API's) in place of freeAddrs: a test hands it one that
	// another listener holds, as another process may bind a picked port
	// before the emulator does.
	pick func(n int) ([]string, error)
}

// Pool is a set of RIE instances of one function. Each RIE handles one
// invocation at a time (a concurrent second one crashes it), so the pool
// hands each invocation a free instance and waits when none is.
type Pool struct {
	cfg      PoolConfig
	free     chan *instance
	all      []*instance
	http     *http.Client
	replaced atomic.Int64
	closed   atomic.Bool
	// sampling runs sampleMemory until stopSampling closes.
	sampling     sync.WaitGroup
	stopSampling chan struct{}
	// Durations keeps, while it records, each invocation's duration, from
	// the request to the emulator to its answer: what Lambda bills, give or
	// take the emulator's own fraction of a millisecond.
	Durations DurationLog
}

// Replaced counts the instances replaced before an invocation because
// they had died while idle.
func (p *Pool) Replaced() int { return int(p.replaced.Load()) }

type instance struct {
	mu    sync.Mutex
	group *cgroup.Group // nil: unshaped
	peak  atomic.Int64  // the most RSS its group was seen to hold
	// invocations counts those its emulator has run since it started.
	invocations atomic.Int64
	cmd         *exec.Cmd
	addr        string // emulator address
	api         string // runtime API address
	pool        *Pool
	done        chan struct{}
	// broken: its last restart failed; served: it has run an invocation,
	// so its runtime (the bootstrap) was started. Only the goroutine
	// holding the instance (taken from the free list) reads or writes them.
	broken, served bool
	// runtime is the runtime it started, once seen.
	runtime runtimeProc
}

// StartPool starts cfg.Instances emulators and waits until each accepts
// connections. Close stops them.
func StartPool(cfg PoolConfig) (*Pool, error) {
	if cfg.Instances < 1 {
		cfg.Instances = 1
	}
	if cfg.Wait <= 0 {
		cfg.Wait = 30 * time.Second
	}
	if cfg.Output == nil {
		devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		if err != nil {
			return nil, err
		}
		cfg.Output = devNull
	}
	p := &Pool{cfg: cfg, free: make(chan *instance, cfg.Instances), http: &http.Client{}, stopSampling: make(chan struct{})}
	for range cfg.Instances {
		in := &instance{pool: p}
		if cfg.MemoryMB > 0 {
			g, err := cgroup.New(cfg.Name, cfg.MemoryMB)
			if err == nil && cfg.MemoryOnly {
				if err = g.Unthrottle(); err != nil {
					_ = g.Remove()
				}
			}
			if err != nil {
				p.Close()
				return nil, err
			}
			in.group = g
		}
		if err := in.start(); err != nil {
			if in.group != nil {
				in.removeGroup()
			}
			p.Close()
			return nil, err
		}
		p.all = append(p.all, in)
		p.free <- in
	}
	if cfg.MemoryMB > 0 {
		p.sampling.Go(p.sampleMemory)
	}
	return p, nil
}

// memorySample is how often a shaped pool reads its groups' RSS for their
// peaks.
const memorySample = 50 * time.Millisecond

// sampleMemory keeps each shaped instance's peak RSS until the pool
// closes.
func (p *Pool) sampleMemory() {
	t := time.NewTicker(memorySample)
	defer t.Stop()
	for {
		select {
		case <-p.stopSampling:
			return
		case <-t.C:
		}
		for _, in := range p.all {
			if u, err := in.group.Usage(); err == nil && u.RSS > in.peak.Load() {
				in.peak.Store(u.RSS)
			}
		}
	}
}

// Environment is what one shaped execution environment used, from its
// cgroup: its CPU time, its RSS now and the most seen (sampled every
// 50 ms), and the CFS periods it ran in and was throttled in; and the
// invocations its current emulator has run.
type Environment struct {
	MemoryMB           int
	CPU                time.Duration
	RSS, PeakRSS       int64
	Periods, Throttled int64
	Invocations        int
}

// Environments is what each instance's execution environment used, when
// the pool is shaped (PoolConfig.MemoryMB); none otherwise.
func (p *Pool) Environments() ([]Environment, error) {
	var out []Environment
	for _, in := range p.all {
		if in.group == nil {
			continue
		}
		u, err := in.group.Usage()
		if err != nil {
			return nil, err
		}
		out = append(out, Environment{MemoryMB: in.group.MemoryMB(), CPU: u.CPU, RSS: u.RSS, PeakRSS: max(u.RSS, in.peak.Load()),
			Periods: u.Periods, Throttled: u.Throttled, Invocations: int(in.invocations.Load())})
	}
	return out, nil
}

// start starts the instance's emulator on fresh ports, trying new ports
// when the emulator exits at start or another process listens on one of
// its ports (up to 3 times).
func (in *instance) start() error {
	var err error
	for range 3 {
		if err = in.startOnce(); !retryPorts(err) {
			return err
		}
	}
	return err
}

// startOnce starts the emulator on two ports picked for it, its own and
// its runtime API's, and returns once it alone listens on both
// (awaitListening): from then on every connection to them reaches it.
func (in *instance) startOnce() error {
	cfg := in.pool.cfg
	pick := freeAddrs
	if cfg.pick != nil {
		pick = cfg.pick
	}
	addrs, err := pick(2)
	if err != nil {
		return err
	}
	addr, api := addrs[0], addrs[1]
	in.invocations.Store(0)
	cmd := exec.Command(cfg.RIE, "--log-level", "error", "--runtime-interface-emulator-address", addr, "--runtime-api-address", api, cfg.Bootstrap)
	cmd.Env = append(os.Environ(), cfg.Env...)
	cmd.Env = append(cmd.Env,
		"AWS_LAMBDA_FUNCTION_TIMEOUT="+strconv.Itoa(int(max(time.Second, cfg.Timeout)/time.Second)),
		"AWS_LAMBDA_FUNCTION_NAME="+cfg.Name,
	)
	cmd.Stdout, cmd.Stderr = cfg.Output, cfg.Output
	// One process group, so killing it kills the bootstrap too; and gone with
	// this process if it dies without cleaning up.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", cfg.RIE, err)
	}
	// Into its group before it listens: the emulator starts the bootstrap
	// at the first invocation, which is then in the group too.
	if in.group != nil {
		if err := in.group.Add(cmd.Process.Pid); err != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
			return err
		}
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	in.mu.Lock()
	in.cmd, in.addr, in.api, in.done = cmd, addr, api, done
	in.mu.Unlock()
	// The emulator listens on both at start, its runtime API's before any
	// bootstrap runs, and exits when it cannot bind one.
	if err := awaitListening(cmd.Process.Pid, done, 10*time.Second, addr, api); err != nil {
		if !errors.Is(err, errExitedAtStart) {
			in.kill() // not left running where no pool can reach it
		} // one that exited is reaped, and started no bootstrap: it starts one only when invoked
		return fmt.Errorf("%s instance: %w", cfg.Name, err)
	}
	return nil
}

// kill ends the instance's process group at once (SIGKILL), as a crashed
// execution environment would end.
func (in *instance) kill() {
	in.mu.Lock()
	cmd, done := in.cmd, in.done
	in.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-done
}

// Invoke sends payload to a free instance and returns the function's
// result. An instance whose emulator failed is restarted before it serves
// again, as Lambda replaces a broken execution environment. Cancelling ctx
// abandons the wait for an instance, and kills an instance mid-invocation
// (an RIE cannot take a second invocation while the first runs): callers
// that must not kill pass a context that outlives the function timeout.
func (p *Pool) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	if p.closed.Load() {
		return nil, ErrPoolClosed
	}
	var in *instance
	select {
	case in = <-p.free:
	case <-time.After(p.cfg.Wait):
		return nil, ErrNoInstance
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { p.free <- in }()
	if !in.broken && !in.healthy() {
		in.kill() // died while idle: replaced before it serves, as Lambda does
		in.broken = true
		p.replaced.Add(1)
	}
	if in.broken {
		if p.closed.Load() {
			return nil, ErrPoolClosed
		}
		if err := in.start(); err != nil {
			return nil, fmt.Errorf("restart %s: %w", p.cfg.Name, err)
		}
		in.broken, in.served = false, false
	}
	started := time.Now()
	out, err := in.invoke(ctx, payload)
	p.Durations.add(time.Since(started))
	in.invocations.Add(1)
	in.served = true
	if err != nil {
		in.kill()
		in.served = false
		if p.closed.Load() || in.start() != nil {
			in.broken = true // the next invocation tries again
		}
	}
	return out, err
}

// healthy reports whether the instance can take an invocation: its
// emulator runs and, once it has served one, so does its runtime (the
// emulator starts the bootstrap at the first invocation and does not
// restart a runtime that died while idle: the next invocation would fail).
func (in *instance) healthy() bool {
	in.mu.Lock()
	cmd, done := in.cmd, in.done
	in.mu.Unlock()
	select {
	case <-done:
		return false
	default:
	}
	if !in.served {
		return true
	}
	if in.runtime.alive() { // one poll of its pidfd per invocation
		return true
	}
	in.runtime.forget()
	kids := children(cmd.Process.Pid)
	if len(kids) == 0 {
		return false
	}
	in.runtime.watch(kids[0], cmd.Process.Pid)
	return true
}

// runtimeProc is the runtime (the bootstrap) an emulator started, watched
// through a pidfd opened once it is seen: a check is one poll, with no
// read of /proc, and a pid reused after the runtime ended is never taken
// for it. Only the goroutine holding the instance uses it.
type runtimeProc struct {
	fd       int
	watching bool
}

// watch opens a pidfd of pid, which must still be a live child of parent
// once it is open (checked after, so a pid reused in between is not
// watched). It reports whether it watches.
func (r *runtimeProc) watch(pid, parent int) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return false
	}
	if !childAlive(pid, parent) {
		_ = unix.Close(fd)
		return false
	}
	r.fd, r.watching = fd, true
	return true
}

// alive reports whether the watched runtime runs: its pidfd is readable
// once it has ended. False when nothing is watched.
func (r *runtimeProc) alive() bool {
	if !r.watching {
		return false
	}
	fds := []unix.PollFd{{Fd: int32(r.fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, 0)
		if err == unix.EINTR {
			continue
		}
		return err == nil && n == 0
	}
}

// forget stops watching, closing the pidfd.
func (r *runtimeProc) forget() {
	if r.watching {
		_ = unix.Close(r.fd)
		r.watching = false
	}
}

// children lists the live child processes of pid, from Linux's /proc:
// each thread lists the children it started (/proc/PID/task/TID/children),
// and the emulator, a Go program, starts them from any of its threads.
// None when /proc cannot be read.
func children(pid int) []int {
	lists, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var out []int
	for _, list := range lists {
		b, err := os.ReadFile(list)
		if err != nil {
			continue
		}
		for _, f := range bytes.Fields(b) {
			if n, err := strconv.Atoi(string(f)); err == nil && childAlive(n, pid) {
				out = append(out, n)
			}
		}
	}
	return out
}

// childAlive reports whether pid is a live child of parent: a killed child
// stays listed, as a zombie, until its parent reaps it, and a pid seen
// before may have been reused by then.
func childAlive(pid, parent int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state and the parent's pid follow the command name, which is in
	// parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return false
	}
	fields := bytes.Fields(b[i+1:])
	if len(fields) < 2 || fields[0][0] == 'Z' || fields[0][0] == 'X' {
		return false
	}
	ppid, err := strconv.Atoi(string(fields[1]))
	return err == nil && ppid == parent
}

// Processes lists the pool's processes: each instance's emulator, and the
// runtimes (bootstraps) those have started.
func (p *Pool) Processes() (emulators, runtimes []int) {
	for _, in := range p.all {
		in.mu.Lock()
		pid := in.cmd.Process.Pid
		in.mu.Unlock()
		emulators = append(emulators, pid)
		runtimes = append(runtimes, children(pid)...)
	}
	return emulators, runtimes
}

// KillIdleRuntimes SIGKILLs the runtime (the bootstrap) of every idle
// instance that has one, leaving its emulator running: a function process
// that died between invocations. It returns how many it killed.
func (p *Pool) KillIdleRuntimes() int {
	idle := p.takeIdle()
	killed := 0
	for _, in := range idle {
		in.mu.Lock()
		pid := in.cmd.Process.Pid
		in.mu.Unlock()
		for _, child := range children(pid) {
			if syscall.Kill(child, syscall.SIGKILL) == nil {
				killed++
			}
		}
	}
	for _, in := range idle {
		for range 200 { // up to a second for the runtime's exit to show
			if !in.served || !in.healthy() {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		p.free <- in
	}
	return killed
}

func (in *instance) invoke(ctx context.Context, payload []byte) ([]byte, error) {
	in.mu.Lock()
	url := "http://" + in.addr + "/2015-03-31/functions/function/invocations"
	in.mu.Unlock()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
	if err != nil {
		return nil, err
	}
	resp, err := in.pool.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("invoke %s: %w", in.pool.cfg.Name, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("invoke %s: read: %w", in.pool.cfg.Name, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &FunctionError{Status: resp.StatusCode, Body: body}
	}
	return body, nil
}

// takeIdle takes every idle instance off the free list; the caller puts
// them back.
func (p *Pool) takeIdle() []*instance {
	var idle []*instance
	for {
		select {
		case in := <-p.free:
			idle = append(idle, in)
		default:
			return idle
		}
	}
}

// KillBusy SIGKILLs every instance that is in the middle of an invocation,
// as if its execution environment crashed; each restarts before serving
// again. It returns how many it killed.
func (p *Pool) KillBusy() int {
	idle := p.takeIdle()
	killed := 0
	for _, in := range p.all {
		busy := true
		for _, f := range idle {
			busy = busy && f != in
		}
		if busy {
			in.kill()
			killed++
		}
	}
	for _, in := range idle {
		p.free <- in
	}
	return killed
}

// Close stops every instance and returns once none runs: it kills them
// all, which ends the invocations under way, then waits for each to be
// given back and kills it again, in case its invocation restarted it
// before seeing the pool closed. No instance starts after Close, so none
// writes to Output once it returns. A second Close does nothing.
func (p *Pool) Close() {
	if p.closed.Swap(true) {
		return // closed already
	}
	close(p.stopSampling)
	p.sampling.Wait()
	for _, in := range p.all {
		in.kill()
	}
	for range p.all {
		in := <-p.free
		in.kill()
		in.runtime.forget()
	}
	for _, in := range p.all {
		if in.group != nil {
			in.removeGroup()
		}
	}
}

// removeGroup deletes the instance's group once its processes are gone
// (the kernel refuses it before): the killed bootstrap may take a moment
// to be reaped by init.
func (in *instance) removeGroup() {
	for range 100 {
		if in.group.Remove() == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

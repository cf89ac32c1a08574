package systemtest_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/sandbox"
)

// childRole, set in this test binary's environment, makes it one part of
// BenchmarkFunctionCPU's pipeline instead of a test run, so that each part
// runs in a process of its own and has a CPU figure of its own:
//   - "sandbox" serves the sandbox acquirer on a loopback port, prints its
//     URL on a line and serves until killed;
//   - "load" sends childN charges (keys childKeys + 0…n-1, bearer
//     childToken) to childURL from benchClients goroutines, prints the CPU
//     (getrusage) and wall nanoseconds the load took, and exits 0 when each
//     got a 201.
const (
	childRole   = "SYSTEMTEST_CHILD"
	childURL    = "SYSTEMTEST_URL"
	childToken  = "SYSTEMTEST_TOKEN"
	childKeys   = "SYSTEMTEST_KEYS"
	childN      = "SYSTEMTEST_N"
	roleSandbox = "sandbox"
	roleLoad    = "load"
)

// runChild is the whole process of a child role; it returns the exit code.
func runChild(role string) int {
	switch role {
	case roleSandbox:
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println("http://" + l.Addr().String())
		srv := &http.Server{Handler: sandbox.New(""), ReadHeaderTimeout: 5 * time.Second}
		fmt.Fprintln(os.Stderr, srv.Serve(l))
		return 1
	case roleLoad:
		n, err := strconv.Atoi(os.Getenv(childN))
		if err != nil || n <= 0 {
			fmt.Fprintf(os.Stderr, "%s=%q: want a positive count\n", childN, os.Getenv(childN))
			return 2
		}
		cpu0, start := selfCPU(), time.Now()
		var next atomic.Int64
		var failed atomic.Value
		var wg sync.WaitGroup
		for range benchClients {
			wg.Go(func() {
				for k := int(next.Add(1)) - 1; k < n; k = int(next.Add(1)) - 1 {
					if err := chargeAt(os.Getenv(childURL), os.Getenv(childToken), os.Getenv(childKeys)+strconv.Itoa(k), 201); err != nil {
						failed.Store(err)
					}
				}
			})
		}
		wg.Wait()
		if err, _ := failed.Load().(error); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println(int64(selfCPU()-cpu0), int64(time.Since(start)))
		return 0
	}
	fmt.Fprintf(os.Stderr, "%s=%q: no such role\n", childRole, role)
	return 2
}

// selfCPU is this process's user plus system CPU so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// child is this test binary started as role with env added, killed when
// ctx ends or when this process dies (so a benchmark that panics or times
// out leaves no sandbox serving).
func child(ctx context.Context, role string, env ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, os.Args[0])
	cmd.Env = append(os.Environ(), append(env, childRole+"="+role)...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// startSandbox starts the sandbox acquirer in a child process, stopped at
// the end of b; it returns the acquirer's URL and the process id.
func startSandbox(b *testing.B) (string, int) {
	b.Helper()
	cmd := child(context.Background(), roleSandbox)
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	url, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		b.Fatalf("sandbox process: %v", err)
	}
	return url[:len(url)-1], cmd.Process.Pid
}

// runLoad sends n charges of keys prefix+0…n-1 to url from a child process
// and returns the CPU (user + system) and the wall time the child spent on
// them, its start-up left out. The load has loadTimeout.
func runLoad(b *testing.B, url, token, prefix string, n int) (cpu, wall time.Duration) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), loadTimeout)
	defer cancel()
	out, err := child(ctx, roleLoad, childURL+"="+url, childToken+"="+token, childKeys+"="+prefix, childN+"="+strconv.Itoa(n)).Output()
	if err != nil {
		b.Fatalf("load process: %v", err)
	}
	if _, err := fmt.Sscan(string(out), &cpu, &wall); err != nil {
		b.Fatalf("load process printed %q: %v", out, err)
	}
	return cpu, wall
}

// loadTimeout bounds a child's load; benchClient bounds each request.
const loadTimeout = 5 * time.Minute

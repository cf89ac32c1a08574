package systemtest_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
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
//     childToken) to childURL from benchClients goroutines and exits 0
//     when each got a 201.
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
		n, _ := strconv.Atoi(os.Getenv(childN))
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
		return 0
	}
	fmt.Fprintf(os.Stderr, "%s=%q: no such role\n", childRole, role)
	return 2
}

// child is this test binary started as role with env added.
func child(role string, env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), append(env, childRole+"="+role)...)
	cmd.Stderr = os.Stderr
	return cmd
}

// startSandbox starts the sandbox acquirer in a child process, stopped at
// the end of b; it returns the acquirer's URL and the process id.
func startSandbox(b *testing.B) (string, int) {
	b.Helper()
	cmd := child(roleSandbox)
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
// and returns its CPU (user + system, from wait4) and the wall time.
func runLoad(b *testing.B, url, token, prefix string, n int) (cpu, wall time.Duration) {
	b.Helper()
	cmd := child(roleLoad, childURL+"="+url, childToken+"="+token, childKeys+"="+prefix, childN+"="+strconv.Itoa(n))
	start := time.Now()
	if err := cmd.Run(); err != nil {
		b.Fatalf("load process: %v", err)
	}
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), time.Since(start)
}

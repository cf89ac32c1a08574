package localapi

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Ports. The emulators and DynamoDB Local are given loopback ports picked
// here (freeAddrs), which they bind themselves: each takes an address on
// its command line, and none can be handed a socket already bound. Between
// the pick and their bind another process may bind the port, and a
// connection to it then reaches that process. So
// a process given ports counts as started only once it alone listens on
// every one of them (awaitListening), and is otherwise stopped and started
// again on new ones. The ports the stack serves on itself (the gateway's,
// the sandbox's, the operator channel's) are bound before any emulator
// starts and stay reserved (reservePort) until the stack closes: none is
// picked, even while a sandbox outage has released its listener.

// errExitedAtStart: a process given ports exited before it listened on
// them, as it does when another process bound one of them first.
var errExitedAtStart = errors.New("exited at start")

// errPortTaken: another process listens on a port picked for a process
// that has not yet listened on it.
var errPortTaken = errors.New("port taken by another process")

// retryPorts reports whether err is one a start on new ports may cure.
func retryPorts(err error) bool {
	return errors.Is(err, errExitedAtStart) || errors.Is(err, errPortTaken)
}

// reserved counts, by port, the listeners of stacks in this process that
// hold it or will bind it again.
var reserved = struct {
	sync.Mutex
	ports map[int]int
}{ports: map[int]int{}}

// reservePort keeps port out of every pick (freeAddrs) until release is
// called, once.
func reservePort(port int) (release func()) {
	reserved.Lock()
	reserved.ports[port]++
	reserved.Unlock()
	return sync.OnceFunc(func() {
		reserved.Lock()
		defer reserved.Unlock()
		if reserved.ports[port]--; reserved.ports[port] == 0 {
			delete(reserved.ports, port)
		}
	})
}

func isReserved(port int) bool {
	reserved.Lock()
	defer reserved.Unlock()
	return reserved.ports[port] > 0
}

// freeAddrs picks n distinct loopback addresses whose ports were free
// when picked and are not reserved: the kernel's choices for port 0.
func freeAddrs(n int) ([]string, error) {
	return pickAddrs(n, func() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") })
}

// pickAddrs is freeAddrs with the kernel's choice made by listen. Each
// listener stays open until n are picked, so no port comes twice.
func pickAddrs(n int, listen func() (net.Listener, error)) ([]string, error) {
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	var addrs []string
	for len(addrs) < n {
		if len(held) > n+100 {
			return nil, fmt.Errorf("pick a free port: %d picks, all reserved", len(held))
		}
		l, err := listen()
		if err != nil {
			return nil, fmt.Errorf("pick a free port: %w", err)
		}
		held = append(held, l)
		if !isReserved(l.Addr().(*net.TCPAddr).Port) {
			addrs = append(addrs, l.Addr().String())
		}
	}
	return addrs, nil
}

// awaitListening waits until process pid alone listens on every one of
// addrs (loopback IPv4 host:port), polling every 20 ms for up to wait.
// Once it does, every connection to them reaches it until it closes them:
// a socket listening without SO_REUSEPORT, as Go's and Java's do unless
// asked, keeps any other socket from listening on its port. It returns
// errExitedAtStart when done closes first (the process exited),
// errPortTaken when another process listens on one of addrs, and an error
// after wait.
func awaitListening(pid int, done <-chan struct{}, wait time.Duration, addrs ...string) error {
	deadline := time.Now().Add(wait)
	for {
		all := true
		for _, addr := range addrs {
			alone, err := listensAlone(pid, addr)
			if err != nil {
				return err
			}
			all = all && alone
		}
		if all {
			return nil
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("not listening on %s after %s", strings.Join(addrs, " and "), wait)
		}
		select {
		case <-done:
			return errExitedAtStart
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// listensAlone reports whether process pid alone listens on addr (a
// loopback IPv4 host:port), from Linux's /proc: every listening TCP socket
// a connection to addr could reach (bound to addr or to the wildcard
// address, over IPv4 or IPv6, or to addr's IPv4-mapped IPv6 form) is one
// of pid's open files, and there is one. It fails with errPortTaken when
// another process's socket listens there.
func listensAlone(pid int, addr string) (bool, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || !ap.Addr().Is4() {
		return false, fmt.Errorf("listeners of %q: want an IPv4 host:port", addr)
	}
	// The sockets first, their owner's files after: a socket listens only
	// once it is a file of its process, so no listener of pid is missed.
	var listening []string
	for _, table := range []struct {
		path  string
		hosts []netip.Addr
	}{
		{"/proc/net/tcp", []netip.Addr{ap.Addr(), netip.IPv4Unspecified()}},
		{"/proc/net/tcp6", []netip.Addr{netip.AddrFrom16(ap.Addr().As16()), netip.IPv6Unspecified()}},
	} {
		var locals []string
		for _, h := range table.hosts {
			locals = append(locals, procAddr(h, ap.Port()))
		}
		inodes, err := listeningInodes(table.path, locals)
		if err != nil {
			return false, err
		}
		listening = append(listening, inodes...)
	}
	if len(listening) == 0 {
		return false, nil
	}
	own, err := socketInodes(pid)
	if err != nil {
		return false, err
	}
	for _, inode := range listening {
		if !own[inode] {
			return false, fmt.Errorf("%s: %w", addr, errPortTaken)
		}
	}
	return true, nil
}

// procAddr is host:port as /proc/net/tcp and tcp6 print a local address:
// each 32-bit word of the address in hex in this machine's byte order, a
// colon, the port in hex.
func procAddr(host netip.Addr, port uint16) string {
	var b strings.Builder
	raw := host.AsSlice()
	for i := 0; i < len(raw); i += 4 {
		fmt.Fprintf(&b, "%08X", binary.NativeEndian.Uint32(raw[i:]))
	}
	fmt.Fprintf(&b, ":%04X", port)
	return b.String()
}

// tcpListen is the state of a listening socket in /proc/net/tcp and tcp6.
const tcpListen = "0A"

// listeningInodes reads a /proc/net/tcp table: the inodes of the sockets
// listening on any of locals (procAddr's form). A missing table (no IPv6)
// has none.
func listeningInodes(path string, locals []string) ([]string, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listeners: %w", err)
	}
	defer f.Close()
	var inodes []string
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 || fields[3] != tcpListen {
			continue
		}
		for _, l := range locals {
			if fields[1] == l {
				inodes = append(inodes, fields[9])
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("listeners: read %s: %w", path, err)
	}
	return inodes, nil
}

// socketInodes is the inodes of the sockets among process pid's open
// files; none once it has exited.
func socketInodes(pid int) (map[string]bool, error) {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("the sockets of process %d: %w", pid, err)
	}
	own := map[string]bool{}
	for _, e := range entries {
		target, err := os.Readlink(dir + "/" + e.Name())
		if err != nil {
			continue // closed since the listing
		}
		if inode, ok := strings.CutPrefix(target, "socket:["); ok {
			own[strings.TrimSuffix(inode, "]")] = true
		}
	}
	return own, nil
}

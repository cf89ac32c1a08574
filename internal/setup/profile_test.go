package setup

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/deploy"
)

// TestProfileSignalSwitchesTheProfile: with deploy.EnvCPUProfile set, a
// first ProfileSignal starts a CPU profile and a second writes it whole
// to PATH.PID.0 (a gzipped pprof profile); nothing is written before the
// second.
func TestProfileSignalSwitchesTheProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu")
	stop := profileCPU(slog.New(slog.DiscardHandler), func(name string) string {
		if name == deploy.EnvCPUProfile {
			return path
		}
		return ""
	})
	t.Cleanup(stop)
	want := fmt.Sprintf("%s.%d.0", path, os.Getpid())
	if err := syscall.Kill(os.Getpid(), ProfileSignal); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(200 * time.Millisecond); time.Now().Before(end); { // something to profile
	}
	if _, err := os.Stat(want); err == nil {
		t.Fatal("a profile was written before the second signal")
	}
	if err := syscall.Kill(os.Getpid(), ProfileSignal); err != nil {
		t.Fatal(err)
	}
	var written []byte
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end) && len(written) == 0; time.Sleep(10 * time.Millisecond) {
		written, _ = os.ReadFile(want)
	}
	if !bytes.HasPrefix(written, []byte{0x1f, 0x8b}) {
		t.Fatalf("%s: %d bytes, want a gzipped profile", want, len(written))
	}
}

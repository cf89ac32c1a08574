package systemtest_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/deploy"
	"github.com/idempotent-payments/idempay/internal/setup"
)

// profiled runs measure and, when the benchmark's environment sets
// deploy.EnvCPUProfile (the function processes inherit it), profiles the
// processes pids meanwhile: setup.ProfileSignal before and after. Each
// process's profile is kept as PATH.NAME.PID.pprof (PATH.NAME.PID-I.pprof
// for later measures of the same name), NAME being name, a benchmark's,
// with its slashes as dashes, so a profile holds the measured requests
// and nothing else (`go tool pprof -top`).
func profiled(b *testing.B, name string, pids []int, measure func()) {
	b.Helper()
	path := os.Getenv(deploy.EnvCPUProfile)
	if path == "" {
		measure()
		return
	}
	signal := func() {
		for _, pid := range pids {
			if err := syscall.Kill(pid, setup.ProfileSignal); err != nil {
				b.Logf("profile of %d: %v", pid, err)
			}
		}
	}
	// Each profile is renamed once written, so what is left under its
	// first name, PATH.PID.N, is this measure's (or a late one's).
	written := func(pid int) []string {
		names, _ := filepath.Glob(fmt.Sprintf("%s.%d.*", path, pid))
		return slices.DeleteFunc(names, func(n string) bool { return strings.HasSuffix(n, ".tmp") })
	}
	signal()
	measure()
	signal()
	name = strings.ReplaceAll(name, "/", "-")
	for _, pid := range pids {
		deadline := time.Now().Add(10 * time.Second)
		for len(written(pid)) == 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		names := written(pid)
		if len(names) == 0 {
			b.Logf("profile of %d: none written", pid)
		}
		for _, n := range names {
			kept := fmt.Sprintf("%s.%s.%d.pprof", path, name, pid)
			for i := 1; exists(kept); i++ { // a later block or iteration of the same name, or a late profile
				kept = fmt.Sprintf("%s.%s.%d-%d.pprof", path, name, pid, i)
			}
			if err := os.Rename(n, kept); err != nil {
				b.Logf("profile of %d: %v", pid, err)
			}
		}
	}
}

func exists(name string) bool {
	_, err := os.Stat(name)
	return err == nil
}

package setup

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/idempotent-payments/idempay/internal/deploy"
)

// ProfileSignal switches a function process's CPU profile on and off
// when deploy.EnvCPUProfile is set: the first signal starts a profile,
// the next one writes it to that path plus the process id and the
// profile's number (PATH.PID.N), and so on. A benchmark sends it around
// the requests it measures, so a profile holds those and nothing else.
const ProfileSignal = syscall.SIGUSR1

// profileCPU profiles this process between pairs of ProfileSignal when
// deploy.EnvCPUProfile names a path, until stop is called. A local switch
// for finding what a request costs: the CDK app never sets it, and it is
// off when the variable is empty (without it, the signal's default action
// ends the process). A profile is written whole, under a temporary name
// first, so a file at PATH.PID.N is always complete. A profile that could
// not be started or written is logged, and the next pair is tried.
func profileCPU(logger *slog.Logger, getenv func(string) string) (stop func()) {
	path := getenv(deploy.EnvCPUProfile)
	if path == "" {
		return func() {}
	}
	signals := make(chan os.Signal, 2) // a start and its stop, however fast they come
	done := make(chan struct{})
	signal.Notify(signals, ProfileSignal)
	next := func() bool {
		select {
		case <-signals:
			return true
		case <-done:
			return false
		}
	}
	go func() {
		for n := 0; next(); n++ {
			var profile bytes.Buffer
			started := pprof.StartCPUProfile(&profile)
			if !next() {
				if started == nil {
					pprof.StopCPUProfile()
				}
				return
			}
			if started != nil {
				logger.Warn("cpu profile", "error", started)
				continue
			}
			pprof.StopCPUProfile()
			name := fmt.Sprintf("%s.%d.%d", path, os.Getpid(), n)
			if err := os.WriteFile(name+".tmp", profile.Bytes(), 0o644); err != nil {
				logger.Warn("cpu profile", "error", err)
				continue
			}
			if err := os.Rename(name+".tmp", name); err != nil {
				logger.Warn("cpu profile", "error", err)
			}
		}
	}()
	return func() {
		signal.Stop(signals)
		close(done)
	}
}

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
// deploy.EnvCPUProfile names a path. A local switch for finding what a
// request costs: the CDK app never sets it, and it is off when the
// variable is empty. A profile is written whole, under a temporary name
// first, so a file at PATH.PID.N is always complete.
func profileCPU(logger *slog.Logger, getenv func(string) string) {
	path := getenv(deploy.EnvCPUProfile)
	if path == "" {
		return
	}
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, ProfileSignal)
	go func() {
		for n := 0; ; n++ {
			<-signals
			var profile bytes.Buffer
			if err := pprof.StartCPUProfile(&profile); err != nil {
				logger.Warn("cpu profile", "error", err)
				return
			}
			<-signals
			pprof.StopCPUProfile()
			name := fmt.Sprintf("%s.%d.%d", path, os.Getpid(), n)
			if err := os.WriteFile(name+".tmp", profile.Bytes(), 0o644); err != nil {
				logger.Warn("cpu profile", "error", err)
				return
			}
			if err := os.Rename(name+".tmp", name); err != nil {
				logger.Warn("cpu profile", "error", err)
				return
			}
		}
	}()
}

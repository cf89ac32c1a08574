package setup

import (
	"fmt"
	"log/slog"
	"os"
	"runtime/pprof"
	"strconv"
	"time"

	"github.com/idempotent-payments/idempay/internal/deploy"
)

// profileCPU writes CPU profiles of this process, one per window of
// deploy.EnvCPUProfileSeconds (10) seconds, to deploy.EnvCPUProfile's path plus the
// process id and the window's number, for as long as the process runs (a
// function process is killed, not stopped, so only whole windows are
// kept). A local switch for finding what a request costs: the CDK app
// never sets it, and it is off when the variable is empty.
func profileCPU(logger *slog.Logger, getenv func(string) string) {
	path := getenv(deploy.EnvCPUProfile)
	if path == "" {
		return
	}
	secs, err := strconv.Atoi(getenv(deploy.EnvCPUProfileSeconds))
	if err != nil || secs <= 0 {
		secs = 10
	}
	go func() {
		for n := 0; ; n++ {
			f, err := os.Create(fmt.Sprintf("%s.%d.%d", path, os.Getpid(), n))
			if err != nil {
				logger.Warn("cpu profile", "error", err)
				return
			}
			if err := pprof.StartCPUProfile(f); err != nil {
				logger.Warn("cpu profile", "error", err)
				f.Close()
				return
			}
			time.Sleep(time.Duration(secs) * time.Second)
			pprof.StopCPUProfile()
			f.Close()
		}
	}()
}

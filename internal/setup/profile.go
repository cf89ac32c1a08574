package setup

import (
	"fmt"
	"log/slog"
	"os"
	"runtime/pprof"
	"strconv"
	"time"
)

// profileCPU writes a CPU profile of this process to EnvCPUProfile's path
// plus the process id, covering the first EnvCPUProfileSeconds (30)
// seconds. A local switch for finding what a request costs: the CDK app
// never sets it, and it is off when the variable is empty.
func profileCPU(logger *slog.Logger, getenv func(string) string) {
	path := getenv(EnvCPUProfile)
	if path == "" {
		return
	}
	secs, err := strconv.Atoi(getenv(EnvCPUProfileSeconds))
	if err != nil || secs <= 0 {
		secs = 30
	}
	f, err := os.Create(fmt.Sprintf("%s.%d", path, os.Getpid()))
	if err != nil {
		logger.Warn("cpu profile", "error", err)
		return
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		logger.Warn("cpu profile", "error", err)
		f.Close()
		return
	}
	go func() {
		time.Sleep(time.Duration(secs) * time.Second)
		pprof.StopCPUProfile()
		f.Close()
	}()
}

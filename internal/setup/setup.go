// Package setup is what every function process does at start-up, whatever
// it serves: its main (Main: the processors, the logger, profiling),
// tracing, the AWS SDK's configuration, and the readers of its environment
// (the variables' names are deploy's Env* constants), each value read once
// and every bad one an error naming its variable. Each function's own
// configuration sits beside its main; the charging functions' shared one is
// package charging. The CDK app never links it.
package setup

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/idempotent-payments/idempay/internal/deploy"
	"github.com/idempotent-payments/idempay/internal/obs"
)

// RegionOf is the region a function calls its own: IDEMPAY_REGION where a
// local stack plays one of several regions, else AWS_REGION, which Lambda
// sets; an error when neither is set.
func RegionOf(getenv func(string) string) (string, error) {
	if r := cmp.Or(getenv(deploy.EnvLocalRegion), getenv(deploy.EnvRegion)); r != "" {
		return r, nil
	}
	return "", fmt.Errorf("%s is required", deploy.EnvRegion)
}

// MultiRegionOf is the function's region (RegionOf) when TABLE_MODE is the
// multi-region mode, and empty in one region.
func MultiRegionOf(getenv func(string) string) (string, error) {
	mode, err := TableModeOf(getenv)
	if err != nil || mode != deploy.MultiRegionStrong {
		return "", err
	}
	return RegionOf(getenv)
}

// AWS loads the SDK's default configuration: credentials and region from
// the environment, endpoints from AWS_ENDPOINT_URL_* when set (locally).
func AWS(ctx context.Context) (aws.Config, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return aws.Config{}, fmt.Errorf("load AWS config: %w", err)
	}
	return cfg, nil
}

// Require returns the value of the environment variable name, or an error
// naming it when it is empty.
func Require(getenv func(string) string, name string) (string, error) {
	v := getenv(name)
	if v == "" {
		return "", fmt.Errorf("%s is required", name)
	}
	return v, nil
}

// PositiveInt is the positive integer in the variable name, def when it
// is unset, or an error naming it.
func PositiveInt(getenv func(string) string, name string, def int) (int, error) {
	v := getenv(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%s=%q: want a positive integer", name, v)
	}
	return n, nil
}

// Boolean is the variable name, "true" or "false"; unset is false.
func Boolean(getenv func(string) string, name string) (bool, error) {
	switch v := getenv(name); v {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	default:
		return false, fmt.Errorf("%s=%q: want true or false", name, v)
	}
}

// Duration is the positive duration in the variable name ("5s"), def
// when it is unset, or an error naming it.
func Duration(getenv func(string) string, name string, def time.Duration) (time.Duration, error) {
	v := getenv(name)
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s=%q: want a positive duration such as 5s", name, v)
	}
	return d, nil
}

// TableModeOf is TABLE_MODE, deploy.SingleRegion when unset; any other
// value than the modes is refused.
func TableModeOf(getenv func(string) string) (deploy.TableMode, error) {
	switch m := deploy.TableMode(getenv(deploy.EnvTableMode)); m {
	case "":
		return deploy.SingleRegion, nil
	case deploy.SingleRegion, deploy.MultiRegionStrong:
		return m, nil
	default:
		return "", fmt.Errorf("%s=%q: want %s or %s", deploy.EnvTableMode, m, deploy.SingleRegion, deploy.MultiRegionStrong)
	}
}

// EnvironmentOf is ENVIRONMENT, the metrics' Environment dimension
// ("local" when unset).
func EnvironmentOf(getenv func(string) string) string {
	return cmp.Or(getenv(deploy.EnvEnvironment), "local")
}

// LogLevel is Lambda's AWS_LAMBDA_LOG_LEVEL (set by its advanced logging
// controls), else LOG_LEVEL, else INFO.
func LogLevel(getenv func(string) string) string {
	return cmp.Or(getenv(deploy.EnvLambdaLogLevel), cmp.Or(getenv(deploy.EnvLogLevel), "INFO"))
}

// Processors is how many threads run Go code at once in a function
// process: 1, or 0 (leave Go's reading alone) when the GOMAXPROCS variable
// is set. An execution environment serves one invocation at a time, and
// below 1,769 MB Lambda gives it less than one vCPU; its work, the
// consumer's five concurrent messages too, waits on the network. A second
// processor buys it no parallelism, only the scheduler's spinning and futex
// wake-ups between the handler, net/http's read and write loops and the
// poller (docs/measurements.md has the figures, from
// BenchmarkFunctionCPU). A function given more memory and parallel work of
// its own sets the variable.
func Processors(getenv func(string) string) int {
	if getenv(deploy.EnvGOMAXPROCS) != "" {
		return 0
	}
	return 1
}

// Main is every function's main: GOMAXPROCS at Processors, the JSON logger
// at LogLevel, then run, which builds the function and serves invocations;
// a start-up failure is logged once and exits 1.
func Main(run func(logger *slog.Logger) error) {
	if n := Processors(os.Getenv); n > 0 {
		runtime.GOMAXPROCS(n)
	}
	logger := obs.NewLogger(os.Stdout, LogLevel(os.Getenv))
	defer profileCPU(logger, os.Getenv)()
	if err := run(logger); err != nil {
		logger.Error("start-up", "error", err)
		os.Exit(1)
	}
}

// MatchFromEnv reads the daily match's grace (MATCH_GRACE, deploy's by
// default) and whether it matches the current day too (MATCH_TODAY) with
// getenv.
func MatchFromEnv(getenv func(string) string) (deploy.Match, error) {
	grace, err := Duration(getenv, deploy.EnvMatchGrace, deploy.Deployed().Match.Grace)
	if err != nil {
		return deploy.Match{}, err
	}
	today, err := Boolean(getenv, deploy.EnvMatchToday)
	return deploy.Match{Grace: grace, Today: today}, err
}

// LimitHeap sets the Go heap's soft limit to share of the function's
// memory size (AWS_LAMBDA_FUNCTION_MEMORY_SIZE, which Lambda sets and the
// local stack too), so the collector works harder near it rather than
// the environment running out of memory; without the variable it does
// nothing. It returns the limit set, in bytes (0 for none).
func LimitHeap(getenv func(string) string, share float64) int64 {
	mb, err := strconv.Atoi(getenv("AWS_LAMBDA_FUNCTION_MEMORY_SIZE"))
	if err != nil || mb <= 0 {
		return 0
	}
	limit := int64(float64(int64(mb)<<20) * share)
	debug.SetMemoryLimit(limit)
	return limit
}

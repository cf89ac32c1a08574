// Package setup reads a function's configuration from its environment once,
// at start-up (the variables' names are deploy's Env* constants), and
// builds the clients and services from it. The functions' main.go files
// build themselves with it; the local stack and the tools build the same
// DynamoDB client through it. The CDK app never links it.
package setup

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"go.opentelemetry.io/otel/trace"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/deploy"
	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/httpapi"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/obs"
)

// DefaultCacheSize is how many completed records a warm execution
// environment keeps, unless CACHE_SIZE says otherwise.
const DefaultCacheSize = 10000

// Config is everything a function reads from its environment.
type Config struct {
	TableName       string        // TABLE_NAME (required)
	AcquirerURL     string        // ACQUIRER_URL (required)
	AcquirerID      string        // ACQUIRER_ID (required): idem.Protocol.Downstream
	AcquirerAPIKey  string        // ACQUIRER_API_KEY (local runs only)
	AcquirerSecret  string        // ACQUIRER_SECRET_ARN: the credential in Secrets Manager (AWS); wins over ACQUIRER_API_KEY
	AccountClaim    string        // ACCOUNT_CLAIM, default deploy.DefaultAccountClaim
	Retention       time.Duration // RETENTION_DAYS, default idem.DefaultRetention
	LeaseMargin     time.Duration // LEASE_MARGIN, default idem.DefaultLeaseMargin
	InTransitBound  time.Duration // IN_TRANSIT_BOUND, default idem.DefaultInTransitBound
	ClockSkew       time.Duration // CLOCK_SKEW, default idem.DefaultClockSkew
	AcquirerTimeout time.Duration // ACQUIRER_TIMEOUT, default charge.DefaultAcquirerTimeout
	CacheSize       int           // CACHE_SIZE, default DefaultCacheSize completed records
	MaxAmount       int64         // MAX_AMOUNT, default charge.DefaultMaxAmount
	Environment     string        // ENVIRONMENT: the metrics' Environment dimension, default "local"
	// DYNAMODB_SKIP_RESPONSE_CRC32: the table is DynamoDB Local (DynamoDB)
	SkipResponseCRC32 bool
	// Region is the function's region in the multi-region mode
	// (RegionOf), written on the ledger rows it writes; empty in one
	// region (TABLE_MODE).
	Region string
}

// FromEnv reads Config with getenv (os.Getenv in production). Every bad
// value is an error naming its variable.
func FromEnv(getenv func(string) string) (Config, error) {
	c := Config{
		TableName:      getenv(deploy.EnvTableName),
		AcquirerURL:    getenv(deploy.EnvAcquirerURL),
		AcquirerID:     getenv(deploy.EnvAcquirerID),
		AcquirerAPIKey: getenv(deploy.EnvAcquirerAPIKey),
		AcquirerSecret: getenv(deploy.EnvAcquirerSecret),
		AccountClaim:   cmp.Or(getenv(deploy.EnvAccountClaim), deploy.DefaultAccountClaim),
		Environment:    EnvironmentOf(getenv),
	}
	if c.TableName == "" {
		return Config{}, fmt.Errorf("%s is required", deploy.EnvTableName)
	}
	if c.AcquirerURL == "" {
		return Config{}, fmt.Errorf("%s is required", deploy.EnvAcquirerURL)
	}
	if !validAcquirerID(c.AcquirerID) {
		return Config{}, fmt.Errorf("%s=%q: want 1 to 64 lower-case letters, digits, dots and dashes, the same wherever that acquirer is reached (never a URL)", deploy.EnvAcquirerID, c.AcquirerID)
	}
	days, err := positiveInt(getenv, deploy.EnvRetentionDays, int(idem.DefaultRetention/(24*time.Hour)))
	if err != nil {
		return Config{}, err
	}
	c.Retention = time.Duration(days) * 24 * time.Hour
	if c.LeaseMargin, err = duration(getenv, deploy.EnvLeaseMargin, idem.DefaultLeaseMargin); err != nil {
		return Config{}, err
	}
	if c.InTransitBound, err = duration(getenv, deploy.EnvInTransitBound, idem.DefaultInTransitBound); err != nil {
		return Config{}, err
	}
	if c.ClockSkew, err = duration(getenv, deploy.EnvClockSkew, idem.DefaultClockSkew); err != nil {
		return Config{}, err
	}
	if c.AcquirerTimeout, err = duration(getenv, deploy.EnvAcquirerTimeout, charge.DefaultAcquirerTimeout); err != nil {
		return Config{}, err
	}
	if c.AcquirerTimeout >= c.InTransitBound {
		return Config{}, fmt.Errorf("%s (%s) must exceed %s (%s): the acquirer can finish after the client gave up", deploy.EnvInTransitBound, c.InTransitBound, deploy.EnvAcquirerTimeout, c.AcquirerTimeout)
	}
	size, err := positiveInt(getenv, deploy.EnvCacheSize, DefaultCacheSize)
	if err != nil {
		return Config{}, err
	}
	c.CacheSize = size
	maxAmount, err := positiveInt(getenv, deploy.EnvMaxAmount, charge.DefaultMaxAmount)
	if err != nil {
		return Config{}, err
	}
	c.MaxAmount = int64(maxAmount)
	if c.SkipResponseCRC32, err = boolean(getenv, deploy.EnvSkipResponseCRC32); err != nil {
		return Config{}, err
	}
	if c.Region, err = multiRegionOf(getenv); err != nil {
		return Config{}, err
	}
	return c, nil
}

// RegionOf is the region a function calls its own: IDEMPAY_REGION where a
// local stack plays one of several regions, else AWS_REGION, which Lambda
// sets; an error when neither is set.
func RegionOf(getenv func(string) string) (string, error) {
	if r := cmp.Or(getenv(deploy.EnvLocalRegion), getenv(deploy.EnvRegion)); r != "" {
		return r, nil
	}
	return "", fmt.Errorf("%s is required", deploy.EnvRegion)
}

// multiRegionOf is the function's region (RegionOf) when TABLE_MODE is the
// multi-region mode, and empty in one region.
func multiRegionOf(getenv func(string) string) (string, error) {
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

// Charging is what a function that charges (the charge API, the queue
// consumer) builds at start-up.
type Charging struct {
	Config  Config
	AWS     aws.Config
	Service *charge.Service
	// Tracer is nil when tracing is off; call Flush at the end of every
	// invocation either way (Lambda freezes the process after the answer).
	Tracer trace.Tracer
	Flush  func(context.Context)
}

// StartCharging is the start-up both charging functions share, in one
// order: the configuration from getenv, tracing as function, the AWS
// configuration, the charge service.
func StartCharging(ctx context.Context, function string, getenv func(string) string, logger *slog.Logger) (Charging, error) {
	cfg, err := FromEnv(getenv)
	if err != nil {
		return Charging{}, err
	}
	tracer, flush, err := Tracing(ctx, function, getenv)
	if err != nil {
		return Charging{}, err
	}
	if tracer == nil {
		logger.Info("tracing off", "exporter_built", TracingBuilt)
	}
	awsCfg, err := AWS(ctx)
	if err != nil {
		return Charging{}, err
	}
	svc, err := ChargeService(ctx, awsCfg, cfg, logger, tracer)
	if err != nil {
		return Charging{}, err
	}
	return Charging{Config: cfg, AWS: awsCfg, Service: svc, Tracer: tracer, Flush: flush}, nil
}

// ChargeService builds the charge service: the table, opened once (its
// records under the guard, with the protocol of c: T, the skew and the
// acquirer's id; its ledger), and the acquirer client.
func ChargeService(ctx context.Context, awsCfg aws.Config, c Config, logger *slog.Logger, tracer trace.Tracer) (*charge.Service, error) {
	table := dynamo.Open(dynamo.NewClient(awsCfg, c.SkipResponseCRC32), c.TableName)
	guard := idem.NewGuard(table.Store(), idem.Config{
		Retention: c.Retention, LeaseMargin: c.LeaseMargin, CacheSize: c.CacheSize,
		Protocol: idem.Protocol{InTransitBound: c.InTransitBound, ClockSkew: c.ClockSkew, Downstream: c.AcquirerID},
	})
	cred := acquirer.StaticCredential(c.AcquirerAPIKey)
	if c.AcquirerSecret != "" {
		// Read at start-up (a missing secret fails the start), then again
		// every 5 minutes and when the acquirer refuses it (at most every
		// 10 s): a rotation or the first real value takes effect without a
		// restart. The credential never sits in the function's environment.
		sm := secretsmanager.NewFromConfig(awsCfg)
		cred = acquirer.NewCredential(func(ctx context.Context) (string, error) {
			out, err := sm.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(c.AcquirerSecret)})
			if err != nil {
				return "", err
			}
			return aws.ToString(out.SecretString), nil
		}, 0, 0)
		if _, err := cred.Key(ctx); err != nil {
			return nil, err
		}
	}
	acq, err := acquirer.NewClientWithCredential(c.AcquirerURL, cred, nil)
	if err != nil {
		return nil, err
	}
	return charge.NewService(guard, table.Ledger(), acq, httpapi.Render, charge.Config{
		AcquirerTimeout: c.AcquirerTimeout, MaxAmount: c.MaxAmount, Logger: logger, Tracer: tracer, Region: c.Region,
	}), nil
}

// validAcquirerID: a logical name, not an address.
func validAcquirerID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '.' && c != '-' {
			return false
		}
	}
	return true
}

func positiveInt(getenv func(string) string, name string, def int) (int, error) {
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

// boolean reads "true" or "false"; empty is false.
func boolean(getenv func(string) string, name string) (bool, error) {
	switch v := getenv(name); v {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	default:
		return false, fmt.Errorf("%s=%q: want true or false", name, v)
	}
}

func duration(getenv func(string) string, name string, def time.Duration) (time.Duration, error) {
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

// SweeperConfig is the sweeper's environment.
type SweeperConfig struct {
	TableName      string        // TABLE_NAME (required)
	QueueURL       string        // RECONCILE_QUEUE_URL (required): where reconcile commands go
	InTransitBound time.Duration // IN_TRANSIT_BOUND, as the charge functions'
	ClockSkew      time.Duration // CLOCK_SKEW, as the charge functions'
	Environment    string        // ENVIRONMENT, the metrics' dimension ("local")
	// DYNAMODB_SKIP_RESPONSE_CRC32, as the charge functions'
	SkipResponseCRC32 bool
	// PurgeWindow is PURGE_WINDOW (deploy's PurgeWindow) when
	// TABLE_MODE names a mode without TTL, and zero (no purge) when the
	// table deletes by TTL.
	PurgeWindow time.Duration
	// In the multi-region mode (TABLE_MODE), the sweeper beats its region's
	// heartbeat and takes over the events of regions that stopped
	// (publish.TakeOver): Region (RegionOf), the outcome topic
	// (OUTCOME_TOPIC_ARN, required) and StaleRegion (STALE_REGION,
	// deploy's StaleRegion). All empty in one region.
	Region, TopicARN string
	StaleRegion      time.Duration
}

// SweeperFromEnv reads SweeperConfig with getenv.
func SweeperFromEnv(getenv func(string) string) (SweeperConfig, error) {
	var c SweeperConfig
	var err error
	if c.TableName, err = Require(getenv, deploy.EnvTableName); err != nil {
		return SweeperConfig{}, err
	}
	if c.QueueURL, err = Require(getenv, deploy.EnvReconcileQueueURL); err != nil {
		return SweeperConfig{}, err
	}
	if c.InTransitBound, err = duration(getenv, deploy.EnvInTransitBound, idem.DefaultInTransitBound); err != nil {
		return SweeperConfig{}, err
	}
	if c.ClockSkew, err = duration(getenv, deploy.EnvClockSkew, idem.DefaultClockSkew); err != nil {
		return SweeperConfig{}, err
	}
	c.Environment = EnvironmentOf(getenv)
	if c.SkipResponseCRC32, err = boolean(getenv, deploy.EnvSkipResponseCRC32); err != nil {
		return SweeperConfig{}, err
	}
	mode, err := TableModeOf(getenv)
	if err != nil {
		return SweeperConfig{}, err
	}
	if !mode.TTL() {
		if c.PurgeWindow, err = duration(getenv, deploy.EnvPurgeWindow, deploy.Deployed().PurgeWindow); err != nil {
			return SweeperConfig{}, err
		}
	}
	if mode != deploy.MultiRegionStrong {
		return c, nil
	}
	if c.Region, err = RegionOf(getenv); err != nil {
		return SweeperConfig{}, err
	}
	if c.TopicARN, err = Require(getenv, deploy.EnvOutcomeTopicARN); err != nil {
		return SweeperConfig{}, err
	}
	if c.StaleRegion, err = duration(getenv, deploy.EnvStaleRegion, deploy.Deployed().StaleRegion); err != nil {
		return SweeperConfig{}, err
	}
	return c, nil
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
	profileCPU(logger, os.Getenv)
	if err := run(logger); err != nil {
		logger.Error("start-up", "error", err)
		os.Exit(1)
	}
}

// PublisherConfig is the publisher's environment.
type PublisherConfig struct {
	TopicARN    string // OUTCOME_TOPIC_ARN (required)
	Environment string // ENVIRONMENT, the metrics' dimension ("local")
	// TableName (TABLE_NAME), in the multi-region mode (TABLE_MODE), is
	// the table whose rows it marks published (publish.Handler.Books);
	// empty in one region.
	TableName string
	// DYNAMODB_SKIP_RESPONSE_CRC32, as the charge functions'
	SkipResponseCRC32 bool
}

// PublisherFromEnv reads PublisherConfig with getenv.
func PublisherFromEnv(getenv func(string) string) (PublisherConfig, error) {
	c := PublisherConfig{Environment: EnvironmentOf(getenv)}
	var err error
	if c.TopicARN, err = Require(getenv, deploy.EnvOutcomeTopicARN); err != nil {
		return PublisherConfig{}, err
	}
	mode, err := TableModeOf(getenv)
	if err != nil || mode != deploy.MultiRegionStrong {
		return c, err
	}
	if c.TableName, err = Require(getenv, deploy.EnvTableName); err != nil {
		return PublisherConfig{}, err
	}
	if c.SkipResponseCRC32, err = boolean(getenv, deploy.EnvSkipResponseCRC32); err != nil {
		return PublisherConfig{}, err
	}
	return c, nil
}

// Package charging builds, from a function's environment, the charge
// and refund services the charging functions serve (the charge API, the queue
// consumer and reconciler, the operator's channel): the table opened once,
// the guard with the deployment's protocol, the acquirer client with its
// credential, and the stored answers' rendering.
package charging

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"go.opentelemetry.io/otel/trace"

	"github.com/idempotent-payments/idempay/internal/acquirer/acquirerhttp"
	"github.com/idempotent-payments/idempay/internal/capture"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/deploy"
	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/httpapi"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/refund"
	"github.com/idempotent-payments/idempay/internal/setup"
)

// DefaultCacheSize is how many completed records a warm execution
// environment keeps, unless CACHE_SIZE says otherwise.
const DefaultCacheSize = 10000

// Config is everything a charging function reads from its environment.
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
	// AUTHORIZATION_WINDOW, default charge.DefaultAuthorizationWindow
	AuthorizationWindow time.Duration
	Environment         string // ENVIRONMENT: the metrics' Environment dimension, default "local"
	// DYNAMODB_SKIP_RESPONSE_CRC32: the table is DynamoDB Local (DynamoDB)
	SkipResponseCRC32 bool
	// Region is the function's region in the multi-region mode
	// (setup.MultiRegionOf), written on the ledger rows it writes; empty in one
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
		Environment:    setup.EnvironmentOf(getenv),
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
	days, err := setup.PositiveInt(getenv, deploy.EnvRetentionDays, int(idem.DefaultRetention/(24*time.Hour)))
	if err != nil {
		return Config{}, err
	}
	c.Retention = time.Duration(days) * 24 * time.Hour
	if c.LeaseMargin, err = setup.Duration(getenv, deploy.EnvLeaseMargin, idem.DefaultLeaseMargin); err != nil {
		return Config{}, err
	}
	if c.InTransitBound, err = setup.Duration(getenv, deploy.EnvInTransitBound, idem.DefaultInTransitBound); err != nil {
		return Config{}, err
	}
	if c.ClockSkew, err = setup.Duration(getenv, deploy.EnvClockSkew, idem.DefaultClockSkew); err != nil {
		return Config{}, err
	}
	if c.AcquirerTimeout, err = setup.Duration(getenv, deploy.EnvAcquirerTimeout, charge.DefaultAcquirerTimeout); err != nil {
		return Config{}, err
	}
	if c.AcquirerTimeout >= c.InTransitBound {
		return Config{}, fmt.Errorf("%s (%s) must exceed %s (%s): the acquirer can finish after the client gave up", deploy.EnvInTransitBound, c.InTransitBound, deploy.EnvAcquirerTimeout, c.AcquirerTimeout)
	}
	size, err := setup.PositiveInt(getenv, deploy.EnvCacheSize, DefaultCacheSize)
	if err != nil {
		return Config{}, err
	}
	c.CacheSize = size
	maxAmount, err := setup.PositiveInt(getenv, deploy.EnvMaxAmount, charge.DefaultMaxAmount)
	if err != nil {
		return Config{}, err
	}
	c.MaxAmount = int64(maxAmount)
	if c.AuthorizationWindow, err = setup.Duration(getenv, deploy.EnvAuthWindow, charge.DefaultAuthorizationWindow); err != nil {
		return Config{}, err
	}
	if c.SkipResponseCRC32, err = setup.Boolean(getenv, deploy.EnvSkipResponseCRC32); err != nil {
		return Config{}, err
	}
	if c.Region, err = setup.MultiRegionOf(getenv); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Charging is what a function that charges builds at start-up.
type Charging struct {
	Config  Config
	AWS     aws.Config
	Service *charge.Service
	Refunds *refund.Service
	// Captures serves the captures and the voids.
	Captures *capture.Service
	// Operations are every service as the operator's channel and the
	// reconciler reach them, by their records' keys.
	Operations *op.Registry
	// Tracer is nil when tracing is off; call Flush at the end of every
	// invocation either way (Lambda freezes the process after the answer).
	Tracer trace.Tracer
	Flush  func(context.Context)
}

// Start is the start-up the charging functions share, in one
// order: the configuration from getenv, tracing as function, the AWS
// configuration, the charge service.
func Start(ctx context.Context, function string, getenv func(string) string, logger *slog.Logger) (Charging, error) {
	cfg, err := FromEnv(getenv)
	if err != nil {
		return Charging{}, err
	}
	tracer, flush, err := setup.Tracing(ctx, function, getenv)
	if err != nil {
		return Charging{}, err
	}
	if tracer == nil {
		logger.Info("tracing off", "exporter_built", setup.TracingBuilt)
	}
	awsCfg, err := setup.AWS(ctx)
	if err != nil {
		return Charging{}, err
	}
	svc, refunds, captures, err := Services(ctx, awsCfg, cfg, logger, tracer)
	if err != nil {
		return Charging{}, err
	}
	return Charging{Config: cfg, AWS: awsCfg, Service: svc, Refunds: refunds, Captures: captures,
		Operations: op.NewRegistry(svc.Operation(), refunds.Operation(), captures.CaptureOperation(), captures.VoidOperation()),
		Tracer:     tracer, Flush: flush}, nil
}

// Services builds the charge, the refund and the capture services: the
// table, opened once (its records under one guard, with the protocol of
// c: T, the skew and the acquirer's id; its ledger, its balances and its
// rows), and one acquirer client.
func Services(ctx context.Context, awsCfg aws.Config, c Config, logger *slog.Logger, tracer trace.Tracer) (*charge.Service, *refund.Service, *capture.Service, error) {
	table := dynamo.Open(dynamo.NewClient(awsCfg, c.SkipResponseCRC32), c.TableName)
	guard := idem.NewGuard(table.Store(), idem.Config{
		Retention: c.Retention, LeaseMargin: c.LeaseMargin, CacheSize: c.CacheSize,
		Protocol: idem.Protocol{InTransitBound: c.InTransitBound, ClockSkew: c.ClockSkew, Downstream: c.AcquirerID},
	})
	acq, err := Acquirer(ctx, awsCfg, c)
	if err != nil {
		return nil, nil, nil, err
	}
	svcCfg := charge.Config{AcquirerTimeout: c.AcquirerTimeout, MaxAmount: c.MaxAmount, AuthorizationWindow: c.AuthorizationWindow, Logger: logger, Tracer: setup.Spans(tracer), Region: c.Region}
	charges := charge.NewService(guard, table.Ledger(), acq, httpapi.Render, svcCfg)
	refunds := refund.NewService(guard, charges, table.Balances(), table.Refunds(), acq, httpapi.RenderRefund, svcCfg)
	captures := capture.NewService(guard, charges, table.Captures(), table.CaptureRows(), table.VoidRows(), acq, httpapi.RenderCapture, svcCfg)
	return charges, refunds, captures, nil
}

// Acquirer is the acquirer's client of c: its URL, and its credential
// from Secrets Manager (ACQUIRER_SECRET_ARN) or, locally, the key itself.
func Acquirer(ctx context.Context, awsCfg aws.Config, c Config) (*acquirerhttp.Client, error) {
	cred := acquirerhttp.StaticCredential(c.AcquirerAPIKey)
	if c.AcquirerSecret != "" {
		// Read at start-up (a missing secret fails the start), then again
		// every 5 minutes and when the acquirer refuses it (at most every
		// 10 s): a rotation or the first real value takes effect without a
		// restart. The credential never sits in the function's environment.
		sm := secretsmanager.NewFromConfig(awsCfg)
		cred = acquirerhttp.NewCredential(func(ctx context.Context) (string, error) {
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
	return acquirerhttp.NewClientWithCredential(c.AcquirerURL, cred, nil)
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

package main

import (
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/queue"
)

// Function timeouts, in seconds, and the protocol's times. A lease is the
// invocation deadline plus LEASE_MARGIN, so a dead worker's key can be
// taken over at most timeout + margin later. The times are the code's
// compiled defaults, which an operator's tool (idemctl) uses where a
// record carries none: TestProtocolDefaults holds the deployed values to
// them.
const (
	chargeTimeout   = 10
	consumerTimeout = 30 // command.ConsumerTimeout, which idemctl reads; TestRedriveArithmetic holds them equal
	sweeperTimeout  = 55 // inside the 1-minute schedule
	leaseMargin     = idem.DefaultLeaseMargin
	inTransitBound  = idem.DefaultInTransitBound
	acquirerTimeout = charge.DefaultAcquirerTimeout
	clockSkew       = idem.DefaultClockSkew
	tableName       = "idempay"
)

// Redrive (queue.MaxReceiveCount and its parts, README "Redrive") and the
// queues' visibility timeout.
const (
	maxReceiveCount = queue.MaxReceiveCount
	// visibilityTimeout is AWS's rule for SQS event sources: at least 6 ×
	// the consumer's timeout.
	visibilityTimeout = 6 * consumerTimeout
)

// Producer is one sender of charge commands: it gets a queue of its own,
// which only its role may send to, and may charge only Accounts.
type Producer struct {
	// Name is lower-case letters, digits and dashes; it names the queue and
	// the role.
	Name     string
	Accounts []string
	// AssumedBy is the ARN of the principal (a role, in this or another AWS
	// account) that may assume the producer's role. Empty: any principal of
	// the deploying account whose own policy allows sts:AssumeRole on it.
	// Set it in every real environment.
	AssumedBy string
}

// Config is one environment's settings. Every deployable difference between
// dev, staging and prod is a field here, nowhere else.
type Config struct {
	// Name is the environment: dev, staging or prod.
	Name string
	// RetentionDays is how long an idempotency key is remembered.
	RetentionDays int
	// JWTIssuer and JWTAudience configure the API's JWT authorizer: the
	// issuer URL of the IdP whose RS256 tokens it verifies (its JWKS is
	// found from there) and the audience those tokens carry. They are the
	// deployer's, never defaults: ConfigFor requires them.
	JWTIssuer, JWTAudience string
	// AccountClaim names the token claim that is the account.
	AccountClaim string
	// AcquirerURL is the acquirer's base URL; its credential lives in
	// Secrets Manager (the stack creates the secret; fill it after deploy).
	AcquirerURL string
	// AcquirerID is the acquirer's logical id, stored on every record and
	// the same in every environment and region that talks to that acquirer
	// (a test endpoint is another acquirer): only a function or an
	// operator's tool configured with the record's id resolves it.
	AcquirerID string
	// LogRetentionDays of every log group (a value CloudWatch accepts).
	LogRetentionDays int
	// Retain keeps the table, queues, secret and logs when the stack is
	// deleted, and turns on the table's deletion protection.
	Retain bool
	// ChargeReservedConcurrency caps concurrent charges, protecting the
	// acquirer (0: no reservation). An input in staging and prod: the
	// account's concurrency quota must exceed it by at least 100.
	ChargeReservedConcurrency int
	// ChargeP99 is the charge function's p99 duration the throttle is sized
	// for: ThrottleRate ≤ ChargeReservedConcurrency ÷ ChargeP99, so overload
	// is answered 429 at the stage before Lambda throttles (which surface as
	// 5xx).
	ChargeP99 time.Duration
	// ConsumerMaxConcurrency caps the event source mapping (2–1000).
	ConsumerMaxConcurrency int
	// ThrottleRate and ThrottleBurst of the API's default stage (inputs in
	// staging and prod; with a reservation, the burst is at most it).
	ThrottleRate  float64
	ThrottleBurst int
	// Alarm thresholds per 5 minutes: charges left pending (and acquirer
	// errors), and throttles of any function.
	AlarmPendingPer5Min, AlarmThrottlesPer5Min int
	// AlarmEmails subscribe to the alarm topic (an input, required in
	// staging and prod: an alarm that reaches no one is no alarm).
	AlarmEmails []string
	// TableWarmWrites and IndexWarmWrites pre-warm the on-demand table and
	// its in-flight index (write units per second; 0: DynamoDB's default,
	// 4,000 for a new table). A charge writes 3 units to the table (the
	// claim, the ledger row, the completion; each item under 1 KB) and 2 to
	// the index (the entry in, the entry out), so the design's 5,000
	// charges/s need 15,000 and 10,000; prod pre-warms the table to 25,000,
	// headroom for retries and storms of replays (1 unit each). (Serving
	// that rate takes a reservation of 2,500 at a p99 of 0.5 s: the
	// throttle rule.)
	TableWarmWrites, IndexWarmWrites int
	// Tracing deploys the functions' spans: the ADOT collector layer (its
	// ARN per region from CDK's table, pinned to collectorLayer), an OTLP
	// endpoint on it, X-Ray. It must match the build: `make deploy
	// TRACING=1` builds with the OTLP exporter and passes this input.
	Tracing bool
	// Producers may put charge commands on the queue path, each for its own
	// accounts. The accounts here are examples: list your producers and the
	// accounts each may charge.
	Producers []Producer
}

// Environments lists the known environment names.
var Environments = []string{"dev", "staging", "prod"}

// Inputs are the CDK context keys (cdk -c key=value; `make synth` passes
// JWT_ISSUER, JWT_AUDIENCE, ALARM_EMAILS, RESERVED_CONCURRENCY,
// THROTTLE_RATE and THROTTLE_BURST as them). The JWT pair is required in
// every environment, the rest in staging and prod (dev: no alarm
// subscriber, no reservation, 50 requests/s with bursts of 100).
const (
	InputJWTIssuer           = "jwtIssuer"
	InputJWTAudience         = "jwtAudience"
	InputAlarmEmails         = "alarmEmails" // comma-separated
	InputReservedConcurrency = "reservedConcurrency"
	InputThrottleRate        = "throttleRate"
	InputThrottleBurst       = "throttleBurst"
	InputTracing             = "tracing" // "1": the build has the OTLP exporter (TRACING=1)
)

// collectorLayer is the tracing build's collector: the ADOT collector
// Lambda layer at this version; CDK resolves its ARN for the stack's region
// and arm64.
var collectorLayer = awslambda.AdotLambdaLayerGenericVersion_V0_115_0()

// chargeP99 is the charge function's p99 duration the throttle is sized
// for: an assumption until measured (the function's Duration p99 in
// CloudWatch); change it here when yours differs.
const chargeP99 = 500 * time.Millisecond

// ConfigFor returns the settings of environment name. input reads the
// deployer's inputs (the CDK context); the JWT issuer (an https URL) and
// audience are required in every environment, so a stack can never deploy
// an authorizer that trusts a placeholder and answers 401 to everyone.
func ConfigFor(name string, input func(key string) string) (Config, error) {
	base := Config{
		Name: name, RetentionDays: 90, AccountClaim: "sub",
		JWTIssuer: input(InputJWTIssuer), JWTAudience: input(InputJWTAudience),
		AcquirerURL: "https://sandbox.acquirer.example.com", AcquirerID: "example-acquirer-sandbox", LogRetentionDays: 14,
		ConsumerMaxConcurrency: 5, ThrottleRate: 50, ThrottleBurst: 100, ChargeP99: chargeP99,
		AlarmPendingPer5Min: 10, AlarmThrottlesPer5Min: 10,
	}
	switch name {
	case "dev":
		base.RetentionDays = 7
		base.Producers = []Producer{{Name: "orders", Accounts: []string{"acct_demo", "acct_dev_orders"}}}
	case "staging":
		base.LogRetentionDays = 30
		base.Producers = []Producer{{Name: "orders", Accounts: []string{"acct_staging_orders"}}}
	case "prod":
		base.Producers = []Producer{{Name: "orders", Accounts: []string{"acct_orders"}}, {Name: "billing", Accounts: []string{"acct_billing"}}}
		base.AcquirerURL, base.AcquirerID = "https://api.acquirer.example.com", "example-acquirer"
		base.LogRetentionDays = 365
		base.Retain = true
		base.ConsumerMaxConcurrency = 20
		base.TableWarmWrites, base.IndexWarmWrites = 25000, 10000
		base.AlarmPendingPer5Min, base.AlarmThrottlesPer5Min = 5, 1
	default:
		return Config{}, fmt.Errorf("environment %q: want one of %v", name, Environments)
	}
	if err := base.checkProducers(); err != nil {
		return Config{}, fmt.Errorf("environment %s: %w", name, err)
	}
	if err := base.checkJWT(); err != nil {
		return Config{}, fmt.Errorf("environment %s: %w (make synth ENV=%s JWT_ISSUER=https://your-idp/ JWT_AUDIENCE=your-api, or cdk -c %s=... -c %s=...)",
			name, err, name, InputJWTIssuer, InputJWTAudience)
	}
	switch v := input(InputTracing); v {
	case "", "0":
	case "1":
		base.Tracing = true
	default:
		return Config{}, fmt.Errorf("environment %s: input %s=%q: want 1 or nothing", name, InputTracing, v)
	}
	if err := base.readCapacity(input, name != "dev"); err != nil {
		return Config{}, fmt.Errorf("environment %s: %w", name, err)
	}
	return base, nil
}

func (c Config) checkJWT() error {
	u, err := url.Parse(c.JWTIssuer)
	switch {
	case c.JWTIssuer == "":
		return fmt.Errorf("the JWT issuer is required")
	case err != nil || u.Scheme != "https" || u.Host == "":
		return fmt.Errorf("the JWT issuer %q must be an https URL", c.JWTIssuer)
	case c.JWTAudience == "":
		return fmt.Errorf("the JWT audience is required")
	case strings.ContainsFunc(c.JWTAudience, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return fmt.Errorf("the JWT audience %q holds white space or a control character", c.JWTAudience)
	}
	return nil
}

var producerName = regexp.MustCompile(`^[a-z][a-z0-9-]{0,31}$`)

// checkProducers: at least one, each named once and validly, each with at
// least one valid account.
func (c Config) checkProducers() error {
	if len(c.Producers) == 0 {
		return fmt.Errorf("no producer: the queue path needs at least one")
	}
	seen := map[string]bool{}
	for _, p := range c.Producers {
		switch {
		case !producerName.MatchString(p.Name):
			return fmt.Errorf("producer %q: want lower-case letters, digits and dashes, starting with a letter", p.Name)
		case seen[p.Name]:
			return fmt.Errorf("producer %q listed twice", p.Name)
		case len(p.Accounts) == 0:
			return fmt.Errorf("producer %s may charge no account", p.Name)
		case p.AssumedBy != "" && !strings.HasPrefix(p.AssumedBy, "arn:"):
			return fmt.Errorf("producer %s: AssumedBy %q is not an ARN", p.Name, p.AssumedBy)
		}
		for _, a := range p.Accounts {
			if err := idem.ValidateAccount(a); err != nil {
				return fmt.Errorf("producer %s: %w", p.Name, err)
			}
		}
		seen[p.Name] = true
	}
	return nil
}

// readCapacity reads the alarm subscribers, the reservation and the stage
// throttle from the inputs (each required when required) and checks that
// the throttle fits the reservation.
func (c *Config) readCapacity(input func(string) string, required bool) error {
	missing := func(key, env string) error {
		return fmt.Errorf("input %s is required here (make synth ... %s=..., or cdk -c %s=...)", key, env, key)
	}
	if v := input(InputAlarmEmails); v != "" {
		for _, e := range strings.Split(v, ",") {
			if e = strings.TrimSpace(e); !strings.Contains(e, "@") || strings.ContainsAny(e, " \t") {
				return fmt.Errorf("alarm email %q is not an address", e)
			}
			c.AlarmEmails = append(c.AlarmEmails, strings.TrimSpace(e))
		}
	} else if required {
		return missing(InputAlarmEmails, "ALARM_EMAILS")
	}
	for _, in := range []struct {
		key, env string
		set      func(float64)
		integer  bool
	}{
		{InputReservedConcurrency, "RESERVED_CONCURRENCY", func(f float64) { c.ChargeReservedConcurrency = int(f) }, true},
		{InputThrottleRate, "THROTTLE_RATE", func(f float64) { c.ThrottleRate = f }, false},
		{InputThrottleBurst, "THROTTLE_BURST", func(f float64) { c.ThrottleBurst = int(f) }, true},
	} {
		v := input(in.key)
		if v == "" {
			if required {
				return missing(in.key, in.env)
			}
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || (in.integer && f != float64(int(f))) || (in.key != InputReservedConcurrency && f == 0) {
			return fmt.Errorf("input %s=%q: want a positive number%s", in.key, v, map[bool]string{true: " (whole)"}[in.integer])
		}
		in.set(f)
	}
	if n := c.ChargeReservedConcurrency; n > 0 {
		if most := float64(n) / c.ChargeP99.Seconds(); c.ThrottleRate > most {
			return fmt.Errorf("throttle rate %g/s exceeds what %d reserved charge functions serve at a p99 of %s (%g/s): overload would be Lambda throttles (5xx), not 429",
				c.ThrottleRate, n, c.ChargeP99, most)
		}
		if c.ThrottleBurst > n {
			return fmt.Errorf("throttle burst %d exceeds the %d reserved charge functions", c.ThrottleBurst, n)
		}
	}
	return nil
}

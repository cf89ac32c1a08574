package main

import (
	"cmp"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2/regioninfo"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-payments/idempay/internal/deploy"
	"github.com/idempotent-payments/idempay/internal/event"
	"github.com/idempotent-payments/idempay/internal/idem"
)

// deployed is the system as every environment deploys it
// (internal/deploy): its functions and their timeouts, its queues' times
// and the protocol's times, the compiled defaults an operator's tool uses
// where a record carries none (TestProtocolDefaults).
var deployed = deploy.Deployed()

// timeoutOf is the timeout of the function named name, in seconds.
func timeoutOf(name string) float64 { return deployed.Function(name).Timeout.Seconds() }

// tableName is the table's name in every environment, less its prefix.
const tableName = "idempay"

// Producer is one sender of charge commands: it gets a queue of its own,
// which only its role may send to, and may charge only Accounts.
type Producer struct {
	// Name is lower-case letters, digits and dashes; it names the queue and
	// the role.
	Name     string
	Accounts []string
	// AssumedBy is the ARN of the IAM role or user (in this or another AWS
	// account) that may assume the producer's role: the input
	// producerPrincipals. Required in staging and prod, where an account's
	// root is refused. Empty, in dev only: the deploying account's root,
	// that is any principal of that account whose own policy allows
	// sts:AssumeRole on the role (synthesis warns).
	AssumedBy string
}

// Config is one environment's settings. Every deployable difference between
// dev, staging, prod and global is a field here, nowhere else.
type Config struct {
	// Name is the environment: dev, staging, prod or global.
	Name string
	// Account and Region are where the stack deploys, explicit so that
	// region-dependent lookups (the collector layer) resolve at synthesis:
	// the inputs account and region, or the CDK CLI's CDK_DEFAULT_ACCOUNT
	// and CDK_DEFAULT_REGION (the deploying shell's credentials). In the
	// multi-region mode Region is the region of one stack (inRegion).
	Account, Region string
	// Regions are where the environment runs, one stack each: the input
	// regions (the first is where the table is created), or Region alone.
	Regions []string
	// WitnessRegion is the multi-region table's witness when it has two
	// replicas: a region that takes part in every write's quorum and holds
	// no replica, so no stack deploys there.
	WitnessRegion string
	// Table is the table's mode: SingleRegion with one region,
	// MultiRegionStrong with more (readRegions).
	Table deploy.TableMode
	// DomainName is the name clients reach the API at in the multi-region
	// mode, routed to the nearest healthy region by latency records in the
	// Route 53 hosted zone HostedZoneID, named HostedZoneName.
	DomainName, HostedZoneID, HostedZoneName string
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
	// MatchAt is when the daily match runs, after midnight UTC, to the
	// minute (deploy's Match.At unless the environment sets it): once the
	// acquirer's report of the day before is complete.
	MatchAt time.Duration
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
	// 4,000 for a new table). Prod and global derive them from their
	// capacity inputs (warmWrites), never below what they already deploy
	// (deployedWarm).
	TableWarmWrites, IndexWarmWrites int
	// CollectorLayerARN is the tracing collector layer for Region: CDK's
	// table of the ADOT layer's ARNs (collectorLayer), or the input
	// collectorLayerArn. Synthesis with tracing fails in a region that has
	// neither.
	CollectorLayerARN string
	// Tracing deploys the functions' spans: the ADOT collector layer (its
	// ARN per region from CDK's table, pinned to collectorLayer), an OTLP
	// endpoint on it, X-Ray. It must match the build: `make deploy
	// TRACING=1` builds with the OTLP exporter and passes this input.
	Tracing bool
	// Producers may put charge commands on the queue path, each for its own
	// accounts. The accounts here are examples: list your producers and the
	// accounts each may charge.
	Producers []Producer
	// OperatorPrincipal is the principal that may assume the operator's
	// role (an IAM role or user, such as an SSO permission set's role):
	// input operatorPrincipal, required in staging and prod. Empty in dev:
	// the role then trusts the account, and synthesis warns.
	OperatorPrincipal string
}

// Environments lists the known environment names: global is multi-region
// (multiRegionOnly), the others single-region (deployedTable).
var Environments = []string{"dev", "staging", "prod", "global"}

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
	// InputAccount and InputRegion place the stack (CDK_DEFAULT_ACCOUNT and
	// CDK_DEFAULT_REGION when absent).
	InputAccount = "account"
	InputRegion  = "region"
	// InputProducerPrincipal plus a producer's name is the principal that
	// may assume that producer's role, an IAM role or user:
	// -c producerPrincipal.orders=arn:aws:iam::111122223333:role/orders
	// (make synth PRODUCER_PRINCIPALS="orders=arn:...").
	InputProducerPrincipal = "producerPrincipal."
	// InputOperatorPrincipal is the principal that may assume the
	// operator's role, the one caller of the operator's channel: an IAM
	// role or user (make synth OPERATOR_PRINCIPAL=arn:...).
	InputOperatorPrincipal = "operatorPrincipal"
	// InputCollectorLayerARN is the tracing collector layer's ARN, for a
	// region CDK's table does not have (single-region only).
	InputCollectorLayerARN = "collectorLayerArn"
	// The multi-region mode (regions.go): InputRegions lists the regions
	// (comma-separated; the first is where the table is created; given, it
	// replaces InputRegion), InputWitnessRegion is the witness of two,
	// InputTableConsistency is "strong" (the default; "eventual" is
	// refused), and the domain inputs name the domain and its Route 53
	// hosted zone.
	InputRegions          = "regions"
	InputWitnessRegion    = "witnessRegion"
	InputTableConsistency = "tableConsistency"
	InputDomainName       = "domainName"
	InputHostedZoneID     = "hostedZoneId"
	InputHostedZoneName   = "hostedZoneName"
)

// collectorLayer is the tracing build's collector, the ADOT collector
// Lambda layer at this version for arm64, as CDK's table of facts per
// region names it (regioninfo).
var collectorLayer = regioninfo.FactName_AdotLambdaLayer(jsii.String("GENERIC"), jsii.String("0.115.0"), jsii.String("arm64"))

// Prod's pre-warmed write throughput (warmWrites): a charge writes 3 units
// to the table (the claim, the ledger row, the completion; each item under
// 1 KB) and 2 to its in-flight index (the entry in, the entry out), at the
// most the HTTP stage throttle lets through plus what the queue consumers
// can take (each producer's mapping and the reconcile queue's:
// ConsumerMaxConcurrency batches of 10 per ChargeP99), twice over for
// retries and storms of replays (1 unit each).
const (
	tableUnitsPerCharge = 3
	indexUnitsPerCharge = 2
	warmHeadroom        = 2
	consumerBatch       = 10
)

// deployedWarm is the warm throughput each environment deploys today.
// DynamoDB refuses a decrease of a table's warm throughput, so a derived
// value below it keeps it; after a deploy raises it, raise it here.
var deployedWarm = map[string]struct{ table, index int }{"prod": {25000, 10000}}

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
		Name: name, RetentionDays: int(deployed.Protocol.Retention / (24 * time.Hour)), AccountClaim: deploy.DefaultAccountClaim,
		JWTIssuer: input(InputJWTIssuer), JWTAudience: input(InputJWTAudience),
		AcquirerURL: "https://sandbox.acquirer.example.com", AcquirerID: "example-acquirer-sandbox", LogRetentionDays: 14,
		ConsumerMaxConcurrency: 5, ThrottleRate: 50, ThrottleBurst: 100, ChargeP99: chargeP99,
		AlarmPendingPer5Min: 10, AlarmThrottlesPer5Min: 10, MatchAt: deployed.Match.At,
	}
	switch name {
	case "dev":
		base.RetentionDays = 7
		base.Producers = []Producer{{Name: "orders", Accounts: []string{"acct_demo", "acct_dev_orders"}}}
	case "staging":
		base.LogRetentionDays = 30
		base.Producers = []Producer{{Name: "orders", Accounts: []string{"acct_staging_orders"}}}
	case "prod", "global": // global: prod's settings, in several regions
		base.Producers = []Producer{{Name: "orders", Accounts: []string{"acct_orders"}}, {Name: "billing", Accounts: []string{"acct_billing"}}}
		base.AcquirerURL, base.AcquirerID = "https://api.acquirer.example.com", "example-acquirer"
		base.LogRetentionDays = 365
		base.Retain = true
		base.ConsumerMaxConcurrency = 20
		base.AlarmPendingPer5Min, base.AlarmThrottlesPer5Min = 5, 1
		base.MatchAt = 4 * time.Hour // the acquirer's settlement report lands after 03:00 UTC
	default:
		return Config{}, fmt.Errorf("environment %q: want one of %v", name, Environments)
	}
	if base.MatchAt < deployed.Match.Grace || base.MatchAt >= 24*time.Hour || base.MatchAt%time.Minute != 0 {
		return Config{}, fmt.Errorf("environment %s: the match's time %s: want a minute of the day, at least its grace (%s) after midnight, "+
			"so that the day before is over", name, base.MatchAt, deployed.Match.Grace)
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
	if name == "prod" || name == "global" {
		base.warmWrites()
	}
	if err := base.readPlacement(input); err != nil {
		return Config{}, fmt.Errorf("environment %s: %w", name, err)
	}
	if err := base.readPrincipals(input, name != "dev"); err != nil {
		return Config{}, fmt.Errorf("environment %s: %w", name, err)
	}
	return base, nil
}

// warmWrites derives the pre-warmed write throughput from the capacity
// inputs, never below what is deployed (deployedWarm).
func (c *Config) warmWrites() {
	mappings := len(c.Producers) + 1
	rate := c.ThrottleRate + float64(mappings*c.ConsumerMaxConcurrency*consumerBatch)/c.ChargeP99.Seconds()
	floor := deployedWarm[c.Name]
	c.TableWarmWrites = max(floor.table, int(math.Ceil(rate*tableUnitsPerCharge*warmHeadroom)))
	c.IndexWarmWrites = max(floor.index, int(math.Ceil(rate*indexUnitsPerCharge*warmHeadroom)))
}

var (
	awsAccount = regexp.MustCompile(`^[0-9]{12}$`)
	awsRegion  = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]$`)
	// principalARN is an IAM role or user, never an account's root.
	principalARN = regexp.MustCompile(`^arn:aws[a-z-]*:iam::[0-9]{12}:(role|user)/[A-Za-z0-9+=,.@_/-]+$`)
)

// readPlacement reads the account and the regions (required) and, with
// tracing, finds the collector layer for each region.
func (c *Config) readPlacement(input func(string) string) error {
	c.Account = input(InputAccount)
	if !awsAccount.MatchString(c.Account) {
		return fmt.Errorf("input %s=%q: want the 12-digit AWS account (or CDK_DEFAULT_ACCOUNT, which the cdk CLI sets from the credentials)", InputAccount, c.Account)
	}
	if err := c.readRegions(input); err != nil {
		return err
	}
	if !c.Tracing {
		return nil
	}
	given := input(InputCollectorLayerARN)
	if given != "" && c.multiRegion() {
		return fmt.Errorf("tracing: input %s names one region's layer; the multi-region mode takes each region's from CDK's table", InputCollectorLayerARN)
	}
	for _, r := range c.Regions {
		if given == "" && !isLayerARN(collectorLayerIn(r)) {
			return fmt.Errorf("tracing: no collector layer for region %s in CDK's table; give its ARN as input %s", r, InputCollectorLayerARN)
		}
	}
	c.CollectorLayerARN = cmp.Or(given, collectorLayerIn(c.Region))
	if !isLayerARN(c.CollectorLayerARN) {
		return fmt.Errorf("tracing: input %s=%q is not a Lambda layer's ARN", InputCollectorLayerARN, c.CollectorLayerARN)
	}
	return nil
}

// collectorLayerIn is the collector layer's ARN for region in CDK's
// table, or "".
func collectorLayerIn(region string) string {
	if arn := regioninfo.Fact_Find(jsii.String(region), collectorLayer); arn != nil {
		return *arn
	}
	return ""
}

func isLayerARN(arn string) bool {
	return strings.HasPrefix(arn, "arn:aws") && strings.Contains(arn, ":layer:")
}

// readPrincipals reads who may assume each producer's role and the
// operator's: required for every one when required, and never an
// account's root.
func (c *Config) readPrincipals(input func(string) string, required bool) error {
	switch arn := input(InputOperatorPrincipal); {
	case arn != "" && !principalARN.MatchString(arn):
		return fmt.Errorf("input %s=%q: want arn:aws:iam::<account>:role/<name> (a role or user, never an account's root)", InputOperatorPrincipal, arn)
	case arn != "":
		c.OperatorPrincipal = arn
	case required:
		return fmt.Errorf("no principal may assume the operator's role (input %s); the account's root is never trusted here", InputOperatorPrincipal)
	}
	for i, p := range c.Producers {
		key := InputProducerPrincipal + p.Name
		switch arn := input(key); {
		case arn != "" && !principalARN.MatchString(arn):
			return fmt.Errorf("input %s=%q: want arn:aws:iam::<account>:role/<name> (a role or user, never an account's root)", key, arn)
		case arn != "":
			c.Producers[i].AssumedBy = arn
		case required && p.AssumedBy == "":
			return fmt.Errorf("producer %s has no principal that may assume its role (input %s); the account's root is never trusted here", p.Name, key)
		}
	}
	return nil
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

// maxProducers: the DLQ's redrive-allow policy names at most 10 source
// queues, the producers' and the reconcile queue.
const maxProducers = 9

// checkProducers: at least one and at most maxProducers, each named once
// and validly, each with at least one valid account.
func (c Config) checkProducers() error {
	if len(c.Producers) == 0 {
		return fmt.Errorf("no producer: the queue path needs at least one")
	}
	if len(c.Producers) > maxProducers {
		return fmt.Errorf("%d producers: the DLQ's redrive-allow policy names at most 10 queues, the reconcile queue and %d producers'", len(c.Producers), maxProducers)
	}
	seen := map[string]bool{}
	for _, p := range c.Producers {
		switch {
		case !producerName.MatchString(p.Name):
			return fmt.Errorf("producer %q: want lower-case letters, digits and dashes, starting with a letter", p.Name)
		case seen[p.Name]:
			return fmt.Errorf("producer %q listed twice", p.Name)
		case p.Name == event.ProducerHTTP:
			return fmt.Errorf("producer %q: the name is the HTTP API's outcome subscriber", p.Name)
		case len(p.Accounts) == 0:
			return fmt.Errorf("producer %s may charge no account", p.Name)
		case p.AssumedBy != "" && !principalARN.MatchString(p.AssumedBy):
			return fmt.Errorf("producer %s: AssumedBy %q is not the ARN of a role or user", p.Name, p.AssumedBy)
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

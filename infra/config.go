package main

import (
	"fmt"
	"net/url"
	"strings"
)

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
	// LogRetentionDays of every log group (a value CloudWatch accepts).
	LogRetentionDays int
	// Retain keeps the table, queues, secret and logs when the stack is
	// deleted, and turns on the table's deletion protection.
	Retain bool
	// ChargeReservedConcurrency caps concurrent charges, protecting the
	// acquirer (0: no reservation).
	ChargeReservedConcurrency int
	// ConsumerMaxConcurrency caps the event source mapping (2–1000).
	ConsumerMaxConcurrency int
	// ThrottleRate and ThrottleBurst of the API's default stage.
	ThrottleRate  float64
	ThrottleBurst int
	// Alarm thresholds: 5xx answers and throttles per 5 minutes.
	Alarm5xxPer5Min, AlarmThrottlesPer5Min int
	// AlarmEmail, when set, subscribes to the alarm topic.
	AlarmEmail string
}

// Environments lists the known environment names.
var Environments = []string{"dev", "staging", "prod"}

// Inputs are the CDK context keys (cdk -c key=value; `make synth` passes
// JWT_ISSUER and JWT_AUDIENCE as them) that every environment requires.
const (
	InputJWTIssuer   = "jwtIssuer"
	InputJWTAudience = "jwtAudience"
)

// ConfigFor returns the settings of environment name. input reads the
// deployer's inputs (the CDK context); the JWT issuer (an https URL) and
// audience are required in every environment, so a stack can never deploy
// an authorizer that trusts a placeholder and answers 401 to everyone.
func ConfigFor(name string, input func(key string) string) (Config, error) {
	base := Config{
		Name: name, RetentionDays: 90, AccountClaim: "sub",
		JWTIssuer: input(InputJWTIssuer), JWTAudience: input(InputJWTAudience),
		AcquirerURL: "https://sandbox.acquirer.example.com", LogRetentionDays: 14,
		ConsumerMaxConcurrency: 5, ThrottleRate: 50, ThrottleBurst: 100,
		Alarm5xxPer5Min: 5, AlarmThrottlesPer5Min: 10,
	}
	switch name {
	case "dev":
		base.RetentionDays = 7
	case "staging":
		base.LogRetentionDays = 30
	case "prod":
		base.AcquirerURL = "https://api.acquirer.example.com"
		base.LogRetentionDays = 365
		base.Retain = true
		base.ChargeReservedConcurrency = 100
		base.ConsumerMaxConcurrency = 20
		base.ThrottleRate, base.ThrottleBurst = 500, 1000
		base.Alarm5xxPer5Min, base.AlarmThrottlesPer5Min = 1, 1
	default:
		return Config{}, fmt.Errorf("environment %q: want one of %v", name, Environments)
	}
	if err := base.checkJWT(); err != nil {
		return Config{}, fmt.Errorf("environment %s: %w (make synth ENV=%s JWT_ISSUER=https://your-idp/ JWT_AUDIENCE=your-api, or cdk -c %s=... -c %s=...)",
			name, err, name, InputJWTIssuer, InputJWTAudience)
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

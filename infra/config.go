package main

import "fmt"

// Config is one environment's settings. Every deployable difference between
// dev, staging and prod is a field here, nowhere else.
type Config struct {
	// Name is the environment: dev, staging or prod.
	Name string
	// RetentionDays is how long an idempotency key is remembered.
	RetentionDays int
	// JWTIssuer and JWTAudience configure the API's JWT authorizer.
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

// ConfigFor returns the settings of environment name.
func ConfigFor(name string) (Config, error) {
	base := Config{
		Name: name, RetentionDays: 90, AccountClaim: "sub",
		JWTIssuer: "https://auth." + name + ".example.com/", JWTAudience: "payments-api",
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
		base.JWTIssuer = "https://auth.example.com/"
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
	return base, nil
}

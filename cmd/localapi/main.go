// Command localapi is `make run`: the charge API on this machine, as it runs
// in AWS. It creates the table in DynamoDB Local (found through
// AWS_ENDPOINT_URL_DYNAMODB), starts the sandbox acquirer, builds the
// functions, runs them under the Lambda Runtime Interface Emulator and serves
// the API Gateway stand-in until interrupted.
//
// Environment: LOCAL_API_ADDR (127.0.0.1:8080), SANDBOX_ADDR (127.0.0.1:8081),
// OPERATOR_ADDR (127.0.0.1:8082, the operator's channel),
// LOCAL_JWT_SECRET (local-dev-secret), LOCAL_JWT_ISSUER (idempay-local),
// LOCAL_JWT_AUDIENCE (idempay-api), TABLE_NAME (idempay-local),
// AWS_LAMBDA_RIE (bin/aws-lambda-rie), LOCAL_INSTANCES (2), LOCAL_MEMORY_MB
// (each function's own memory size: every execution environment runs
// under that size's CPU quota and memory limit where this machine has
// cgroup v1 and runs as root, and on full cores, said at start, where not).
//
// Another acquirer: ACQUIRER_URL names one this command does not start (a
// scripted acquirer, an acquirer's test endpoint speaking the same API),
// with ACQUIRER_ID, its logical id (required then: it is not the
// sandbox), and ACQUIRER_API_KEY, its bearer credential; no sandbox runs.
package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/idempotent-payments/idempay/internal/deploy"
	"github.com/idempotent-payments/idempay/internal/localapi"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "localapi:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	trust := localapi.TrustFromEnv(os.Getenv)
	instances, err := strconv.Atoi(cmp.Or(os.Getenv("LOCAL_INSTANCES"), "2"))
	if err != nil || instances < 1 {
		return fmt.Errorf("LOCAL_INSTANCES=%q: want a positive integer", os.Getenv("LOCAL_INSTANCES"))
	}
	cfg, err := stackConfig(os.Getenv)
	if err != nil {
		return err
	}
	if cfg.MemoryMB, err = localapi.MemoryFromEnv(os.Getenv); err != nil {
		return err
	}
	cfg.Trust, cfg.Instances, cfg.Output, cfg.Shape = trust, instances, os.Stdout, true
	fmt.Println("building the functions for this machine ...")
	if err := localapi.BuildFunctions(ctx, cfg.BinDir, localapi.Functions...); err != nil {
		return err
	}
	stack, err := localapi.StartStack(ctx, cfg)
	if err != nil {
		return err
	}
	acquirerLine := "sandbox acquirer on " + stack.SandboxURL
	if stack.Sandbox == nil {
		acquirerLine = "acquirer " + cfg.AcquirerID + " at " + stack.SandboxURL + ", not started here"
	}
	defer stack.Close()
	shaped := "each execution environment under its memory size's CPU quota and memory limit"
	if cfg.MemoryMB > 0 {
		shaped = fmt.Sprintf("each execution environment under %d MB's CPU quota (%.3f vCPU) and memory limit", cfg.MemoryMB, deploy.CPUShare(cfg.MemoryMB))
	}
	if stack.Unshaped != "" {
		shaped = "unshaped, on full cores: " + stack.Unshaped
	}
	fmt.Println("functions:", shaped)
	token, err := trust.Token("acct_demo", 24*time.Hour)
	if err != nil {
		return err
	}
	fmt.Printf(`
The charge API is up on %s (%s, %d charge instances under the RIE).
Tokens: HS256, iss %q, aud %q (the deployed authorizer checks the IdP's RS256 tokens);
this one carries every scope the API has (%s).
Charge a card; paste it twice to see the replay (Idempotent-Replay: true):

export TOKEN='%s'
curl -i %s/v1/charges \
  -H "Authorization: Bearer $TOKEN" \
  -H 'Idempotency-Key: demo-order-0001' \
  -H 'Content-Type: application/json' \
  -d '{"amount": 25000, "currency": "BRL", "order_id": "123", "payment_method": "pm_card_visa"}'

Then refund part of it, the charge's id from the answer's Location:

curl -i %s/v1/charges/CHARGE_ID/refunds \
  -H "Authorization: Bearer $TOKEN" \
  -H 'Idempotency-Key: demo-refund-0001' \
  -H 'Content-Type: application/json' \
  -d '{"amount": 5000, "reason": "requested_by_customer"}'

Or authorize only, capture part of it, then void what is left (AUTH_ID
from the authorization's Location; each answers as docs/api.md says):

curl -i %s/v1/charges \
  -H "Authorization: Bearer $TOKEN" \
  -H 'Idempotency-Key: demo-authorize-0001' \
  -H 'Content-Type: application/json' \
  -d '{"amount": 25000, "currency": "BRL", "order_id": "124", "payment_method": "pm_card_visa", "capture": false}'
curl -i %s/v1/charges/AUTH_ID/captures \
  -H "Authorization: Bearer $TOKEN" \
  -H 'Idempotency-Key: demo-capture-0001' \
  -H 'Content-Type: application/json' \
  -d '{"amount": 15000, "final": false}'
curl -i %s/v1/charges/AUTH_ID/void \
  -H "Authorization: Bearer $TOKEN" \
  -H 'Idempotency-Key: demo-void-0001' \
  -H 'Content-Type: application/json' \
  -d '{"reason": "abandoned"}'

The SQS path: in another terminal, make send-charge puts a charge command on
the queue of producer %q (%s), which may charge %v; the consumer
refuses any other account (PRODUCER_NOT_ALLOWED). It prints the outcome
event the producer's outcome queue receives, and the lookup by key. The sweeper runs every minute and
sends reconcile commands to a queue of their own.

The operator's channel is %s: the operator function behind a function URL
with AWS_IAM auth, which admits only %s (here, this shell's AWS
credentials). idemctl reaches it as it reaches the deployed one:

eval "$(localstack/emulators.sh env)"; export %s=%s
go run ./cmd/idemctl held

The daily match runs every %s here, over today so far too (deployed, once
a day over the days before): each movement of the sandbox's report of the
day paired with one row, with a grace of %s. Its lines, by UTC day:

go run ./cmd/idemctl match --date "$(date -u +%%F)"

Ctrl-C stops everything this command started.
`, stack.URL, acquirerLine, instances, trust.Issuer, trust.Audience, strings.Join(localapi.Scopes(), ", "), token, stack.URL, stack.URL,
		stack.URL, stack.URL, stack.URL, localapi.DefaultProducers[0].Name, stack.QueueURL, localapi.DefaultProducers[0].Accounts,
		stack.OperatorURL, stack.OperatorPrincipal.ARN, deploy.EnvOperatorURL, stack.OperatorURL,
		deploy.Local().Match.Every, deploy.Local().Match.Grace)
	<-ctx.Done()
	fmt.Println("\nstopping")
	return nil
}

// stackConfig reads the stack's places and its acquirer from getenv.
func stackConfig(getenv func(string) string) (localapi.StackConfig, error) {
	cfg := localapi.StackConfig{
		RIE: cmp.Or(getenv("AWS_LAMBDA_RIE"), filepath.Join("bin", "aws-lambda-rie")), BinDir: filepath.Join("dist", "local"),
		TableName:   cmp.Or(getenv(deploy.EnvTableName), "idempay-local"),
		GatewayAddr: cmp.Or(getenv("LOCAL_API_ADDR"), "127.0.0.1:8080"), SandboxAddr: cmp.Or(getenv("SANDBOX_ADDR"), "127.0.0.1:8081"),
		OperatorAddr: cmp.Or(getenv("OPERATOR_ADDR"), "127.0.0.1:8082"),
		AcquirerURL:  getenv(deploy.EnvAcquirerURL), AcquirerAPIKey: getenv(deploy.EnvAcquirerAPIKey), AcquirerID: getenv(deploy.EnvAcquirerID),
	}
	switch {
	case cfg.AcquirerURL == "" && (cfg.AcquirerID != "" || cfg.AcquirerAPIKey != ""):
		return cfg, fmt.Errorf("%s and %s are for an acquirer at %s; without it the sandbox runs as %q", deploy.EnvAcquirerID, deploy.EnvAcquirerAPIKey, deploy.EnvAcquirerURL, localapi.SandboxAcquirerID)
	case cfg.AcquirerURL != "" && (cfg.AcquirerID == "" || cfg.AcquirerID == localapi.SandboxAcquirerID):
		return cfg, fmt.Errorf("%s=%s needs %s, that acquirer's own logical id (not %q): records remember which acquirer they asked", deploy.EnvAcquirerURL, cfg.AcquirerURL, deploy.EnvAcquirerID, localapi.SandboxAcquirerID)
	}
	return cfg, nil
}

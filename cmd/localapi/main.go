// Command localapi is `make run`: the charge API on this machine, as it runs
// in AWS. It creates the table in DynamoDB Local (found through
// AWS_ENDPOINT_URL_DYNAMODB), starts the sandbox acquirer, builds the
// functions, runs them under the Lambda Runtime Interface Emulator and serves
// the API Gateway stand-in until interrupted.
//
// Environment: LOCAL_API_ADDR (127.0.0.1:8080), SANDBOX_ADDR (127.0.0.1:8081),
// LOCAL_JWT_SECRET (local-dev-secret), LOCAL_JWT_ISSUER (idempay-local),
// LOCAL_JWT_AUDIENCE (idempay-api), TABLE_NAME (idempay-local),
// AWS_LAMBDA_RIE (bin/aws-lambda-rie), LOCAL_INSTANCES (2).
package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/idempotent-payments/idempay/internal/localapi"
	"github.com/idempotent-payments/idempay/internal/setup"
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
	binDir := filepath.Join("dist", "local")
	fmt.Println("building the functions for this machine ...")
	if err := localapi.BuildFunctions(ctx, binDir, "charge", "sqsconsumer", "sweeper"); err != nil {
		return err
	}
	stack, err := localapi.StartStack(ctx, localapi.StackConfig{
		RIE: cmp.Or(os.Getenv("AWS_LAMBDA_RIE"), filepath.Join("bin", "aws-lambda-rie")), BinDir: binDir,
		TableName:   cmp.Or(os.Getenv(setup.EnvTableName), "idempay-local"),
		GatewayAddr: cmp.Or(os.Getenv("LOCAL_API_ADDR"), "127.0.0.1:8080"), SandboxAddr: cmp.Or(os.Getenv("SANDBOX_ADDR"), "127.0.0.1:8081"),
		Trust: trust, Instances: instances, Output: os.Stdout,
	})
	if err != nil {
		return err
	}
	defer stack.Close()
	token, err := trust.Token("acct_demo", 24*time.Hour)
	if err != nil {
		return err
	}
	fmt.Printf(`
The charge API is up on %s (sandbox acquirer on %s, %d charge instances under the RIE).
Tokens: HS256, iss %q, aud %q (the deployed authorizer checks the IdP's RS256 tokens).
Charge a card; paste it twice to see the replay (Idempotent-Replay: true):

curl -i %s/v1/charges \
  -H 'Authorization: Bearer %s' \
  -H 'Idempotency-Key: demo-order-0001' \
  -H 'Content-Type: application/json' \
  -d '{"amount": 25000, "currency": "BRL", "order_id": "123", "payment_method": "pm_card_visa"}'

The SQS path: in another terminal, make send-charge puts a charge command on
the queue of producer %q (%s), which may charge %v; the consumer
refuses any other account (PRODUCER_NOT_ALLOWED). It waits for the consumer
and prints the GET that reads the charge. The sweeper runs every minute and
sends reconcile commands to a queue of their own.

Ctrl-C stops everything this command started.
`, stack.URL, stack.SandboxURL, instances, trust.Issuer, trust.Audience, stack.URL, token,
		localapi.DefaultProducers[0].Name, stack.QueueURL, localapi.DefaultProducers[0].Accounts)
	<-ctx.Done()
	fmt.Println("\nstopping")
	return nil
}

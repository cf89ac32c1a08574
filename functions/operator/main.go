// Command operator is the Lambda function behind the operator's channel: a
// function URL with AWS_IAM auth that only the operator's role may call
// (internal/operator). It is the one place an operator's decision reaches
// the acquirer, with the deployment's acquirer client, credential and
// clock: the operator's tool (idemctl) holds none of them.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/idempotent-payments/idempay/internal/charging"
	"github.com/idempotent-payments/idempay/internal/obs"
	"github.com/idempotent-payments/idempay/internal/operator"
	"github.com/idempotent-payments/idempay/internal/setup"
)

func main() { setup.Main(run) }

// run builds the handler from the environment and serves invocations; it
// returns only when start-up fails.
func run(logger *slog.Logger) error {
	c, err := charging.Start(context.Background(), obs.FunctionOperator, os.Getenv, logger)
	if err != nil {
		return err
	}
	h := &operator.Handler{Operations: c.Operations, Lookup: c.Service.Record, Logger: logger}
	lambda.Start(func(ctx context.Context, ev events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
		defer c.Flush(ctx)
		return h.Handle(ctx, ev)
	})
	return nil
}

// Command charge is the Lambda function behind POST /v1/charges and
// GET /v1/charges/{id} (API Gateway HTTP API, payload v2).
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/idempotent-payments/idempay/internal/obs"
	"github.com/idempotent-payments/idempay/internal/setup"
)

func main() { setup.Main(run) }

// run builds the handler from the environment and serves invocations; it
// returns only when start-up fails.
func run(logger *slog.Logger) error {
	ctx := context.Background()
	cfg, err := setup.FromEnv(os.Getenv)
	if err != nil {
		return err
	}
	tracer, flush, err := setup.Tracing(ctx, obs.FunctionCharge, os.Getenv)
	if err != nil {
		return err
	}
	if tracer == nil {
		logger.Info("tracing off", "exporter_built", setup.TracingBuilt)
	}
	awsCfg, err := setup.AWS(ctx)
	if err != nil {
		return err
	}
	svc, err := setup.ChargeService(ctx, awsCfg, cfg, logger, tracer)
	if err != nil {
		return err
	}
	h := &Handler{Service: svc, AccountClaim: cfg.AccountClaim, Log: logger, Metrics: obs.NewMetrics(os.Stdout, obs.FunctionCharge, cfg.Environment), Tracer: tracer}
	lambda.Start(func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		defer flush(ctx) // Lambda freezes the process after the answer
		return h.Handle(ctx, ev)
	})
	return nil
}

// Command charge is the Lambda function behind POST /v1/charges and
// GET /v1/charges/{id} (API Gateway HTTP API, payload v2).
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/idempotent-payments/idempay/internal/obs"
	"github.com/idempotent-payments/idempay/internal/setup"
)

func main() {
	logger := obs.NewLogger(os.Stdout, setup.LogLevel(os.Getenv))
	cfg, err := setup.FromEnv(os.Getenv)
	if err != nil {
		logger.Error("configuration", "error", err)
		os.Exit(1)
	}
	tracer, flush, err := setup.Tracing(context.Background(), "charge", os.Getenv)
	if err != nil {
		logger.Error("start-up", "error", err)
		os.Exit(1)
	}
	if tracer == nil {
		logger.Info("tracing off", "exporter_built", setup.TracingBuilt)
	}
	awsCfg, err := setup.AWS(context.Background())
	if err != nil {
		logger.Error("start-up", "error", err)
		os.Exit(1)
	}
	svc, err := setup.ChargeService(context.Background(), awsCfg, cfg, logger, tracer)
	if err != nil {
		logger.Error("start-up", "error", err)
		os.Exit(1)
	}
	h := &Handler{Service: svc, AccountClaim: cfg.AccountClaim, Log: logger, Metrics: obs.NewMetrics(os.Stdout, "charge", cfg.Environment), Tracer: tracer}
	lambda.Start(func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		defer flush(ctx) // Lambda freezes the process after the answer
		return h.Handle(ctx, ev)
	})
}

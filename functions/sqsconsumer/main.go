// Command sqsconsumer is the Lambda function on the charge-commands queue:
// charge commands (the same operation and key space as POST /v1/charges)
// and the sweeper's reconcile commands. It reports partial batch failures.
package main

import (
	"context"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/idempotent-payments/idempay/internal/obs"
	"github.com/idempotent-payments/idempay/internal/queue"
	"github.com/idempotent-payments/idempay/internal/setup"
)

func main() {
	logger := obs.NewLogger(os.Stdout, setup.LogLevel(os.Getenv))
	fail := func(err error) {
		logger.Error("start-up", "error", err)
		os.Exit(1)
	}
	cfg, err := setup.FromEnv(os.Getenv)
	if err != nil {
		fail(err)
	}
	queueURL, err := setup.Require(os.Getenv, "QUEUE_URL")
	if err != nil {
		fail(err)
	}
	dlqURL, err := setup.Require(os.Getenv, "DLQ_URL")
	if err != nil {
		fail(err)
	}
	tracer, flush, err := setup.Tracing(context.Background(), "sqsconsumer", os.Getenv)
	if err != nil {
		fail(err)
	}
	if tracer == nil {
		logger.Info("tracing off", "exporter_built", setup.TracingBuilt)
	}
	awsCfg, err := setup.AWS(context.Background())
	if err != nil {
		fail(err)
	}
	svc, err := setup.ChargeService(context.Background(), awsCfg, cfg, logger, tracer)
	if err != nil {
		fail(err)
	}
	sqsClient := sqs.NewFromConfig(awsCfg)
	h := &Handler{
		Service: svc, Commands: queue.New(sqsClient, queueURL), DeadLetters: queue.New(sqsClient, dlqURL),
		Concurrency: 5, Logger: logger, Metrics: obs.NewMetrics(os.Stdout, "sqsconsumer", cfg.Environment),
	}
	lambda.Start(func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		defer flush(ctx)
		return h.Handle(ctx, ev)
	})
}

// Command publisher is the Lambda function on the table's stream: it
// publishes the charge outcome events of the changes it is given (the
// table is the outbox, package outbox) to the outcome topic, which each
// producer's outcome queue subscribes to. In the multi-region mode it
// marks each ledger row published once its event is.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/obs"
	"github.com/idempotent-payments/idempay/internal/publish"
	"github.com/idempotent-payments/idempay/internal/setup"
	"github.com/idempotent-payments/idempay/internal/topic"
)

func main() { setup.Main(run) }

// run builds the publisher from the environment and serves invocations; it
// returns only when start-up fails.
func run(logger *slog.Logger) error {
	cfg, err := configFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	awsCfg, err := setup.AWS(context.Background())
	if err != nil {
		return err
	}
	h := &publish.Handler{
		Topic: topic.New(sns.NewFromConfig(awsCfg), cfg.TopicARN), Logger: logger,
		Metrics: obs.NewMetrics(os.Stdout, obs.FunctionPublisher, cfg.Environment),
	}
	if cfg.TableName != "" {
		h.Books = dynamo.Open(dynamo.NewClient(awsCfg, cfg.SkipResponseCRC32), cfg.TableName).Books()
	}
	lambda.Start(h.Handle)
	return nil
}

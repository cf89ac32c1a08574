// Command sweeper is the scheduled Lambda function (every minute) that flags
// records left in flight longer than the in-transit bound plus the clock-skew
// margin and enqueues their reconciliation. It never calls the acquirer.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/idempotent-payments/idempay/internal/idem/dynamostore"
	"github.com/idempotent-payments/idempay/internal/obs"
	"github.com/idempotent-payments/idempay/internal/queue"
	"github.com/idempotent-payments/idempay/internal/setup"
	"github.com/idempotent-payments/idempay/internal/sweep"
)

func main() { setup.Main(run) }

// run builds the sweeper from the environment and serves invocations; it
// returns only when start-up fails.
func run(logger *slog.Logger) error {
	cfg, err := setup.SweeperFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	awsCfg, err := setup.AWS(context.Background())
	if err != nil {
		return err
	}
	s := sweep.New(
		dynamostore.New(setup.DynamoDB(awsCfg, cfg.SkipResponseCRC32), cfg.TableName),
		queue.New(sqs.NewFromConfig(awsCfg), cfg.QueueURL),
		sweep.Config{InTransitBound: cfg.InTransitBound, ClockSkew: cfg.ClockSkew, PurgeWindow: cfg.PurgeWindow},
	)
	lambda.Start((&Handler{Sweeper: s, Logger: logger, Metrics: obs.NewMetrics(os.Stdout, obs.FunctionSweeper, cfg.Environment)}).Handle)
	return nil
}

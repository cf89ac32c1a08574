// Command sweeper is the scheduled Lambda function (every minute) that flags
// records left in flight longer than the in-transit bound plus the clock-skew
// margin and enqueues their reconciliation. It never calls the acquirer. In
// the multi-region mode it also beats its region's heartbeat and publishes
// the events of regions that stopped (publish.TakeOver).
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/idempotent-payments/idempay/internal/charge/dynamoledger"
	"github.com/idempotent-payments/idempay/internal/idem/dynamostore"
	"github.com/idempotent-payments/idempay/internal/obs"
	"github.com/idempotent-payments/idempay/internal/publish"
	"github.com/idempotent-payments/idempay/internal/queue"
	"github.com/idempotent-payments/idempay/internal/setup"
	"github.com/idempotent-payments/idempay/internal/sweep"
	"github.com/idempotent-payments/idempay/internal/topic"
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
	ddb := dynamostore.NewClient(awsCfg, cfg.SkipResponseCRC32)
	h := &Handler{
		Sweeper: sweep.New(
			dynamostore.New(ddb, cfg.TableName),
			queue.New(sqs.NewFromConfig(awsCfg), cfg.QueueURL),
			sweep.Config{InTransitBound: cfg.InTransitBound, ClockSkew: cfg.ClockSkew, PurgeWindow: cfg.PurgeWindow},
		),
		Logger: logger, Metrics: obs.NewMetrics(os.Stdout, obs.FunctionSweeper, cfg.Environment),
	}
	if cfg.Region != "" {
		h.TakeOver = &publish.TakeOver{
			Region: cfg.Region, Books: dynamoledger.NewPublication(ddb, cfg.TableName), Ledger: dynamoledger.New(ddb, cfg.TableName),
			Topic: topic.New(sns.NewFromConfig(awsCfg), cfg.TopicARN), StaleAfter: cfg.StaleRegion, StopMargin: sweep.DefaultStopMargin,
		}
	}
	lambda.Start(h.Handle)
	return nil
}

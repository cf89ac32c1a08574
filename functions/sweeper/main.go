// Command sweeper is the scheduled Lambda function (every minute) that flags
// records left in flight longer than the in-transit bound plus the clock-skew
// margin and enqueues their reconciliation. It never calls the acquirer. In
// the multi-region mode it also runs its region's backstop, which
// publishes the events of regions that stopped and beats the region's
// heartbeat (backstop.Publisher).
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/idempotent-payments/idempay/internal/backstop"
	"github.com/idempotent-payments/idempay/internal/capture"
	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/obs"
	"github.com/idempotent-payments/idempay/internal/queue"
	"github.com/idempotent-payments/idempay/internal/scheduled"
	"github.com/idempotent-payments/idempay/internal/setup"
	"github.com/idempotent-payments/idempay/internal/sweep"
	"github.com/idempotent-payments/idempay/internal/topic"
)

func main() { setup.Main(run) }

// run builds the sweeper from the environment and serves invocations; it
// returns only when start-up fails.
func run(logger *slog.Logger) error {
	cfg, err := scheduled.ConfigFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	awsCfg, err := setup.AWS(context.Background())
	if err != nil {
		return err
	}
	table := dynamo.Open(dynamo.NewClient(awsCfg, cfg.SkipResponseCRC32), cfg.TableName)
	h := &scheduled.Handler{
		Sweeper: sweep.New(
			table.Store(),
			queue.New(sqs.NewFromConfig(awsCfg), cfg.QueueURL),
			sweep.Config{InTransitBound: cfg.InTransitBound, ClockSkew: cfg.ClockSkew, PurgeWindow: cfg.PurgeWindow},
		),
		Expiry: &capture.Expiry{Authorizations: table.Authorizations(), Balances: table.Captures()},
		Logger: logger, Metrics: obs.NewMetrics(os.Stdout, obs.FunctionSweeper, cfg.Environment),
	}
	if cfg.Region != "" {
		h.Backstop = &backstop.Publisher{
			Region: cfg.Region, Books: table.Books(), Rows: table.Rows(),
			Topic: topic.New(sns.NewFromConfig(awsCfg), cfg.TopicARN), StaleAfter: cfg.StaleRegion, StopMargin: sweep.DefaultStopMargin,
		}
	}
	lambda.Start(h.Handle)
	return nil
}

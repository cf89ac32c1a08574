// Command match is the scheduled Lambda function (daily, at a time set per
// environment) that matches what the acquirer moved with the books: each
// line of its report of a day with one ledger row (package match). In the
// multi-region mode every region's runs, and one run a day, whichever
// claims the day first, matches the whole table.
package main

import (
	"context"
	"crypto/rand"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/idempotent-payments/idempay/internal/charging"
	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/match"
	"github.com/idempotent-payments/idempay/internal/obs"
	"github.com/idempotent-payments/idempay/internal/setup"
)

func main() { setup.Main(run) }

// run builds the handler from the environment and serves invocations; it
// returns only when start-up fails.
func run(logger *slog.Logger) error {
	ctx := context.Background()
	setup.LimitHeap(os.Getenv, 0.8) // the day's movements are held while its rows are read
	c, err := charging.FromEnv(os.Getenv)
	if err != nil {
		return err
	}
	schedule, err := setup.MatchFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	awsCfg, err := setup.AWS(ctx)
	if err != nil {
		return err
	}
	acq, err := charging.Acquirer(ctx, awsCfg, c)
	if err != nil {
		return err
	}
	table := dynamo.Open(dynamo.NewClient(awsCfg, c.SkipResponseCRC32), c.TableName)
	h := &match.Handler{
		Matcher: &match.Matcher{
			Books: table.MatchBooks(), Acquirer: acq, Grace: schedule.Grace, Now: time.Now,
			// This execution environment: its region and a random name.
			Owner: awsCfg.Region + "/" + rand.Text(), Lease: time.Minute,
		},
		Today: schedule.Today, Logger: logger, Metrics: obs.NewMetrics(os.Stdout, obs.FunctionMatch, c.Environment),
	}
	lambda.Start(h.Handle)
	return nil
}

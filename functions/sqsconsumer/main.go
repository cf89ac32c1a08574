// Command sqsconsumer is the Lambda function on the command queues
// (internal/consumer): each producer's queue of commands, or the
// sweeper's queue of reconcile commands, as its COMMAND_SOURCES say. The
// stack deploys it twice: for the producers' queues, for the reconcile
// queue.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/idempotent-payments/idempay/internal/charging"
	"github.com/idempotent-payments/idempay/internal/command"
	"github.com/idempotent-payments/idempay/internal/consumer"
	"github.com/idempotent-payments/idempay/internal/deploy"
	"github.com/idempotent-payments/idempay/internal/obs"
	"github.com/idempotent-payments/idempay/internal/queue"
	"github.com/idempotent-payments/idempay/internal/setup"
	"github.com/idempotent-payments/idempay/internal/topic"
)

func main() { setup.Main(run) }

// run builds the handler from the environment and serves invocations; it
// returns only when start-up fails.
func run(logger *slog.Logger) error {
	inboxes, err := command.ParseInboxes(os.Getenv(deploy.EnvCommandSources))
	if err != nil {
		return err
	}
	rejectedURL, err := setup.Require(os.Getenv, deploy.EnvRejectedQueueURL)
	if err != nil {
		return err
	}
	c, err := charging.Start(context.Background(), obs.FunctionSQSConsumer, os.Getenv, logger)
	if err != nil {
		return err
	}
	sqsClient := sqs.NewFromConfig(c.AWS)
	byARN := consumer.InboxesOf(inboxes, func(url string) consumer.Delayer { return queue.New(sqsClient, url) })
	h := &consumer.Handler{
		Service: c.Service, Refunds: c.Refunds, Captures: c.Captures, Operations: c.Operations, Inboxes: byARN, DeadLetters: queue.New(sqsClient, rejectedURL),
		Concurrency: deploy.ConsumerConcurrency, Logger: logger, Metrics: obs.NewMetrics(os.Stdout, obs.FunctionSQSConsumer, c.Config.Environment),
	}
	if arn := os.Getenv(deploy.EnvOutcomeTopicARN); arn != "" {
		h.Outcomes = topic.New(sns.NewFromConfig(c.AWS), arn)
	}
	lambda.Start(func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		defer c.Flush(ctx)
		return h.Handle(ctx, ev)
	})
	return nil
}

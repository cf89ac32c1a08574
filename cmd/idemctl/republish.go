package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/deploy"
	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/event"
	"github.com/idempotent-payments/idempay/internal/obs"
	"github.com/idempotent-payments/idempay/internal/operations"
	"github.com/idempotent-payments/idempay/internal/publish"
	"github.com/idempotent-payments/idempay/internal/streamfilter"
	"github.com/idempotent-payments/idempay/internal/topic"
)

// idFlag is a repeatable flag of ids (--charge, --refund).
type idFlag []string

func (c *idFlag) String() string { return strings.Join(*c, ",") }
func (c *idFlag) Set(id string) error {
	*c = append(*c, id)
	return nil
}

// republisher publishes outcome events again: an event's id is the same on
// every publication, so a subscriber that has it drops the repeat. In the
// multi-region mode it marks each row of a region published (books), so
// no sweeper takes it over again.
type republisher struct {
	topic *topic.Topic
	books charge.Books
	sh    shell
	aws   aws.Config // the region's, for the stream and the failures queue
}

// Publish publishes e and says so.
func (r republisher) Publish(ctx context.Context, e event.Event) error {
	if err := r.topic.Publish(ctx, e); err != nil {
		return err
	}
	fmt.Fprintf(r.sh.stdout, "published %s (%s) to %s\n", e.ID, e.Type, e.Producer)
	return nil
}

func newRepublisher(awsCfg aws.Config, sh shell, topicARN string, books charge.Books) (republisher, error) {
	if topicARN == "" {
		return republisher{}, errors.New("--topic (or " + deploy.EnvOutcomeTopicARN + ") is required: the outcome topic's ARN (the stack's OutcomeTopicArn output)")
	}
	return republisher{topic: topic.New(sns.NewFromConfig(awsCfg), topicARN), books: books, sh: sh, aws: awsCfg}, nil
}

// republishRows publishes again the event of each row named (a charge's
// captured, authorized or declined, a refund's succeeded or declined),
// from the row, as the publisher does (publish.Row, which marks a row of a
// region published), and an authorization's expired too when the row is
// marked so: the path once the stream no longer holds the row. Every id
// is tried; the error names those that failed, as noun ("charges").
func republishRows(ctx context.Context, rows *dynamo.Rows, r republisher, ids []string, noun string) error {
	var failed []string
	for _, id := range ids {
		row, err := rows.Row(ctx, id)
		if err == nil {
			err = publish.Row(ctx, r, r.books, row)
		}
		if c, ok := row.(operations.ChargeRow); err == nil && ok && c.Expired {
			var e event.Event
			if e, err = operations.ExpiredRow(c).RowEvent(); err == nil {
				err = r.Publish(ctx, e)
			}
		}
		if err != nil {
			fmt.Fprintf(r.sh.stdout, "%s: %v\n", id, err)
			failed = append(failed, id)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d %s not republished: %s", len(failed), len(ids), noun, strings.Join(failed, " "))
	}
	return nil
}

// republishFailures drains the publisher's failures queue: each message
// names a batch the stream trigger gave up on (dynamo.ParseFailure); its
// records are read back from the stream (dynamo.Range), filtered as the
// region's trigger filters them (publish.Deliverable with streamfilter.For
// the republisher's region: in the multi-region mode its own rows and
// those of no region), and given to the publisher's own handler, which
// marks the rows, and the message is deleted once they are published. A
// batch the stream no longer holds, or a message that does not parse, stays on
// the queue and is reported: its charges are republished from the ledger
// (--charge), found by the time window it gives.
func republishFailures(ctx context.Context, r republisher, queueURL string) error {
	awsCfg := r.aws
	queue, streams := sqs.NewFromConfig(awsCfg), dynamodbstreams.NewFromConfig(awsCfg)
	handler := &publish.Handler{Topic: r, Books: r.books, Logger: obs.NewLogger(r.sh.stderrOrDiscard(), "INFO")}
	filters := streamfilter.For(awsCfg.Region)
	left := 0
	for {
		out, err := queue.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queueURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			return err
		}
		if len(out.Messages) == 0 {
			break
		}
		for _, m := range out.Messages {
			id := aws.ToString(m.MessageId)
			f, err := dynamo.ParseFailure([]byte(aws.ToString(m.Body)))
			if err != nil {
				fmt.Fprintf(r.sh.stdout, "message %s left on the queue: %v\n", id, err)
				left++
				continue
			}
			records, err := dynamo.Range(ctx, streams, f)
			if errors.Is(err, dynamo.ErrAgedOut) {
				fmt.Fprintf(r.sh.stdout, "message %s left on the queue: shard %s, %s to %s: %v; republish the charges written from %s to %s with --charge\n",
					id, f.ShardID, f.Start, f.End, err, f.FirstArrival, f.LastArrival)
				left++
				continue
			}
			if err != nil {
				return fmt.Errorf("message %s: %w", id, err)
			}
			records = publish.Deliverable(records, filters)
			resp, err := handler.Handle(ctx, events.DynamoDBEvent{Records: records})
			if err == nil && len(resp.BatchItemFailures) > 0 {
				err = fmt.Errorf("publishing failed from record %s", resp.BatchItemFailures[0].ItemIdentifier)
			}
			if err != nil {
				return fmt.Errorf("message %s: %w; it stays on the queue", id, err)
			}
			if _, err := queue.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(queueURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
				return fmt.Errorf("message %s republished, but not deleted: %w", id, err)
			}
			fmt.Fprintf(r.sh.stdout, "message %s done: shard %s, %s to %s, %d records delivered\n", id, f.ShardID, f.Start, f.End, len(records))
		}
	}
	if left > 0 {
		return fmt.Errorf("%d messages left on the queue", left)
	}
	return nil
}

// Package queue is the SQS adapter: sending commands, dead-lettering with a
// reason, and delaying a message's redelivery. SQS SDK types stop here.
package queue

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// API is the part of the SQS client the queue calls.
type API interface {
	SendMessage(context.Context, *sqs.SendMessageInput, ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	SendMessageBatch(context.Context, *sqs.SendMessageBatchInput, ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
	ChangeMessageVisibility(context.Context, *sqs.ChangeMessageVisibilityInput, ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
}

// Queue is one SQS queue, addressed by URL.
type Queue struct {
	api API
	url string
}

// New returns the queue at url.
func New(api API, url string) *Queue { return &Queue{api: api, url: url} }

// MaxBatch is SQS's limit of messages per batch call.
const MaxBatch = 10

// MaxBatch is the most bodies SendBatch takes: SQS's limit per call.
func (q *Queue) MaxBatch() int { return MaxBatch }

// SendBatch sends up to MaxBatch bodies in one SendMessageBatch call. It
// returns an error naming how many failed when any did.
func (q *Queue) SendBatch(ctx context.Context, bodies []string) error {
	if len(bodies) == 0 {
		return nil
	}
	if len(bodies) > MaxBatch {
		return fmt.Errorf("send batch: %d messages, at most %d", len(bodies), MaxBatch)
	}
	entries := make([]types.SendMessageBatchRequestEntry, len(bodies))
	for i, b := range bodies {
		entries[i] = types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(b)}
	}
	out, err := q.api.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(q.url), Entries: entries})
	if err != nil {
		return fmt.Errorf("send batch: %w", err)
	}
	if n := len(out.Failed); n > 0 {
		return fmt.Errorf("send batch: %d of %d failed: %s", n, len(bodies), aws.ToString(out.Failed[0].Message))
	}
	return nil
}

// Send sends one body with string message attributes.
func (q *Queue) Send(ctx context.Context, body string, attributes map[string]string) error {
	attrs := make(map[string]types.MessageAttributeValue, len(attributes))
	for k, v := range attributes {
		attrs[k] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
	}
	_, err := q.api.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.url), MessageBody: aws.String(body), MessageAttributes: attrs})
	if err != nil {
		return fmt.Errorf("send: %w", err)
	}
	return nil
}

// MaxDelay is the longest Delay: SQS refuses a visibility of more than 12
// hours counted from the receive, and a delay is set by the invocation
// that received the message, so a minute is left for it.
const MaxDelay = 12*time.Hour - time.Minute

// Delay makes a received message visible again after d, rounded up to whole
// seconds: at least 1, at most MaxDelay.
func (q *Queue) Delay(ctx context.Context, receiptHandle string, d time.Duration) error {
	secs := int32((min(max(d, time.Second), MaxDelay) + time.Second - 1) / time.Second)
	_, err := q.api.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(q.url), ReceiptHandle: aws.String(receiptHandle), VisibilityTimeout: secs,
	})
	if err != nil {
		return fmt.Errorf("change visibility: %w", err)
	}
	return nil
}

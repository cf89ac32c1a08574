// Package topic is the SNS adapter of the outcome events: it publishes an
// event with the attributes subscribers filter on. SNS SDK types stop here.
package topic

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sns/types"

	"github.com/idempotent-payments/idempay/internal/event"
)

// API is the part of the SNS client the topic calls.
type API interface {
	Publish(context.Context, *sns.PublishInput, ...func(*sns.Options)) (*sns.PublishOutput, error)
}

// Topic is one SNS topic, by ARN.
type Topic struct {
	api API
	arn string
}

// New returns the topic arn.
func New(api API, arn string) *Topic { return &Topic{api: api, arn: arn} }

// Publish sends e, encoded, with its producer and type as attributes. An
// error means it may or may not have been delivered: publish it again (its
// id makes the repeat the same event).
func (t *Topic) Publish(ctx context.Context, e event.Event) error {
	body, err := e.Encode()
	if err != nil {
		return err
	}
	_, err = t.api.Publish(ctx, &sns.PublishInput{
		TopicArn: aws.String(t.arn), Message: aws.String(string(body)),
		MessageAttributes: map[string]types.MessageAttributeValue{
			event.AttrProducer: {DataType: aws.String("String"), StringValue: aws.String(e.Producer)},
			event.AttrType:     {DataType: aws.String("String"), StringValue: aws.String(string(e.Type))},
		},
	})
	if err != nil {
		return fmt.Errorf("publish %s %s: %w", e.Type, e.ID, err)
	}
	return nil
}

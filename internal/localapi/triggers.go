package localapi

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/idempotent-payments/idempay/internal/deploy"
	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/publish"
	"github.com/idempotent-payments/idempay/internal/streamfilter"
)

// createQueue makes the queue name; with a DLQ ARN, with the redrive
// policy the CDK app deploys (maxReceives receives, then the DLQ).
func createQueue(ctx context.Context, client *sqs.Client, name string, visibility time.Duration, dlqARN string, maxReceives int) (url, arn string, err error) {
	attrs := map[string]string{"VisibilityTimeout": strconv.Itoa(int(visibility / time.Second))}
	if dlqARN != "" {
		redrive, _ := json.Marshal(map[string]string{"deadLetterTargetArn": dlqARN, "maxReceiveCount": strconv.Itoa(maxReceives)})
		attrs["RedrivePolicy"] = string(redrive)
	}
	q, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		return "", "", fmt.Errorf("create queue %s: %w", name, err)
	}
	arn, err = queueArn(ctx, client, *q.QueueUrl)
	if err != nil {
		return "", "", err
	}
	return *q.QueueUrl, arn, nil
}

func queueArn(ctx context.Context, client *sqs.Client, url string) (string, error) {
	out, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return "", fmt.Errorf("queue ARN of %s: %w", url, err)
	}
	return out.Attributes[string(types.QueueAttributeNameQueueArn)], nil
}

// eventSourceMapping is the local stand-in for Lambda's SQS event source
// mapping: it long-polls the queue, delivers batches of up to 10, deletes
// what succeeded (everything not in batchItemFailures) and leaves the rest to
// the queue's visibility timeout and redrive policy. times, when not nil,
// keeps each succeeded command's time from its send (its SentTimestamp, to
// the millisecond) to the end of the invocation that handled it.
func eventSourceMapping(ctx context.Context, client *sqs.Client, url, arn string, target Invoker, times *DurationLog) {
	for ctx.Err() == nil {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(url), MaxNumberOfMessages: int32(deploy.Local().Queues.BatchSize), WaitTimeSeconds: 1,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
			MessageAttributeNames:       []string{"All"},
		})
		if err != nil {
			sleep(ctx, 200*time.Millisecond)
			continue
		}
		if len(out.Messages) == 0 {
			continue
		}
		ev := events.SQSEvent{}
		for _, m := range out.Messages {
			attrs := map[string]events.SQSMessageAttribute{}
			for k, v := range m.MessageAttributes {
				attrs[k] = events.SQSMessageAttribute{DataType: aws.ToString(v.DataType), StringValue: v.StringValue}
			}
			ev.Records = append(ev.Records, events.SQSMessage{
				MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: aws.ToString(m.Body),
				Md5OfBody: aws.ToString(m.MD5OfBody), Attributes: m.Attributes, MessageAttributes: attrs,
				EventSource: "aws:sqs", EventSourceARN: arn, AWSRegion: "us-east-1",
			})
		}
		payload, _ := json.Marshal(ev)
		res, err := target.Invoke(ctx, payload)
		end := time.Now()
		if err != nil {
			continue // the whole batch comes back after its visibility timeout
		}
		var resp events.SQSEventResponse
		if err := json.Unmarshal(res, &resp); err != nil {
			continue
		}
		failed := map[string]bool{}
		for _, f := range resp.BatchItemFailures {
			failed[f.ItemIdentifier] = true
		}
		var done []types.DeleteMessageBatchRequestEntry
		for i, m := range out.Messages {
			if !failed[aws.ToString(m.MessageId)] {
				done = append(done, types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle})
				if sent, err := strconv.ParseInt(m.Attributes[string(types.MessageSystemAttributeNameSentTimestamp)], 10, 64); err == nil {
					times.add(end.Sub(time.UnixMilli(sent)))
				}
			}
		}
		if len(done) > 0 {
			_, _ = client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: done})
		}
	}
}

// schedule invokes target with a scheduled EventBridge event every interval,
// as the sweeper's rate(1 minute) rule does.
func schedule(ctx context.Context, interval time.Duration, target Invoker) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_, _ = target.Invoke(ctx, scheduledEvent())
		}
	}
}

func scheduledEvent() []byte {
	b, _ := json.Marshal(events.EventBridgeEvent{
		Version: "0", ID: requestID(), DetailType: "Scheduled Event", Source: "aws.events",
		AccountID: "000000000000", Time: time.Now().UTC(), Region: "us-east-1", Detail: json.RawMessage("{}"),
	})
	return b
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// streamMapping is the local stand-in for Lambda's DynamoDB stream event
// source mapping: it reads every shard of the table's stream from its
// start, delivers the records in batches of up to deploy.Local's
// StreamBatchSize, in order, and on a batch item failure delivers again
// from the failed record after a pause.
// An iterator DynamoDB Local refuses (it trims and expires them) is taken
// again after the last record delivered. As the deployed mapping, it
// delivers only the records that match filters (the region's
// streamfilter.Set).
func streamMapping(ctx context.Context, client *dynamodbstreams.Client, streamARN string, filters streamfilter.Set, target Invoker) {
	type shard struct {
		iterator *string
		last     string // the sequence number of the last record delivered
		pending  []streamtypes.Record
		closed   bool
	}
	shards := map[string]*shard{}
	iterator := func(id string, sh *shard) {
		in := &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(streamARN), ShardId: aws.String(id), ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon}
		if sh.last != "" {
			in.ShardIteratorType, in.SequenceNumber = streamtypes.ShardIteratorTypeAfterSequenceNumber, aws.String(sh.last)
		}
		if it, err := client.GetShardIterator(ctx, in); err == nil {
			sh.iterator = it.ShardIterator
		}
	}
	for ctx.Err() == nil {
		desc, err := client.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(streamARN)})
		if err != nil {
			sleep(ctx, 200*time.Millisecond)
			continue
		}
		for _, s := range desc.StreamDescription.Shards {
			if id := aws.ToString(s.ShardId); shards[id] == nil {
				shards[id] = &shard{}
			}
		}
		idle := true
		for id, sh := range shards {
			if sh.closed && len(sh.pending) == 0 {
				continue
			}
			if len(sh.pending) == 0 {
				if sh.iterator == nil {
					iterator(id, sh)
				}
				if sh.iterator == nil {
					continue
				}
				out, err := client.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: sh.iterator, Limit: aws.Int32(int32(deploy.Local().StreamBatchSize))})
				if err != nil {
					sh.iterator = nil // taken again, after the last record delivered
					continue
				}
				sh.iterator, sh.pending, sh.closed = out.NextShardIterator, out.Records, out.NextShardIterator == nil
			}
			if len(sh.pending) == 0 {
				continue
			}
			idle = false
			batch := sh.pending
			sh.pending = deliverStream(ctx, batch, streamARN, filters, target)
			if delivered := len(batch) - len(sh.pending); delivered > 0 {
				sh.last = aws.ToString(batch[delivered-1].Dynamodb.SequenceNumber)
			}
		}
		if idle {
			sleep(ctx, 100*time.Millisecond)
		}
	}
}

// deliverStream invokes target with the records that pass the stream
// trigger's filters (as deployed) and returns those to deliver again: from
// the reported failure on, or all after a failed invocation (each after a
// pause).
func deliverStream(ctx context.Context, records []streamtypes.Record, streamARN string, filters streamfilter.Set, target Invoker) []streamtypes.Record {
	ev := events.DynamoDBEvent{Records: publish.Deliverable(dynamo.StreamRecords(records, streamARN), filters)}
	if len(ev.Records) == 0 {
		return nil
	}
	payload, _ := json.Marshal(ev)
	out, err := target.Invoke(ctx, payload)
	var resp events.DynamoDBEventResponse
	if err == nil && json.Unmarshal(out, &resp) == nil && len(resp.BatchItemFailures) == 0 {
		return nil
	}
	sleep(ctx, 500*time.Millisecond)
	if err != nil || len(resp.BatchItemFailures) == 0 {
		return records
	}
	for i, r := range records {
		if aws.ToString(r.Dynamodb.SequenceNumber) == resp.BatchItemFailures[0].ItemIdentifier {
			return records[i:]
		}
	}
	return records
}

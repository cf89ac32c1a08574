package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/charge/chargetest"
	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/event"
	"github.com/idempotent-payments/idempay/internal/httpapi"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/operations"
	"github.com/idempotent-payments/idempay/internal/refund"
	"github.com/idempotent-payments/idempay/internal/setup"
)

// outcomes is a topic on fauxqs with one queue subscribed raw, as the
// stack's outcome queues are.
type outcomes struct {
	topicARN, queueURL string
	sqs                *sqs.Client
}

func newOutcomes(t *testing.T) outcomes {
	t.Helper()
	ctx := context.Background()
	awsCfg, err := setup.AWS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("idemctl-republish-%d", time.Now().UnixNano())
	tp, err := sns.NewFromConfig(awsCfg).CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	q := sqs.NewFromConfig(awsCfg)
	url := newQueue(t, q, name)
	attrs, err := q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sns.NewFromConfig(awsCfg).Subscribe(ctx, &sns.SubscribeInput{TopicArn: tp.TopicArn, Protocol: aws.String("sqs"),
		Endpoint: aws.String(attrs.Attributes["QueueArn"]), Attributes: map[string]string{"RawMessageDelivery": "true"}}); err != nil {
		t.Fatal(err)
	}
	return outcomes{topicARN: aws.ToString(tp.TopicArn), queueURL: url, sqs: q}
}

func newQueue(t *testing.T, q *sqs.Client, name string) string {
	t.Helper()
	out, err := q.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.QueueUrl)
}

// received reads the queue until more than n events arrived or, after n
// of them, 2 s more passed (10 s in all at most).
func (o outcomes) received(t *testing.T, n int) []event.Event {
	t.Helper()
	var got []event.Event
	deadline, settle := time.Now().Add(10*time.Second), time.Time{}
	for len(got) <= n && time.Now().Before(deadline) && (settle.IsZero() || time.Now().Before(settle)) {
		if len(got) == n && settle.IsZero() {
			settle = time.Now().Add(2 * time.Second)
		}
		out, err := o.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(o.queueURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			var e event.Event
			if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &e); err != nil {
				t.Fatalf("%s: %v", aws.ToString(m.Body), err)
			}
			got = append(got, e)
			_, _ = o.sqs.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(o.queueURL), ReceiptHandle: m.ReceiptHandle})
		}
	}
	return got
}

// TestRepublish: an operator publishes a charge's event again from its
// ledger row, and drains a failures queue whose message names a stream
// range as Lambda's on-failure destination does: the same event each
// time, the same id, through the publisher's own code. An unknown charge
// and an unreadable message are reported and change nothing.
func TestRepublish(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	o := newOutcomes(t)
	svc := chargetest.ServiceWith(idem.NewGuard(w.store, idem.Config{Protocol: w.protocol}), w.ledger, w.acq, httpapi.Render, charge.Config{})
	in := charge.Input{Account: "acct_r", Keys: []string{"republish-key-1"}, Source: event.SourceHTTP,
		Body: []byte(`{"amount": 500, "currency": "BRL", "order_id": "r-1", "payment_method": "pm_card_visa"}`)}
	if r := svc.Charge(ctx, in); r.Outcome != op.Executed {
		t.Fatalf("charge: %s", r.Outcome)
	}
	row := svc.ByKey(ctx, "acct_r", "republish-key-1").Charge
	want, err := operations.ChargeRow{Charge: row}.RowEvent()
	if err != nil {
		t.Fatal(err)
	}
	idemctl := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := run(ctx, args, w.shell(strings.NewReader(""), &out))
		return out.String(), err
	}

	if out, err := idemctl("republish", "--charge", row.ID, "--topic", o.topicARN); err != nil || !strings.Contains(out, want.ID) {
		t.Fatalf("republish --charge: %v\n%s", err, out)
	}
	if got := o.received(t, 1); len(got) != 1 || got[0].ID != want.ID || *got[0].Charge != *want.Charge {
		t.Fatalf("from the ledger: %+v, want %+v", got, want)
	}
	unknown := charge.ID("ffffffffffffffffffffffffffffffffffffffff")
	if out, err := idemctl("republish", "--charge", unknown, "--topic", o.topicARN); err == nil || !strings.Contains(err.Error(), unknown) {
		t.Fatalf("an unknown charge: %v\n%s", err, out)
	}
	for _, args := range [][]string{{"republish", "--topic", o.topicARN}, {"republish", "--charge", row.ID}, {"republish", "--charge", row.ID, "--failures-queue", "x", "--topic", o.topicARN}} {
		if _, err := idemctl(args...); err == nil {
			t.Errorf("%v: accepted", args)
		}
	}

	// The row's insert, as the on-failure destination names it.
	d, err := w.ddb.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(w.table)})
	if err != nil {
		t.Fatal(err)
	}
	awsCfg, _ := setup.AWS(ctx)
	streams := dynamodbstreams.NewFromConfig(awsCfg)
	arn := aws.ToString(d.Table.LatestStreamArn)
	desc, err := streams.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)})
	if err != nil {
		t.Fatal(err)
	}
	shard := desc.StreamDescription.Shards[0].ShardId
	it, err := streams.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arn), ShardId: shard, ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := streams.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it.ShardIterator})
	if err != nil {
		t.Fatal(err)
	}
	first, last := aws.ToString(recs.Records[0].Dynamodb.SequenceNumber), aws.ToString(recs.Records[len(recs.Records)-1].Dynamodb.SequenceNumber)
	failures := newQueue(t, o.sqs, fmt.Sprintf("idemctl-failures-%d", time.Now().UnixNano()))
	send := func(body string) {
		if _, err := o.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(failures), MessageBody: aws.String(body)}); err != nil {
			t.Fatal(err)
		}
	}
	send(fmt.Sprintf(`{"version":"1.0","timestamp":"2026-12-01T00:00:00Z","requestContext":{"condition":"RecordAgeExceeded","approximateInvokeCount":3},`+
		`"DDBStreamBatchInfo":{"shardId":%q,"startSequenceNumber":%q,"endSequenceNumber":%q,"approximateArrivalOfFirstRecord":"2026-12-01T00:00:00Z",`+
		`"approximateArrivalOfLastRecord":"2026-12-01T00:00:00Z","batchSize":%d,"streamArn":%q}}`, aws.ToString(shard), first, last, len(recs.Records), arn))
	if out, err := idemctl("republish", "--failures-queue", failures, "--topic", o.topicARN); err != nil || !strings.Contains(out, want.ID) {
		t.Fatalf("republish --failures-queue: %v\n%s", err, out)
	}
	if got := o.received(t, 1); len(got) != 1 || got[0].ID != want.ID || *got[0].Charge != *want.Charge {
		t.Fatalf("from the stream: %+v, want %+v", got, want)
	}
	send(`{"DDBStreamBatchInfo":{"shardId":"x"}}`)
	if out, err := idemctl("republish", "--failures-queue", failures, "--topic", o.topicARN); err == nil || !strings.Contains(out, "left on the queue") {
		t.Fatalf("an unreadable message: %v\n%s", err, out)
	}
	if got := o.received(t, 0); len(got) != 0 {
		t.Fatalf("an unreadable message published %+v", got)
	}
}

// TestRepublishRefund: an operator publishes a refund's event again from
// its row: the same id as the publisher's; an unknown refund is reported.
func TestRepublishRefund(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	o := newOutcomes(t)
	row := refund.Refund{
		Origin: op.Origin{ID: refund.ID("0123456789abcdef0123456789abcdef01234567"), Account: "acct_r",
			IdempotencyKey: "refund-key-1", Source: event.SourceHTTP, AcquirerID: "sandbox",
			CreatedAt: time.Now().UTC().Truncate(time.Millisecond)},
		ChargeID: charge.ID("89abcdef0123456789abcdef0123456789abcdef"), Status: "succeeded", Amount: 300,
		Currency: "BRL", AcquirerRefundID: "rf_1",
	}
	if _, err := dynamo.Open(w.ddb, w.table).Refunds().Write(ctx, row); err != nil {
		t.Fatal(err)
	}
	want, err := operations.RefundRow{Refund: row}.RowEvent()
	if err != nil {
		t.Fatal(err)
	}
	idemctl := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := run(ctx, args, w.shell(strings.NewReader(""), &out))
		return out.String(), err
	}
	if out, err := idemctl("republish", "--refund", row.ID, "--topic", o.topicARN); err != nil || !strings.Contains(out, want.ID) {
		t.Fatalf("republish --refund: %v\n%s", err, out)
	}
	if got := o.received(t, 1); len(got) != 1 || got[0].ID != want.ID || got[0].Type != event.RefundSucceeded || *got[0].Refund != *want.Refund {
		t.Fatalf("from the row: %+v, want %+v", got, want)
	}
	unknown := refund.ID("ffffffffffffffffffffffffffffffffffffffff")
	if out, err := idemctl("republish", "--refund", unknown, "--topic", o.topicARN); err == nil || !strings.Contains(err.Error(), unknown) {
		t.Fatalf("an unknown refund: %v\n%s", err, out)
	}
}

// TestRepublishExpiredAuthorization: an authorization the sweeper marked
// expired republishes, from its row, its authorized event and its
// expired one, under the publisher's ids.
func TestRepublishExpiredAuthorization(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	o := newOutcomes(t)
	created := time.Now().UTC().Truncate(time.Millisecond)
	row := charge.Charge{
		Origin: op.Origin{ID: charge.ID("4123456789abcdef0123456789abcdef01234567"), Account: "acct_r",
			IdempotencyKey: "authorize-key-1", Source: event.SourceQueue("orders"), CreatedAt: created},
		Status: "authorized", Amount: 700, Currency: "BRL", AuthorizationID: "auth_r", AuthorizationExpiresAt: created.Add(-time.Minute),
	}
	tbl := dynamo.Open(w.ddb, w.table)
	if _, err := tbl.Ledger().Write(ctx, row); err != nil {
		t.Fatal(err)
	}
	if err := tbl.Authorizations().Unlist(ctx, row.ID, created); err != nil {
		t.Fatal(err)
	}
	row.Expired = true
	authorized, err := operations.ChargeRow{Charge: row}.RowEvent()
	if err != nil {
		t.Fatal(err)
	}
	expired, err := operations.ExpiredRow{Charge: row}.RowEvent()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(ctx, []string{"republish", "--charge", row.ID, "--topic", o.topicARN}, w.shell(strings.NewReader(""), &out)); err != nil ||
		!strings.Contains(out.String(), expired.ID) {
		t.Fatalf("republish --charge: %v\n%s", err, out.String())
	}
	got := o.received(t, 2)
	if len(got) != 2 {
		t.Fatalf("from the row: %+v", got)
	}
	ids := map[string]event.Type{got[0].ID: got[0].Type, got[1].ID: got[1].Type}
	if ids[authorized.ID] != event.Authorized || ids[expired.ID] != event.Expired {
		t.Fatalf("from the row: %+v, want %s and %s", got, authorized.ID, expired.ID)
	}
}

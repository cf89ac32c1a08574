package dynamo_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/dynamo/dynamotest"
	"github.com/idempotent-payments/idempay/internal/event"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/operations"
	"github.com/idempotent-payments/idempay/internal/outbox"
	"github.com/idempotent-payments/idempay/internal/tabledef"
)

// The fixtures in testdata/stream are one stream record of each kind, in
// Lambda's own JSON form (an events.DynamoDBEvent of one record), as the
// publisher's trigger delivers it: written on DynamoDB Local by
// dynamotest.WriteEveryKind, with the region and the stream's ARN made a
// deployment's.
var streamFixtures = []struct {
	name string
	// events is the types of the events the change makes (outbox.Events).
	events []event.Type
	check  func(t *testing.T, c outbox.Change)
}{
	{"ledger_row", []event.Type{event.Captured}, func(t *testing.T, c outbox.Change) {
		row, ok := c.Inserted.(operations.ChargeRow)
		r := row.Charge
		if !ok || c.OldRecord != nil || c.NewRecord != nil {
			t.Fatalf("%+v: want the row alone", c)
		}
		if r.ID != "ch_0123456789abcdef0123456789abcdef01234567" || r.Account != "acct_p" || r.IdempotencyKey != "publish-key-1" ||
			r.Source != event.SourceQueue("orders") || r.Status != "captured" || r.Amount != 100 || r.Currency != "BRL" ||
			r.AuthorizationID != "auth_1" || r.CreatedAt.IsZero() {
			t.Fatalf("row %+v", r)
		}
	}},
	{"record", nil, func(t *testing.T, c outbox.Change) {
		r := c.NewRecord
		if r == nil || c.OldRecord != nil || c.Inserted != nil {
			t.Fatalf("%+v: want a new record alone", c)
		}
		if r.Operation != "charge" || r.Account != "acct_p" || r.Key != "publish-key-2" || r.Source != event.SourceHTTP ||
			r.Status != idem.StatusInProgress || r.Held() || r.Attempt != 1 || r.LeaseToken == "" || r.Fingerprint == "" ||
			string(r.Request) != `[["amount","100"]]` || r.ExpiresAt.IsZero() {
			t.Fatalf("record %+v", r)
		}
	}},
	{"held", []event.Type{event.Held}, func(t *testing.T, c outbox.Change) {
		if c.OldRecord == nil || c.OldRecord.Held() || c.NewRecord == nil || !c.NewRecord.Held() {
			t.Fatalf("%+v: want a record becoming held", c)
		}
		if h := c.NewRecord.Hold; h.Reason != "amount_differs" || string(h.Evidence) != "{}" || h.At.IsZero() || h.Settling != nil {
			t.Fatalf("hold %+v", h)
		}
	}},
	{"takeover", nil, func(t *testing.T, c outbox.Change) {
		if c.OldRecord == nil || !c.OldRecord.Held() || c.NewRecord == nil || !c.NewRecord.Held() {
			t.Fatalf("%+v: want a held record staying held", c)
		}
		s := c.NewRecord.Hold.Settling
		if s == nil || s.Action != idem.SettleVoidConfirmed || s.By != "ops:ana" || s.Decision != "dec-publish-1" || s.At.IsZero() ||
			c.NewRecord.Attempt != c.OldRecord.Attempt+1 {
			t.Fatalf("settling %+v, attempt %d to %d", s, c.OldRecord.Attempt, c.NewRecord.Attempt)
		}
	}},
	{"release_marker", nil, func(t *testing.T, c outbox.Change) {
		if c != (outbox.Change{}) {
			t.Fatalf("%+v: the release marker is neither a record nor a row", c)
		}
	}},
	{"release", []event.Type{event.Released}, func(t *testing.T, c outbox.Change) {
		if c.OldRecord == nil || !c.OldRecord.Held() || c.NewRecord != nil || c.Inserted != nil {
			t.Fatalf("%+v: want a held record deleted", c)
		}
		if s := c.OldRecord.Hold.Settling; s == nil || s.Decision != "dec-publish-1" {
			t.Fatalf("the deleted record's settling %+v", s)
		}
	}},
	{"refund_row", []event.Type{event.RefundSucceeded}, func(t *testing.T, c outbox.Change) {
		row, ok := c.Inserted.(operations.RefundRow)
		r := row.Refund
		if !ok || c.OldRecord != nil || c.NewRecord != nil {
			t.Fatalf("%+v: want the refund row alone", c)
		}
		if r.ID != "re_89abcdef0123456789abcdef0123456789abcdef" || r.ChargeID != "ch_0123456789abcdef0123456789abcdef01234567" ||
			r.Account != "acct_p" || r.IdempotencyKey != "publish-key-3" || r.Source != event.SourceHTTP || r.Status != "succeeded" ||
			r.Amount != 40 || r.Currency != "BRL" || r.Reason != "duplicate" || r.AcquirerRefundID != "rf_1" || r.CreatedAt.IsZero() {
			t.Fatalf("refund row %+v", r)
		}
	}},
	{"authorization_row", []event.Type{event.Authorized}, func(t *testing.T, c outbox.Change) {
		row, ok := c.Inserted.(operations.ChargeRow)
		if !ok || c.Expired != nil || row.Status != "authorized" || row.AuthorizationExpiresAt.IsZero() || row.Expired {
			t.Fatalf("%+v: want an authorization's row inserted", c)
		}
	}},
	{"expired", []event.Type{event.Expired}, func(t *testing.T, c outbox.Change) {
		row, ok := c.Expired.(operations.ExpiredRow)
		if !ok || c.Inserted != nil || c.OldRecord != nil || c.NewRecord != nil {
			t.Fatalf("%+v: want the row marked expired alone", c)
		}
		if row.ID != "ch_3123456789abcdef0123456789abcdef01234567" || row.Status != "authorized" || !row.Expired ||
			row.AuthorizationExpiresAt.IsZero() || row.IdempotencyKey != "publish-key-4" {
			t.Fatalf("expired row %+v", row.Charge)
		}
	}},
}

// fixture is the one record of testdata/stream/name.json.
func fixture(t *testing.T, name string) events.DynamoDBEventRecord {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "stream", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var ev events.DynamoDBEvent
	if err := json.Unmarshal(b, &ev); err != nil || len(ev.Records) != 1 {
		t.Fatalf("%s: %d records, %v", name, len(ev.Records), err)
	}
	return ev.Records[0]
}

// TestChangeOfEveryKind: each kind of stream record, in Lambda's form,
// decodes into the change it is, which makes the events it should.
func TestChangeOfEveryKind(t *testing.T) {
	for _, f := range streamFixtures {
		t.Run(f.name, func(t *testing.T) {
			c, err := dynamo.Change(fixture(t, f.name))
			if err != nil {
				t.Fatal(err)
			}
			f.check(t, c)
			evs, err := outbox.Events(c)
			if err != nil {
				t.Fatal(err)
			}
			var types []event.Type
			for _, e := range evs {
				types = append(types, e.Type)
			}
			if !reflect.DeepEqual(types, f.events) {
				t.Fatalf("events %v, want %v", types, f.events)
			}
		})
	}
}

// TestChangeFromTheStreamsAPI: each fixture's item change, made again on
// DynamoDB Local and read back through the Streams API (the local stack's
// form, turned into Lambda's by dynamo.StreamRecord), decodes into the
// same change as the fixture does.
func TestChangeFromTheStreamsAPI(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ddb := dynamotest.Client(t)
	for _, f := range streamFixtures {
		t.Run(f.name, func(t *testing.T) {
			rec := fixture(t, f.name)
			want, err := dynamo.Change(rec)
			if err != nil {
				t.Fatal(err)
			}
			table := dynamotest.NewTable(t, ddb)
			put := func(image map[string]events.DynamoDBAttributeValue) {
				if _, err := ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: dynamo.Item(image)}); err != nil {
					t.Fatal(err)
				}
			}
			if rec.Change.OldImage != nil {
				put(rec.Change.OldImage)
			}
			if rec.EventName == string(events.DynamoDBOperationTypeRemove) {
				key := dynamo.Item(map[string]events.DynamoDBAttributeValue{tabledef.KeyAttribute: rec.Change.Keys[tabledef.KeyAttribute]})
				if _, err := ddb.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: key}); err != nil {
					t.Fatal(err)
				}
			} else {
				put(rec.Change.NewImage)
			}
			records := dynamotest.StreamRecords(t, ddb, table)
			last := dynamo.StreamRecord(records[len(records)-1], dynamotest.StreamARN(t, ddb, table))
			if last.EventName != rec.EventName {
				t.Fatalf("%s, want %s", last.EventName, rec.EventName)
			}
			got, err := dynamo.Change(last)
			if err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("from the Streams API: %+v, %v\nfrom Lambda's form: %+v", got, err, want)
			}
		})
	}
}

// TestRange: on DynamoDB Local's stream, the failure's range is read back
// as the trigger was given it: the records from its start to its end, in
// Lambda's form, unfiltered (the trigger's filters are the publisher's to
// apply again); a range the stream does not hold is an error.
func TestRange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ddb := dynamotest.Client(t)
	table := dynamotest.NewTable(t, ddb)
	dynamotest.WriteEveryKind(t, ddb, table)
	all := dynamotest.Stream(t, ddb, table)
	if len(all.Records) != len(streamFixtures) {
		t.Fatalf("%d records, want %d", len(all.Records), len(streamFixtures))
	}
	cfg, _ := config.LoadDefaultConfig(ctx)
	streams := dynamodbstreams.NewFromConfig(cfg)
	arn := all.Records[0].EventSourceArn
	desc, err := streams.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)})
	if err != nil {
		t.Fatal(err)
	}
	shard := aws.ToString(desc.StreamDescription.Shards[0].ShardId)
	seq := func(i int) string { return all.Records[i].Change.SequenceNumber }
	// From the claim to the hold.
	got, err := dynamo.Range(ctx, streams, dynamo.Failure{StreamARN: arn, ShardID: shard, Start: seq(1), End: seq(2)})
	if err != nil || !reflect.DeepEqual(got, all.Records[1:3]) {
		t.Fatalf("the claim to the hold: %d records, %v; want the claim and the hold", len(got), err)
	}
	// The whole stream.
	got, err = dynamo.Range(ctx, streams, dynamo.Failure{StreamARN: arn, ShardID: shard, Start: seq(0), End: seq(len(all.Records) - 1)})
	if err != nil || !reflect.DeepEqual(got, all.Records) {
		t.Fatalf("the whole stream: %d records, %v; want %d", len(got), err, len(all.Records))
	}
	// A range the shard does not hold is an error. DynamoDB answers a
	// trimmed start with TrimmedDataAccessException (ErrAgedOut);
	// DynamoDB Local, which never trims, answers any sequence number not in
	// the shard with a 500, so only the error, not its kind, is tested.
	if got, err := dynamo.Range(ctx, streams, dynamo.Failure{StreamARN: arn, ShardID: shard, Start: "999999999999999999990", End: "999999999999999999999"}); err == nil {
		t.Fatalf("a range the shard does not hold: %d records", len(got))
	}
}

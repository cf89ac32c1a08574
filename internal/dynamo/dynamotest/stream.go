package dynamotest

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/event"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/refund"
)

// StreamARN is the stream of table.
func StreamARN(t testing.TB, client *dynamodb.Client, table string) string {
	t.Helper()
	d, err := client.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(d.Table.LatestStreamArn)
}

// StreamRecords is every record on the stream of table so far, in the
// Streams API's form, read from the start of each shard.
func StreamRecords(t testing.TB, client *dynamodb.Client, table string) []streamtypes.Record {
	t.Helper()
	ctx := context.Background()
	arn := StreamARN(t, client, table)
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st := dynamodbstreams.NewFromConfig(cfg)
	desc, err := st.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(arn)})
	if err != nil {
		t.Fatal(err)
	}
	var records []streamtypes.Record
	for _, sh := range desc.StreamDescription.Shards {
		it, err := st.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(arn), ShardId: sh.ShardId, ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon})
		if err != nil {
			t.Fatal(err)
		}
		out, err := st.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it.ShardIterator})
		if err != nil {
			t.Fatal(err)
		}
		records = append(records, out.Records...)
	}
	return records
}

// Stream is every record on the stream of table so far, as a Lambda
// trigger delivers them.
func Stream(t testing.TB, client *dynamodb.Client, table string) events.DynamoDBEvent {
	t.Helper()
	return events.DynamoDBEvent{Records: dynamo.StreamRecords(StreamRecords(t, client, table), StreamARN(t, client, table))}
}

// WriteEveryKind writes to table one item change of every kind the
// publisher reads, in this order: a ledger row's insert, a record's claim,
// its hold for the operator, the operator's void-confirmed take-over of it,
// the void's release marker and its release (the held record's delete),
// a refund row's insert, an authorization's ledger row's insert, and
// the sweeper's unlist of it, closed at its expiry (its expired mark).
func WriteEveryKind(t testing.TB, client *dynamodb.Client, table string) {
	t.Helper()
	ctx := context.Background()
	tbl := dynamo.Open(client, table)
	row := charge.Charge{
		Origin: op.Origin{ID: charge.ID("0123456789abcdef0123456789abcdef01234567"), Account: "acct_p",
			IdempotencyKey: "publish-key-1", Source: event.SourceQueue("orders"), CreatedAt: time.Now().UTC()},
		Status: "captured", Amount: 100, Currency: "BRL", AuthorizationID: "auth_1",
	}
	if _, err := tbl.Ledger().Write(ctx, row); err != nil {
		t.Fatal(err)
	}
	guard := idem.NewGuard(tbl.Store(), idem.Config{DefaultLease: time.Millisecond, Protocol: idem.Protocol{InTransitBound: time.Millisecond, ClockSkew: time.Millisecond}})
	scope := idem.Scope{Operation: "charge", Account: "acct_p", Key: "publish-key-2", Source: event.SourceHTTP}
	c, err := guard.Begin(ctx, scope, idem.Canonical{{Name: "amount", Value: "100"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Lease.HoldForOperator(ctx, "amount_differs", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // past the lease, the bound and the skew
	lease, err := guard.TakeOverHeld(ctx, scope.PK(), "", idem.Settlement{Action: idem.SettleVoidConfirmed, By: "ops:ana", Decision: "dec-publish-1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := lease.VoidConfirmed(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Refunds().Write(ctx, refund.Refund{
		Origin: op.Origin{ID: "re_89abcdef0123456789abcdef0123456789abcdef", Account: "acct_p",
			IdempotencyKey: "publish-key-3", Source: event.SourceHTTP, AcquirerID: "sandbox",
			CreatedAt: row.CreatedAt},
		ChargeID: row.ID, Status: "succeeded", Amount: 40, Currency: "BRL", Reason: "duplicate",
		AcquirerRefundID: "rf_1",
	}); err != nil {
		t.Fatal(err)
	}
	auth := charge.Charge{
		Origin: op.Origin{ID: charge.ID("3123456789abcdef0123456789abcdef01234567"), Account: "acct_p",
			IdempotencyKey: "publish-key-4", Source: event.SourceQueue("orders"), CreatedAt: row.CreatedAt},
		Status: "authorized", Amount: 100, Currency: "BRL", AuthorizationID: "auth_3",
		AuthorizationExpiresAt: row.CreatedAt.Add(time.Hour).Truncate(time.Millisecond),
	}
	if _, err := tbl.Ledger().Write(ctx, auth); err != nil {
		t.Fatal(err)
	}
	if err := tbl.Authorizations().Unlist(ctx, auth.ID, auth.AuthorizationExpiresAt); err != nil {
		t.Fatal(err)
	}
}

// WriteMarkers writes to table, in this order, the changes of the
// markers at a row's key: a charge's held marker put, the held marker
// deleted for the charge's row and the row put, another charge's held
// marker replaced by its voided marker, a voided marker put where
// nothing was, and a refund's voided marker put. Only the row's insert
// makes an event.
func WriteMarkers(t testing.TB, client *dynamodb.Client, table string) {
	t.Helper()
	ctx := context.Background()
	tbl := dynamo.Open(client, table)
	mark := charge.HeldMarker{Account: "acct_p", Key: "marker-key-1"}
	row := charge.Charge{
		Origin: op.Origin{ID: charge.ID("1123456789abcdef0123456789abcdef01234567"), Account: "acct_p",
			IdempotencyKey: "marker-key-1", Source: event.SourceHTTP, CreatedAt: time.Now().UTC()},
		Status: "captured", Amount: 100, Currency: "BRL", AuthorizationID: "auth_2",
	}
	voided := charge.ID("2123456789abcdef0123456789abcdef01234567")
	for _, step := range []func() error{
		func() error { return tbl.Ledger().Hold(ctx, row.ID, mark) },
		func() error { _, err := tbl.Ledger().Write(ctx, row); return err },
		func() error { return tbl.Ledger().Hold(ctx, voided, mark) },
		func() error { return tbl.Ledger().Void(ctx, voided) },
		func() error { return tbl.Ledger().Void(ctx, charge.ID("3123456789abcdef0123456789abcdef01234567")) },
		func() error { return tbl.Refunds().Void(ctx, refund.ID("4123456789abcdef0123456789abcdef01234567")) },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
}

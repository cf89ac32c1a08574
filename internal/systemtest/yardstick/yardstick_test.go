package yardstick

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idempotent-payments/idempay/internal/dynamo/dynamotest"
)

// TestHandlerMakesTheRoundTripsAsked: as many POSTs as the header says,
// then a 201; a missing count is an error, not a guess.
func TestHandlerMakesTheRoundTripsAsked(t *testing.T) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { calls.Add(1) }))
	defer srv.Close()
	h := Handler(srv.URL)
	resp, err := h(context.Background(), events.APIGatewayV2HTTPRequest{Headers: map[string]string{CallsHeader: "4"}})
	if err != nil || resp.StatusCode != http.StatusCreated || calls.Load() != 4 {
		t.Fatalf("status %d, %d calls, %v; want 201 after 4", resp.StatusCode, calls.Load(), err)
	}
	if _, err := h(context.Background(), events.APIGatewayV2HTTPRequest{}); err == nil {
		t.Fatal("no count: no error")
	}
}

// TestSDKFloorMakesTheChargesCalls: a first execution claims its key,
// posts once and writes the row and the completion; its replay, and a
// request while it is in flight (on a key its first execution completed,
// or one Hold claimed), are the claim refused; its refund, its
// capture and its void each claim, post once and write their row and the
// charge's balance twice; each answers its path's answer. A replay, an
// in-flight request, a refund or a capture of a key never charged, an
// unknown path, or no key, is an error, and so are answers without every
// path's.
func TestSDKFloorMakesTheChargesCalls(t *testing.T) {
	ctx := context.Background()
	f := newFloorFixture(t)
	client, table, posts := f.client, f.table, &f.posts
	answers, err := Answers(`{"first-execution":{"statusCode":201,"headers":{"Location":"/v1/charges/ch_1"},"body":"{\"id\":\"ch_1\"}"},` +
		`"replay":{"statusCode":201,"headers":{"Idempotent-Replay":"true"},"body":"{\"id\":\"ch_1\"}"},"refund":{"statusCode":201,"body":"{\"id\":\"re_1\"}"},` +
		`"in-flight":{"statusCode":409},"capture":{"statusCode":201,"body":"{\"id\":\"cp_1\"}"},"void":{"statusCode":201,"body":"{\"id\":\"vd_1\"}"}}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", `{"first-execution":{"statusCode":201},"replay":{"statusCode":201}}`, `{"first-execution":{"statusCode":201},"replay":{"statusCode":201},"refund":{"body":"no status"}}`} {
		if _, err := Answers(bad); err == nil {
			t.Errorf("answers %q: no error", bad)
		}
	}
	h := SDKHandler(client, table, f.acquirer, answers) // the functions' client (dynamo.NewClient)
	event := func(path, key string) events.APIGatewayV2HTTPRequest {
		return events.APIGatewayV2HTTPRequest{Headers: map[string]string{PathHeader: path, KeyHeader: key}}
	}
	if resp, err := h(ctx, event(BenchFirstExecution, "k1")); err != nil || resp.Headers["Location"] != "/v1/charges/ch_1" || posts.Load() != 1 {
		t.Fatalf("first execution: %+v, %v, %d posts", resp, err, posts.Load())
	}
	item := f.item
	item("CHARGE#k1")
	if s := item("IDEM#k1")["status"].(*types.AttributeValueMemberS).Value; s != "COMPLETED" {
		t.Fatalf("the record is %s", s)
	}
	if resp, err := h(ctx, event(BenchReplay, "k1")); err != nil || resp.Headers["Idempotent-Replay"] != "true" || posts.Load() != 1 {
		t.Fatalf("replay: %+v, %v, %d posts", resp, err, posts.Load())
	}
	if resp, err := h(ctx, event(BenchInFlight, "k1")); err != nil || resp.StatusCode != 409 || posts.Load() != 1 {
		t.Fatalf("in flight: %+v, %v, %d posts", resp, err, posts.Load())
	}
	if err := Hold(ctx, client, table, "k7"); err != nil {
		t.Fatal(err)
	}
	if s := item("IDEM#k7")["status"].(*types.AttributeValueMemberS).Value; s != "IN_PROGRESS" {
		t.Fatalf("the held record is %s", s)
	}
	if resp, err := h(ctx, event(BenchInFlight, "k7")); err != nil || resp.StatusCode != 409 || posts.Load() != 1 {
		t.Fatalf("in flight on a held key: %+v, %v, %d posts", resp, err, posts.Load())
	}
	if resp, err := h(ctx, event(BenchRefund, "k1")); err != nil || resp.Body != `{"id":"re_1"}` || posts.Load() != 2 {
		t.Fatalf("refund: %+v, %v, %d posts", resp, err, posts.Load())
	}
	item("REFUND#k1")
	if n := item("CHARGE#k1")["refunded"].(*types.AttributeValueMemberN).Value; n != "1" {
		t.Fatalf("refunded %s", n)
	}
	if s := item("IDEM#refund#k1")["status"].(*types.AttributeValueMemberS).Value; s != "COMPLETED" {
		t.Fatalf("the refund's record is %s", s)
	}
	for i, act := range []struct{ path, body, row, settled string }{
		{BenchCapture, `{"id":"cp_1"}`, "CAPTURE#k1", "captured"},
		{BenchVoid, `{"id":"vd_1"}`, "VOID#k1", "voided"},
	} {
		if resp, err := h(ctx, event(act.path, "k1")); err != nil || resp.Body != act.body || posts.Load() != int64(3+i) {
			t.Fatalf("%s: %+v, %v, %d posts", act.path, resp, err, posts.Load())
		}
		item(act.row)
		if n := item("CHARGE#k1")[act.settled].(*types.AttributeValueMemberN).Value; n != "1" {
			t.Fatalf("%s %s", act.settled, n)
		}
		if s := item("IDEM#" + act.path + "#k1")["status"].(*types.AttributeValueMemberS).Value; s != "COMPLETED" {
			t.Fatalf("the %s's record is %s", act.path, s)
		}
	}
	for _, bad := range []events.APIGatewayV2HTTPRequest{event(BenchReplay, "k2"), event(BenchInFlight, "k5"), event(BenchRefund, "k3"), event(BenchCapture, "k6"), event("nope", "k4"), event(BenchFirstExecution, "")} {
		if _, err := h(ctx, bad); err == nil {
			t.Errorf("%v: no error", bad.Headers)
		}
	}
}

// TestSDKQueueFloorChargesEachMessage: a batch of two makes two first
// executions, one on each message's id, and answers no failure; a message
// whose id was charged before is an error.
func TestSDKQueueFloorChargesEachMessage(t *testing.T) {
	ctx := context.Background()
	f := newFloorFixture(t)
	h := SDKQueueHandler(f.client, f.table, f.acquirer, 2)
	batch := events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m1"}, {MessageId: "m2"}}}
	if resp, err := h(ctx, batch); err != nil || len(resp.BatchItemFailures) != 0 || f.posts.Load() != 2 {
		t.Fatalf("%+v, %v, %d posts", resp, err, f.posts.Load())
	}
	for _, pk := range []string{"IDEM#m1", "CHARGE#m1", "IDEM#m2", "CHARGE#m2"} {
		f.item(pk)
	}
	if _, err := h(ctx, events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m1"}}}); err == nil {
		t.Fatal("a message charged before: no error")
	}
}

// floorFixture is what the SDK floor's tests run against: a table of
// their own on DynamoDB Local, read with the functions' client, and an
// acquirer that counts its POSTs.
type floorFixture struct {
	t        *testing.T
	client   *dynamodb.Client
	table    string
	acquirer string
	posts    atomic.Int64
}

func newFloorFixture(t *testing.T) *floorFixture {
	t.Helper()
	f := &floorFixture{t: t, client: dynamotest.Client(t)}
	f.table = dynamotest.NewTable(t, f.client)
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { f.posts.Add(1) }))
	t.Cleanup(srv.Close)
	f.acquirer = srv.URL
	return f
}

// item is the table's item under pk; its absence fails the test.
func (f *floorFixture) item(pk string) map[string]types.AttributeValue {
	f.t.Helper()
	out, err := f.client.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(f.table),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}}})
	if err != nil || out.Item == nil {
		f.t.Fatalf("%s: %v, %v", pk, out, err)
	}
	return out.Item
}

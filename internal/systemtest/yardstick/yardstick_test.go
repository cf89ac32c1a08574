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
// posts once and writes the row and the completion; its replay is the
// claim refused; both answer the answer given; a replay of a key never claimed, a count other than 1 or
// 4, or no key, is an error.
func TestSDKFloorMakesTheChargesCalls(t *testing.T) {
	ctx := context.Background()
	client := dynamotest.Client(t)
	table := dynamotest.NewTable(t, client)
	var posts atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { posts.Add(1) }))
	defer srv.Close()
	reply, err := Answer(`{"statusCode":201,"headers":{"Location":"/v1/charges/ch_1"},"body":"{\"id\":\"ch_1\"}"}`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Answer(`{"body":"no status"}`); err == nil {
		t.Fatal("an answer without its status: no error")
	}
	if _, err := Answer(""); err == nil {
		t.Fatal("no answer given: no error")
	}
	h := SDKHandler(client, table, srv.URL, reply) // the functions' client (dynamo.NewClient)
	event := func(calls, key string) events.APIGatewayV2HTTPRequest {
		return events.APIGatewayV2HTTPRequest{Headers: map[string]string{CallsHeader: calls, KeyHeader: key}}
	}
	if resp, err := h(ctx, event("4", "k1")); err != nil || resp.Headers["Location"] != "/v1/charges/ch_1" || posts.Load() != 1 {
		t.Fatalf("first execution: %+v, %v, %d posts", resp, err, posts.Load())
	}
	for _, pk := range []string{"IDEM#k1", "CHARGE#k1"} {
		out, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}}})
		if err != nil || out.Item == nil || (pk == "IDEM#k1" && out.Item["status"].(*types.AttributeValueMemberS).Value != "COMPLETED") {
			t.Fatalf("%s: %v, %v", pk, out.Item, err)
		}
	}
	if resp, err := h(ctx, event("1", "k1")); err != nil || resp.Body != `{"id":"ch_1"}` || posts.Load() != 1 {
		t.Fatalf("replay: %+v, %v, %d posts", resp, err, posts.Load())
	}
	for _, bad := range []events.APIGatewayV2HTTPRequest{event("1", "k2"), event("2", "k3"), event("4", "")} {
		if _, err := h(ctx, bad); err == nil {
			t.Errorf("%v: no error", bad.Headers)
		}
	}
}

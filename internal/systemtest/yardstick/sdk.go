package yardstick

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The sub-benchmarks of BenchmarkFunctionCPU that `make bench-cpu`
// compares (cmd/benchreport/cpuratio): each path of the charge function
// and the SDK floor's of the same path.
const (
	BenchFirstExecution         = "first-execution"
	BenchReplay                 = "replay"
	BenchSDKFloorFirstExecution = "sdk-floor-first-execution"
	BenchSDKFloorReplay         = "sdk-floor-replay"
)

// The SDK floor: the charge's DynamoDB calls through aws-sdk-go-v2 and
// nothing else, the floor of a design that requires the SDK.
const (
	// EnvMode names the variable that picks the yardstick: ModeSDK for the
	// SDK floor, anything else the plain one.
	EnvMode = "YARDSTICK_MODE"
	ModeSDK = "sdk"
	// EnvTable names the variable holding the SDK floor's table.
	EnvTable = "YARDSTICK_TABLE"
	// KeyHeader is the event header naming the intent's key: a first
	// execution claims it, a replay finds it claimed.
	KeyHeader = "yardstick-key"
	// EnvAnswer names the variable holding the answer the SDK floor gives,
	// as the JSON Lambda returns: the charge function's own answer, so
	// that the floor writes what the function writes.
	EnvAnswer = "YARDSTICK_ANSWER"
)

// The sizes of the items the SDK floor writes, as the charge function
// writes them (docs/measurements.md: a claim 773 B, a ledger row 522 B, a
// completed record 903 B), and what each pads to reach them.
const (
	claimBytes      = 773
	rowBytes        = 522
	completionBytes = 903 - claimBytes // what the completion adds to the claim
)

// SDKHandler is the SDK floor's handler. For a first execution (the
// CallsHeader says 4) it makes the charge's calls in their order: the
// claim's PutItem conditioned on the key's absence, the acquirer's POST to
// url (plain net/http, as the acquirer's client), the ledger row's
// PutItem conditioned the same way, and the completion's UpdateItem
// conditioned on the claim; for a replay (1), the claim's PutItem, refused
// by its condition with the old item returned, as a replay's is. api is
// the client the functions use (dynamo.NewClient), so its configuration
// (retryer, endpoint resolution, checksums) is theirs. Every invocation
// answers with reply.
func SDKHandler(api *dynamodb.Client, table, url string, reply events.APIGatewayV2HTTPResponse) func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	client := &http.Client{}
	absent := aws.String("attribute_not_exists(pk)")
	return func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		calls, err := strconv.Atoi(ev.Headers[CallsHeader])
		key := ev.Headers[KeyHeader]
		if err != nil || key == "" || (calls != 1 && calls != 4) {
			return events.APIGatewayV2HTTPResponse{}, fmt.Errorf("%s %q, %s %q: want 1 or 4, and a key", CallsHeader, ev.Headers[CallsHeader], KeyHeader, key)
		}
		claim := itemOf("IDEM#"+key, claimBytes)
		_, err = api.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: aws.String(table), Item: claim, ConditionExpression: absent,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		var refused *types.ConditionalCheckFailedException
		switch {
		case calls == 1 && errors.As(err, &refused):
			return reply, nil // the replay: its record came back with the refusal
		case err != nil:
			return events.APIGatewayV2HTTPResponse{}, fmt.Errorf("claim: %w", err)
		case calls == 1:
			return events.APIGatewayV2HTTPResponse{}, fmt.Errorf("a replay of %s, which no first execution claimed", key)
		}
		if err := post(ctx, client, url); err != nil {
			return events.APIGatewayV2HTTPResponse{}, err
		}
		if _, err := api.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: itemOf("CHARGE#"+key, rowBytes), ConditionExpression: absent}); err != nil {
			return events.APIGatewayV2HTTPResponse{}, fmt.Errorf("row: %w", err)
		}
		_, err = api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(table), Key: map[string]types.AttributeValue{"pk": claim["pk"]},
			UpdateExpression:         aws.String("SET #s = :s, #r = :r"),
			ConditionExpression:      aws.String("#s = :claimed"),
			ExpressionAttributeNames: map[string]string{"#s": "status", "#r": "response"},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":s": &types.AttributeValueMemberS{Value: "COMPLETED"}, ":claimed": &types.AttributeValueMemberS{Value: "IN_PROGRESS"},
				":r": &types.AttributeValueMemberS{Value: strings.Repeat("r", completionBytes)},
			},
		})
		if err != nil {
			return events.APIGatewayV2HTTPResponse{}, fmt.Errorf("completion: %w", err)
		}
		return reply, nil
	}
}

// Answer is the SDK floor's answer: the JSON of EnvAnswer's value, which
// must be set.
func Answer(value string) (events.APIGatewayV2HTTPResponse, error) {
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal([]byte(value), &resp); err != nil {
		return resp, fmt.Errorf("%s: not an answer: %w", EnvAnswer, err)
	}
	if resp.StatusCode == 0 {
		return resp, fmt.Errorf("%s: an answer without its status", EnvAnswer)
	}
	return resp, nil
}

// itemOf is an item at key padded to about size bytes, in progress.
func itemOf(key string, size int) map[string]types.AttributeValue {
	pad := max(size-len(key)-len("pk")-len("status")-len("IN_PROGRESS")-len("pad"), 0)
	return map[string]types.AttributeValue{
		"pk":     &types.AttributeValueMemberS{Value: key},
		"status": &types.AttributeValueMemberS{Value: "IN_PROGRESS"},
		"pad":    &types.AttributeValueMemberS{Value: strings.Repeat("p", pad)},
	}
}

// post is the acquirer's round trip: a plain POST of a claim-sized body.
func post(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

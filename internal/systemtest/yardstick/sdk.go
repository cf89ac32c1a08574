package yardstick

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The sub-benchmarks of BenchmarkFunctionCPU that `make bench-cpu`
// compares (cmd/benchreport/cpuratio): each path of the charge function
// and the SDK floor's of the same path. A path's name is also what the
// SDK floor's PathHeader asks for.
const (
	BenchFirstExecution         = "first-execution"
	BenchReplay                 = "replay"
	BenchInFlight               = "in-flight"
	BenchRefund                 = "refund"
	BenchQueueCommand           = "queue-command"
	BenchCapture                = "capture"
	BenchVoid                   = "void"
	BenchSDKFloorFirstExecution = "sdk-floor-" + BenchFirstExecution
	BenchSDKFloorReplay         = "sdk-floor-" + BenchReplay
	BenchSDKFloorInFlight       = "sdk-floor-" + BenchInFlight
	BenchSDKFloorRefund         = "sdk-floor-" + BenchRefund
	BenchSDKFloorQueueCommand   = "sdk-floor-" + BenchQueueCommand
	BenchSDKFloorCapture        = "sdk-floor-" + BenchCapture
	BenchSDKFloorVoid           = "sdk-floor-" + BenchVoid
)

// A Bench is a path BenchmarkFunctionCPU measures: its name in reports,
// the function's sub-benchmark and its SDK floor's.
type Bench struct{ Name, Path, Floor string }

// Benches are the paths BenchmarkFunctionCPU measures, in its order, and
// `make bench-cpu` reports (cmd/benchreport/cpuratio).
var Benches = []Bench{
	{"first execution", BenchFirstExecution, BenchSDKFloorFirstExecution},
	{"replay", BenchReplay, BenchSDKFloorReplay},
	{"in flight", BenchInFlight, BenchSDKFloorInFlight},
	{"refund", BenchRefund, BenchSDKFloorRefund},
	{"queue command", BenchQueueCommand, BenchSDKFloorQueueCommand},
	{"capture", BenchCapture, BenchSDKFloorCapture},
	{"void", BenchVoid, BenchSDKFloorVoid},
}

// SDKPaths are the paths SDKHandler makes the calls of: every one of
// Benches but the queue's commands, whose floor is SDKQueueHandler.
var SDKPaths = func() []string {
	var paths []string
	for _, b := range Benches {
		if b.Path != BenchQueueCommand {
			paths = append(paths, b.Path)
		}
	}
	return paths
}()

// The SDK floor: the charge's DynamoDB calls through aws-sdk-go-v2 and
// nothing else, the floor of a design that requires the SDK.
const (
	// EnvMode names the variable that picks the yardstick: ModeSDK for the
	// SDK floor of the API's paths, ModeSDKQueue for the queue's commands,
	// anything else the plain one.
	EnvMode      = "YARDSTICK_MODE"
	ModeSDK      = "sdk"
	ModeSDKQueue = "sdk-queue"
	// EnvTable names the variable holding the SDK floor's table.
	EnvTable = "YARDSTICK_TABLE"
	// PathHeader is the event header naming the path whose calls the SDK
	// floor makes (SDKPaths).
	PathHeader = "yardstick-path"
	// KeyHeader is the event header naming the intent's key: a first
	// execution claims it, a replay or a request in flight finds it
	// claimed, a refund, a capture or a void acts on the charge its
	// first execution made.
	KeyHeader = "yardstick-key"
	// EnvAnswer names the variable holding the answers the SDK floor
	// gives, a JSON object of each path's (SDKPaths) as the JSON Lambda
	// returns: the charge function's own answers, so that the floor
	// writes what the function writes.
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

// SDKHandler is the SDK floor's handler. It makes the calls of the path
// the PathHeader names, in their order, on the KeyHeader's key:
//   - a first execution: the claim's PutItem conditioned on the key's
//     absence, the acquirer's POST to url (plain net/http, as the
//     acquirer's client), the ledger row's PutItem conditioned the same
//     way, and the completion's UpdateItem conditioned on the claim;
//   - a replay, or a request while its key is in flight: the claim's
//     PutItem, refused by its condition with the old item returned, as
//     either's is;
//   - a refund of the charge the key's first execution made: the refund's
//     claim, the charge's row and record read (two GetItem), the
//     reservation on the charge's row (UpdateItem), the acquirer's POST,
//     the refund row's PutItem, the reservation's success (UpdateItem)
//     and the completion;
//   - a capture, or a void, of the key's charge: the same calls as a
//     refund's, with a capture's or a void's claim and row, as the
//     function's capture and void make them (TestCaptureRoundTrips in
//     internal/dynamo holds the function's to a refund's).
//
// api is the client the functions use (dynamo.NewClient), so its
// configuration (retryer, endpoint resolution, checksums) is theirs. Every
// invocation answers with its path's answer.
func SDKHandler(api *dynamodb.Client, table, url string, answers map[string]events.APIGatewayV2HTTPResponse) func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	f := floor{api: api, table: aws.String(table), url: url, client: &http.Client{}}
	return func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		path, key := ev.Headers[PathHeader], ev.Headers[KeyHeader]
		reply, ok := answers[path]
		if !ok || key == "" {
			return events.APIGatewayV2HTTPResponse{}, fmt.Errorf("%s %q, %s %q: want one of %q, and a key", PathHeader, path, KeyHeader, key, SDKPaths)
		}
		var err error
		switch path {
		case BenchFirstExecution:
			err = f.firstExecution(ctx, key)
		case BenchReplay, BenchInFlight:
			err = f.refused(ctx, key)
		case BenchRefund, BenchCapture, BenchVoid:
			err = f.act(ctx, path, key)
		default:
			err = fmt.Errorf("%s: the SDK floor makes no calls for it", path)
		}
		if err != nil {
			return events.APIGatewayV2HTTPResponse{}, err
		}
		return reply, nil
	}
}

// floor makes the SDK floor's calls on its table.
type floor struct {
	api    *dynamodb.Client
	table  *string
	url    string
	client *http.Client
}

var absent = aws.String("attribute_not_exists(pk)")

// claim puts the claim at pk, conditioned on its absence, the old item
// returned when the condition fails.
func (f floor) claim(ctx context.Context, pk string) (map[string]types.AttributeValue, error) {
	claim := itemOf(pk, claimBytes)
	_, err := f.api.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: f.table, Item: claim, ConditionExpression: absent,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	return claim, err
}

func (f floor) firstExecution(ctx context.Context, key string) error {
	claim, err := f.claim(ctx, "IDEM#"+key)
	if err != nil {
		return fmt.Errorf("claim: %w", err)
	}
	if err := post(ctx, f.client, f.url); err != nil {
		return err
	}
	if _, err := f.api.PutItem(ctx, &dynamodb.PutItemInput{TableName: f.table, Item: itemOf("CHARGE#"+key, rowBytes), ConditionExpression: absent}); err != nil {
		return fmt.Errorf("row: %w", err)
	}
	return f.complete(ctx, claim["pk"])
}

// Hold puts in table the claim the SDK floor's first execution on key
// puts, and leaves it in progress: the floor's request in flight on key
// is then refused with a claim returned, as the function's is.
func Hold(ctx context.Context, api *dynamodb.Client, table, key string) error {
	_, err := floor{api: api, table: aws.String(table)}.claim(ctx, "IDEM#"+key)
	return err
}

// refused is the claim of a key claimed before, refused.
func (f floor) refused(ctx context.Context, key string) error {
	_, err := f.claim(ctx, "IDEM#"+key)
	var refused *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &refused):
		return nil // its record came back with the refusal
	case err != nil:
		return fmt.Errorf("claim: %w", err)
	}
	return fmt.Errorf("%s: a claim refused was asked, and the key was never claimed", key)
}

// act is a refund, a capture or a void (kind) of the charge at key.
func (f floor) act(ctx context.Context, kind, key string) error {
	claim, err := f.claim(ctx, "IDEM#"+kind+"#"+key)
	if err != nil {
		return fmt.Errorf("claim: %w", err)
	}
	charge := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "CHARGE#" + key}}
	for _, pk := range []string{"CHARGE#" + key, "IDEM#" + key} {
		out, err := f.api.GetItem(ctx, &dynamodb.GetItemInput{TableName: f.table, Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}}, ConsistentRead: aws.Bool(true)})
		if err != nil || out.Item == nil {
			return fmt.Errorf("read %s: %v, %w", pk, out, err)
		}
	}
	balance := func(expr string) error {
		_, err := f.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: f.table, Key: charge, UpdateExpression: aws.String(expr),
			ConditionExpression:       aws.String("attribute_exists(pk)"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":a": &types.AttributeValueMemberN{Value: "1"}},
		})
		return err
	}
	if err := balance("ADD reserved :a"); err != nil {
		return fmt.Errorf("reserve: %w", err)
	}
	if err := post(ctx, f.client, f.url); err != nil {
		return err
	}
	if _, err := f.api.PutItem(ctx, &dynamodb.PutItemInput{TableName: f.table, Item: itemOf(strings.ToUpper(kind)+"#"+key, rowBytes), ConditionExpression: absent}); err != nil {
		return fmt.Errorf("%s row: %w", kind, err)
	}
	if err := balance("ADD " + settled[kind] + " :a"); err != nil {
		return fmt.Errorf("success: %w", err)
	}
	return f.complete(ctx, claim["pk"])
}

// settled names the charge's attribute each kind of act adds to on its
// success.
var settled = map[string]string{BenchRefund: "refunded", BenchCapture: "captured", BenchVoid: "voided"}

// complete is the completion's UpdateItem on the claim at pk, conditioned
// on its being in progress.
func (f floor) complete(ctx context.Context, pk types.AttributeValue) error {
	_, err := f.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: f.table, Key: map[string]types.AttributeValue{"pk": pk},
		UpdateExpression:         aws.String("SET #s = :s, #r = :r"),
		ConditionExpression:      aws.String("#s = :claimed"),
		ExpressionAttributeNames: map[string]string{"#s": "status", "#r": "response"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":s": &types.AttributeValueMemberS{Value: "COMPLETED"}, ":claimed": &types.AttributeValueMemberS{Value: "IN_PROGRESS"},
			":r": &types.AttributeValueMemberS{Value: strings.Repeat("r", completionBytes)},
		},
	})
	if err != nil {
		return fmt.Errorf("completion: %w", err)
	}
	return nil
}

// SDKQueueHandler is the SDK floor of the queue's commands: for each
// message of the batch a first execution's calls (as SDKHandler makes
// them) on the message's id as its key, concurrency messages at once, as
// the consumer processes a batch (deploy.ConsumerConcurrency); it answers
// that no message failed.
func SDKQueueHandler(api *dynamodb.Client, table, url string, concurrency int) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	f := floor{api: api, table: aws.String(table), url: url, client: &http.Client{}}
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		var wg sync.WaitGroup
		slots := make(chan struct{}, max(1, concurrency))
		errs := make([]error, len(ev.Records))
		for i, m := range ev.Records {
			wg.Go(func() {
				slots <- struct{}{}
				defer func() { <-slots }()
				errs[i] = f.firstExecution(ctx, m.MessageId)
			})
		}
		wg.Wait()
		return events.SQSEventResponse{}, errors.Join(errs...)
	}
}

// Answers reads the SDK floor's answers from EnvAnswer's value, which
// must give each path's (SDKPaths), each with its status.
func Answers(value string) (map[string]events.APIGatewayV2HTTPResponse, error) {
	var answers map[string]events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal([]byte(value), &answers); err != nil {
		return nil, fmt.Errorf("%s: not answers: %w", EnvAnswer, err)
	}
	for _, path := range SDKPaths {
		if answers[path].StatusCode == 0 {
			return nil, fmt.Errorf("%s: no answer with its status for %s", EnvAnswer, path)
		}
	}
	return answers, nil
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

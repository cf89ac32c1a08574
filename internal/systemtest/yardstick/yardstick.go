// Package yardstick is the floor BenchmarkFunctionCPU measures the charge
// function against: a Lambda handler that does no work but the charge's
// network round trips. For each invocation it makes as many plain net/http
// POSTs of a claim-sized body to its URL as the event's CallsHeader says
// (4 for a first execution: the claim, the acquirer, the ledger row, the
// completion; 1 for a replay), then answers a fixed 201. Its command
// (./bootstrap) is built and started as the charge function is
// (aws-lambda-go, setup.Main), so what the charge bootstrap spends above it
// is the SDK's, the engine's and the handler's.
//
// The SDK floor (SDKHandler) is the second yardstick: the same DynamoDB
// calls as the charge function's on each of its paths (a first execution,
// a replay, a request in flight, a refund), through aws-sdk-go-v2 with
// the functions' client, on items of the charge's sizes, and nothing else;
// it reads an event of the members and size of the charge function's
// (BenchmarkFunctionCPU records one of each path) and writes the answer it
// writes (EnvAnswer), as every function of these routes must. The queue's
// SDK floor (SDKQueueHandler) makes a first execution's calls for each
// message of the consumer's batch, as many at once as the consumer.
// What the charge bootstrap spends above it is the engine's and the
// handler's alone.
package yardstick

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/aws/aws-lambda-go/events"
)

const (
	// EnvURL names the variable holding the URL the round trips go to.
	EnvURL = "YARDSTICK_URL"
	// CallsHeader is the event header that says how many round trips to make.
	CallsHeader = "yardstick-calls"
)

// body is about the size of a claim's PutItem request.
var body = bytes.Repeat([]byte("x"), 700)

// Handler is the yardstick's handler, its round trips to url.
func Handler(url string) func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	client := &http.Client{}
	return func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		calls, err := strconv.Atoi(ev.Headers[CallsHeader])
		if err != nil {
			return events.APIGatewayV2HTTPResponse{}, fmt.Errorf("%s: %w", CallsHeader, err)
		}
		for range calls {
			if err := post(ctx, client, url); err != nil {
				return events.APIGatewayV2HTTPResponse{}, err
			}
		}
		return answer(), nil
	}
}

// answer is every yardstick's fixed 201.
func answer() events.APIGatewayV2HTTPResponse {
	return events.APIGatewayV2HTTPResponse{
		StatusCode: http.StatusCreated,
		Headers:    map[string]string{"Content-Type": "application/json"},
		Body:       `{"id":"ch_yardstick","status":"captured","amount":1000,"currency":"USD"}`,
	}
}

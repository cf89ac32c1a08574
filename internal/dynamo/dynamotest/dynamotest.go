// Package dynamotest connects tests to DynamoDB Local (or any endpoint named
// by the SDK's standard AWS_ENDPOINT_URL_DYNAMODB / AWS_ENDPOINT_URL
// variables) and gives each test a fresh table.
package dynamotest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"github.com/idempotent-payments/idempay/internal/dynamo"
)

// RequireEmulator fails the test when no endpoint variable is set, so a
// test never reaches a real account by accident: run the tests with
// `make test`, which starts DynamoDB Local.
func RequireEmulator(t testing.TB) {
	t.Helper()
	if os.Getenv("AWS_ENDPOINT_URL_DYNAMODB") == "" && os.Getenv("AWS_ENDPOINT_URL") == "" {
		t.Fatal("AWS_ENDPOINT_URL_DYNAMODB is not set: run `make test` (it starts DynamoDB Local), or `eval \"$(localstack/emulators.sh env)\"` after `make up`")
	}
}

// Client returns a DynamoDB client for the emulator (RequireEmulator).
func Client(t testing.TB, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	t.Helper()
	RequireEmulator(t)
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		t.Fatalf("load AWS config: %v", err)
	}
	return dynamo.NewClient(cfg, true, optFns...) // the table is DynamoDB Local's
}

var tables atomic.Int64

// NewTable creates a fresh table with TTL, as a single-region deployment
// has it, and deletes it when the test ends.
func NewTable(t testing.TB, client *dynamodb.Client) string {
	t.Helper()
	return NewTableFor(t, client, true)
}

// NewTableFor creates a fresh table with TTL or, without it, with the
// expiry index a multi-region table has (dynamo.CreateTable), and
// deletes it when the test ends.
func NewTableFor(t testing.TB, client *dynamodb.Client, ttl bool) string {
	t.Helper()
	name := fmt.Sprintf("idem-test-%d-%d", time.Now().UnixNano(), tables.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := dynamo.CreateTable(ctx, client, name, ttl); err != nil {
		t.Fatalf("create table: %v", err)
	}
	t.Cleanup(func() {
		_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)})
	})
	return name
}

// RoundTrips counts DynamoDB requests on the wire, by operation name.
// Retries count: the middleware sits after the retry loop.
type RoundTrips struct {
	mu   sync.Mutex
	byOp map[string]int
}

// Option installs the counter on a client.
func (c *RoundTrips) Option(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
		return stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc("countRoundTrips",
			func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
				c.mu.Lock()
				if c.byOp == nil {
					c.byOp = map[string]int{}
				}
				c.byOp[awsmiddleware.GetOperationName(ctx)]++
				c.mu.Unlock()
				return next.HandleDeserialize(ctx, in)
			}), middleware.After)
	})
}

// Take returns the counts since the last Take and resets them.
func (c *RoundTrips) Take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	got := c.byOp
	c.byOp = nil
	if got == nil {
		got = map[string]int{}
	}
	return got
}

package dynamotest

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idempotent-payments/idempay/internal/dynamo/conflictproxy"
)

// ConflictProxy is a conflictproxy.Proxy for one test: it answers the
// writes refuse chooses as a strongly consistent global table answers a
// write that races another region's. Option points a client at it.
type ConflictProxy struct{ *conflictproxy.Proxy }

// NewConflictProxy starts a proxy to target (an http URL) for the test's
// life.
func NewConflictProxy(t testing.TB, target string, refuse func(op string) bool) *ConflictProxy {
	t.Helper()
	p, err := conflictproxy.New(target, refuse)
	if err != nil {
		t.Fatalf("conflict proxy to %s: %v", target, err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return &ConflictProxy{p}
}

// Option points a DynamoDB client at the proxy.
func (p *ConflictProxy) Option(o *dynamodb.Options) { o.BaseEndpoint = aws.String(p.URL) }

package dynamotest

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// The writes ConflictProxy may refuse, by their DynamoDB operation.
var conflictable = map[string]bool{"PutItem": true, "UpdateItem": true, "DeleteItem": true}

// ConflictProxy stands in front of DynamoDB and answers the writes refuse
// chooses (PutItem, UpdateItem or DeleteItem, by operation name) with a
// ReplicatedWriteConflictException, without passing them on: what a
// strongly consistent global table answers a write that races another
// region's. Everything else passes through untouched. Option points a
// client at it.
type ConflictProxy struct {
	URL string
}

// NewConflictProxy starts a proxy to target (an http URL) for the test's
// life.
func NewConflictProxy(t testing.TB, target string, refuse func(op string) bool) *ConflictProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatalf("conflict proxy target %q: %v", target, err)
	}
	pass := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// X-Amz-Target is "DynamoDB_20120810.PutItem".
		_, op, _ := strings.Cut(r.Header.Get("X-Amz-Target"), ".")
		if conflictable[op] && refuse(op) {
			w.Header().Set("Content-Type", "application/x-amz-json-1.0")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"__type":"com.amazonaws.dynamodb.v20120810#ReplicatedWriteConflictException",` +
				`"message":"Replicated write conflict: another region is writing the item"}`))
			return
		}
		pass.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return &ConflictProxy{URL: srv.URL}
}

// Option points a DynamoDB client at the proxy.
func (p *ConflictProxy) Option(o *dynamodb.Options) { o.BaseEndpoint = aws.String(p.URL) }

package dynamo

import (
	"errors"
	"net"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// asReturned wraps err as the SDK returns an answer of status.
func asReturned(status int, err error) error {
	return &smithy.OperationError{ServiceID: "DynamoDB", OperationName: "PutItem", Err: &awshttp.ResponseError{
		ResponseError: &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}}, Err: err},
		RequestID:     "r-1",
	}}
}

// TestRefusedConditionFirst: a refused condition is not retried, as the
// standard retryer answers too; a throttle, a 500 and a reset connection
// are retried as the standard retryer retries them.
func TestRefusedConditionFirst(t *testing.T) {
	standard := retry.NewStandard()
	wrapped := retryRefusedConditionFirst(standard)
	if _, ok := wrapped.(refusedConditionFirst); !ok {
		t.Fatalf("the standard retryer is not wrapped: %T", wrapped)
	}
	for name, c := range map[string]struct {
		err  error
		want bool
	}{
		"refused condition": {asReturned(400, &types.ConditionalCheckFailedException{Message: aws.String("The conditional request failed")}), false},
		"throttle":          {asReturned(400, &smithy.GenericAPIError{Code: "ThrottlingException"}), true},
		"table throttle":    {asReturned(400, &types.ProvisionedThroughputExceededException{}), true},
		"500":               {asReturned(500, &smithy.GenericAPIError{Code: "InternalServerError"}), true},
		"reset connection":  {&smithy.OperationError{Err: &net.OpError{Op: "read", Err: errors.New("connection reset by peer")}}, true},
	} {
		if got, std := wrapped.IsErrorRetryable(c.err), standard.IsErrorRetryable(c.err); got != c.want || got != std {
			t.Errorf("%s: retried %t, the standard retryer %t, want %t", name, got, std, c.want)
		}
	}
}

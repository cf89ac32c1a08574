package dynamo

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	smithyendpoints "github.com/aws/smithy-go/endpoints"
)

// countingResolver counts the resolutions it makes.
type countingResolver struct {
	dynamodb.EndpointResolverV2
	calls int
}

func (c *countingResolver) ResolveEndpoint(ctx context.Context, p dynamodb.EndpointParameters) (smithyendpoints.Endpoint, error) {
	c.calls++
	return c.EndpointResolverV2.ResolveEndpoint(ctx, p)
}

// TestEndpointsOnce: each set of parameters is resolved once, to what
// the SDK's resolver answers for it (an emulator's URL, a region's
// endpoint, an account's), and another set is resolved anew; a set the
// resolver refuses is refused again, never kept.
func TestEndpointsOnce(t *testing.T) {
	ctx := context.Background()
	inner := &countingResolver{EndpointResolverV2: dynamodb.NewDefaultEndpointResolverV2()}
	once := EndpointsOnce(inner)
	for _, c := range []struct {
		params dynamodb.EndpointParameters
		want   string
	}{
		{dynamodb.EndpointParameters{Region: aws.String("us-east-1"), Endpoint: aws.String("http://127.0.0.1:8000")}, "http://127.0.0.1:8000"},
		{dynamodb.EndpointParameters{Region: aws.String("us-east-1")}, "https://dynamodb.us-east-1.amazonaws.com"},
		{dynamodb.EndpointParameters{Region: aws.String("sa-east-1")}, "https://dynamodb.sa-east-1.amazonaws.com"},
		{dynamodb.EndpointParameters{Region: aws.String("us-east-1"), AccountId: aws.String("111122223333"), AccountIdEndpointMode: aws.String("required")},
			"https://111122223333.ddb.us-east-1.amazonaws.com"},
	} {
		before := inner.calls
		for range 3 {
			got, err := once.ResolveEndpoint(ctx, c.params)
			if err != nil || got.URI.String() != c.want {
				t.Fatalf("%+v: %s, %v; want %s", c.params, got.URI.String(), err, c.want)
			}
		}
		if inner.calls != before+1 {
			t.Fatalf("%+v: resolved %d times for 3 calls", c.params, inner.calls-before)
		}
	}
	refused := dynamodb.EndpointParameters{Region: aws.String("us-east-1"), UseFIPS: aws.Bool(true), Endpoint: aws.String("http://127.0.0.1:8000")}
	for range 2 {
		if _, err := once.ResolveEndpoint(ctx, refused); err == nil {
			t.Fatal("FIPS with a custom endpoint resolved")
		}
	}
}

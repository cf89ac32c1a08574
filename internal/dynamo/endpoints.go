package dynamo

import (
	"context"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	smithyendpoints "github.com/aws/smithy-go/endpoints"
)

// EndpointsOnce wraps resolver so each set of parameters is resolved once:
// the SDK evaluates DynamoDB's endpoint rules on every call, though a
// function's parameters (its region, AWS_ENDPOINT_URL_DYNAMODB, its
// account) are the same for every call it makes. The answer for a set is
// the resolver's own, errors are not kept, and the endpoint still comes
// from the SDK's standard variables, which the emulators and LocalStack
// need.
func EndpointsOnce(resolver dynamodb.EndpointResolverV2) dynamodb.EndpointResolverV2 {
	return &endpointsOnce{resolver: resolver, resolved: map[endpointKey]smithyendpoints.Endpoint{}}
}

type endpointsOnce struct {
	resolver dynamodb.EndpointResolverV2
	mu       sync.RWMutex
	resolved map[endpointKey]smithyendpoints.Endpoint
}

// endpointKey is every field of dynamodb.EndpointParameters, by value.
type endpointKey struct {
	region, endpoint, accountID, accountIDMode, resourceARN, resourceARNs string
	dualStack, fips                                                       bool
}

func keyOf(p dynamodb.EndpointParameters) endpointKey {
	return endpointKey{
		region: aws.ToString(p.Region), endpoint: aws.ToString(p.Endpoint), accountID: aws.ToString(p.AccountId),
		accountIDMode: aws.ToString(p.AccountIdEndpointMode), resourceARN: aws.ToString(p.ResourceArn), resourceARNs: strings.Join(p.ResourceArnList, "\x00"),
		dualStack: aws.ToBool(p.UseDualStack), fips: aws.ToBool(p.UseFIPS),
	}
}

// ResolveEndpoint implements dynamodb.EndpointResolverV2. The SDK copies
// the endpoint it is given before it changes it, so one is handed out to
// every call.
func (e *endpointsOnce) ResolveEndpoint(ctx context.Context, p dynamodb.EndpointParameters) (smithyendpoints.Endpoint, error) {
	key := keyOf(p)
	e.mu.RLock()
	endpoint, ok := e.resolved[key]
	e.mu.RUnlock()
	if ok {
		return endpoint, nil
	}
	endpoint, err := e.resolver.ResolveEndpoint(ctx, p)
	if err != nil {
		return endpoint, err
	}
	e.mu.Lock()
	e.resolved[key] = endpoint
	e.mu.Unlock()
	return endpoint, nil
}

// NewClient is the functions' DynamoDB client. With skipResponseCRC32
// (deploy.EnvSkipResponseCRC32, for DynamoDB Local) it does not check the
// x-amz-crc32 of answers: DynamoDB Local sends none that matches on an
// error answer, and the SDK then writes a warning, outside the JSON log,
// for every refused condition, that is for every replay. DynamoDB sends
// it, and the deployed functions keep the check. Its endpoint is resolved
// once (EndpointsOnce), and its retryer knows a refused condition first
// (refusedConditionFirst). optFns apply after.
func NewClient(awsCfg aws.Config, skipResponseCRC32 bool, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	lean := func(o *dynamodb.Options) {
		o.DisableValidateResponseChecksum = skipResponseCRC32
		o.EndpointResolverV2 = EndpointsOnce(dynamodb.NewDefaultEndpointResolverV2())
		o.Retryer = retryRefusedConditionFirst(o.Retryer)
	}
	return dynamodb.NewFromConfig(awsCfg, append([]func(*dynamodb.Options){lean}, optFns...)...)
}

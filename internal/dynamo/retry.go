package dynamo

import (
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// refusedConditionFirst is the client's retryer, answering first that a
// write refused by its condition is not to be retried. That is the
// retryer's own answer too, but it comes last among its checks, after one
// that formats the error's whole text twice to look for a broken
// connection in it: work done on every replay, in-flight answer and lost
// race, where the engine expects the refusal. Throttles, 5xx and broken
// connections go to the retryer as before.
type refusedConditionFirst struct{ aws.RetryerV2 }

// IsErrorRetryable implements aws.Retryer.
func (r refusedConditionFirst) IsErrorRetryable(err error) bool {
	var refused *types.ConditionalCheckFailedException
	if errors.As(err, &refused) {
		return false
	}
	return r.RetryerV2.IsErrorRetryable(err)
}

// retryRefusedConditionFirst wraps retryer in refusedConditionFirst when
// it is a RetryerV2 (the SDK's standard retryer is), and leaves it as it is
// otherwise.
func retryRefusedConditionFirst(retryer aws.Retryer) aws.Retryer {
	if v2, ok := retryer.(aws.RetryerV2); ok {
		return refusedConditionFirst{v2}
	}
	return retryer
}

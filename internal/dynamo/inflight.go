package dynamo

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/tabledef"
)

// shardKey is the in-flight index's partition key for shard n.
func shardKey(n int) string { return strconv.Itoa(n) }

// ListInFlight implements idem.Store with one Query of the sparse in-flight
// index (partition inflight_shard, sort lease_expires_at). The page goes on
// from q.After by rebuilding its index key as ExclusiveStartKey.
func (s *Store) ListInFlight(ctx context.Context, q idem.InFlightQuery) ([]idem.InFlight, bool, error) {
	if err := q.Validate(); err != nil {
		return nil, false, err
	}
	shard := shardKey(q.Shard)
	if q.Held {
		shard = heldShard
	}
	in := &dynamodb.QueryInput{
		TableName:              aws.String(s.table),
		IndexName:              aws.String(tabledef.InflightIndex),
		KeyConditionExpression: aws.String("inflight_shard = :shard AND lease_expires_at < :cutoff"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":shard": str(shard), ":cutoff": num(q.EndedBefore.UnixMilli()),
		},
		Limit: aws.Int32(int32(q.Limit)),
	}
	if q.After != nil {
		in.ExclusiveStartKey = map[string]types.AttributeValue{
			tabledef.KeyAttribute: str(q.After.PK), "inflight_shard": str(shard), "lease_expires_at": num(q.After.LeaseExpiresAt.UnixMilli()),
		}
	}
	out, err := s.api.Query(ctx, in)
	if err != nil {
		return nil, false, fmt.Errorf("query shard %s: %w", shard, err)
	}
	page := make([]idem.InFlight, 0, len(out.Items))
	for _, av := range out.Items {
		var it record
		if err := attributevalue.UnmarshalMap(av, &it); err != nil {
			return nil, false, fmt.Errorf("decode index entry: %w", err)
		}
		e := idem.InFlight{PK: it.PK, LeaseToken: it.LeaseToken, LeaseExpiresAt: time.UnixMilli(it.LeaseExpiresAt), ReconcileAttempts: it.ReconcileAttempts}
		if it.StaleAt != 0 {
			e.StaleAt = time.UnixMilli(it.StaleAt)
		}
		page = append(page, e)
	}
	return page, out.LastEvaluatedKey != nil, nil
}

// Flag implements idem.Store with one UpdateItem fenced on the lease token
// and the stale_at that was listed; a record held since it was listed is
// not flagged.
func (s *Store) Flag(ctx context.Context, e idem.InFlight, now time.Time) error {
	values := heldValues(e.LeaseToken)
	values[":now"] = num(now.UnixMilli())
	values[":one"] = num(1)
	values[":zero"] = num(0)
	cond := held + " AND attribute_not_exists(#hold) AND attribute_not_exists(stale_at)"
	if !e.StaleAt.IsZero() {
		cond = held + " AND attribute_not_exists(#hold) AND stale_at = :prev"
		values[":prev"] = num(e.StaleAt.UnixMilli())
	}
	_, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       pkKey(e.PK),
		UpdateExpression:          aws.String("SET stale_at = :now, reconcile_attempts = if_not_exists(reconcile_attempts, :zero) + :one"),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  map[string]string{"#status": "status", "#hold": "hold"},
		ExpressionAttributeValues: values,
	})
	return fenceError(err)
}

// ListExpired implements idem.Store with one Query of the sparse expiry
// index (partition expiry_bucket, sort expires_at), which only a table
// without TTL has (tabledef.For). The page goes on from q.After as
// ListInFlight's does.
func (s *Store) ListExpired(ctx context.Context, q idem.ExpiredQuery) ([]idem.Expired, bool, error) {
	if err := q.Validate(); err != nil {
		return nil, false, err
	}
	in := &dynamodb.QueryInput{
		TableName:              aws.String(s.table),
		IndexName:              aws.String(tabledef.ExpiryIndex),
		KeyConditionExpression: aws.String(tabledef.ExpiryBucketAttribute + " = :bucket AND " + tabledef.TTLAttribute + " < :before"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":bucket": str(q.Bucket), ":before": num(q.Before.Unix()),
		},
		Limit: aws.Int32(int32(q.Limit)),
	}
	if q.After != nil {
		in.ExclusiveStartKey = map[string]types.AttributeValue{
			tabledef.KeyAttribute: str(q.After.PK), tabledef.ExpiryBucketAttribute: str(q.Bucket), tabledef.TTLAttribute: num(q.After.ExpiresAt.Unix()),
		}
	}
	out, err := s.api.Query(ctx, in)
	if err != nil {
		return nil, false, fmt.Errorf("query expiry bucket %s: %w", q.Bucket, err)
	}
	page := make([]idem.Expired, 0, len(out.Items))
	for _, av := range out.Items {
		var it record
		if err := attributevalue.UnmarshalMap(av, &it); err != nil {
			return nil, false, fmt.Errorf("decode index entry: %w", err)
		}
		page = append(page, idem.Expired{PK: it.PK, ExpiresAt: time.Unix(it.ExpiresAt, 0)})
	}
	return page, out.LastEvaluatedKey != nil, nil
}

// Purge implements idem.Store with one DeleteItem conditioned on the
// listed expires_at, still past: a key claimed afresh has a later one, and
// a held record none.
func (s *Store) Purge(ctx context.Context, e idem.Expired, now time.Time) error {
	_, err := s.api.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:           aws.String(s.table),
		Key:                 pkKey(e.PK),
		ConditionExpression: aws.String(tabledef.TTLAttribute + " = :listed AND " + tabledef.TTLAttribute + " < :now"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":listed": num(e.ExpiresAt.Unix()), ":now": num(now.Unix()),
		},
	})
	if err := fenceError(err); errors.Is(err, idem.ErrLeaseLost) {
		return idem.ErrNotExpired
	} else if err != nil {
		return err
	}
	return nil
}

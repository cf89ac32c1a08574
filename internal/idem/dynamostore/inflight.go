package dynamostore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// InFlight is one entry of the sparse in-flight index: an in-progress
// record, as the sweeper sees it.
type InFlight struct {
	PK                string
	LeaseToken        string
	LeaseExpiresAt    time.Time
	StaleAt           time.Time // zero until first flagged
	ReconcileAttempts int
}

// Cursor continues a paged index query; the zero Cursor starts one.
type Cursor struct {
	next map[string]types.AttributeValue
}

// Done reports whether the query has no more pages.
func (c Cursor) Done() bool { return c.next == nil }

// IndexAPI is the part of the DynamoDB client the in-flight index needs.
type IndexAPI interface {
	Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

// Index reads and flags the in-flight index of a table.
type Index struct {
	api   IndexAPI
	table string
}

// NewIndex returns the in-flight index of table.
func NewIndex(api IndexAPI, table string) *Index { return &Index{api: api, table: table} }

// EndedBefore returns one page (up to limit) of shard's records whose lease
// ended before cutoff, oldest lease first. Pass the returned cursor to go on;
// the index is eventually consistent, so a record just completed may still
// appear (Flag's fence then refuses it).
func (x *Index) EndedBefore(ctx context.Context, shard string, cutoff time.Time, limit int32, from Cursor) ([]InFlight, Cursor, error) {
	out, err := x.api.Query(ctx, &dynamodb.QueryInput{
		TableName:              aws.String(x.table),
		IndexName:              aws.String(InflightIndex),
		KeyConditionExpression: aws.String("inflight_shard = :shard AND lease_expires_at < :cutoff"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":shard": str(shard), ":cutoff": num(cutoff.UnixMilli()),
		},
		Limit:             aws.Int32(limit),
		ExclusiveStartKey: from.next,
	})
	if err != nil {
		return nil, Cursor{}, fmt.Errorf("query shard %s: %w", shard, err)
	}
	entries := make([]InFlight, 0, len(out.Items))
	for _, av := range out.Items {
		var it record
		if err := attributevalue.UnmarshalMap(av, &it); err != nil {
			return nil, Cursor{}, fmt.Errorf("decode index entry: %w", err)
		}
		e := InFlight{PK: it.PK, LeaseToken: it.LeaseToken, LeaseExpiresAt: time.UnixMilli(it.LeaseExpiresAt), ReconcileAttempts: it.ReconcileAttempts}
		if it.StaleAt != 0 {
			e.StaleAt = time.UnixMilli(it.StaleAt)
		}
		entries = append(entries, e)
	}
	return entries, Cursor{next: out.LastEvaluatedKey}, nil
}

// Flag marks e stale at now and counts one more reconcile attempt, fenced on
// the lease token and the stale_at that were read: of two sweepers that read
// the same entry, one flags it. It returns idem.ErrLeaseLost when the record
// changed since.
func (x *Index) Flag(ctx context.Context, e InFlight, now time.Time) error {
	values := heldValues(e.LeaseToken)
	values[":now"] = num(now.UnixMilli())
	values[":one"] = num(1)
	values[":zero"] = num(0)
	cond := held + " AND attribute_not_exists(stale_at)"
	if !e.StaleAt.IsZero() {
		cond = held + " AND stale_at = :prev"
		values[":prev"] = num(e.StaleAt.UnixMilli())
	}
	_, err := x.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(x.table),
		Key:                       pkKey(e.PK),
		UpdateExpression:          aws.String("SET stale_at = :now, reconcile_attempts = if_not_exists(reconcile_attempts, :zero) + :one"),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeNames:  statusName,
		ExpressionAttributeValues: values,
	})
	return fenceError(err)
}

// Shards lists the partition keys of the in-flight index for n shards, as
// idem.Guard assigns them.
func Shards(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = strconv.Itoa(i)
	}
	return out
}

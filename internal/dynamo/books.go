package dynamo

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/operations"
	"github.com/idempotent-payments/idempay/internal/tabledef"
)

// In the multi-region mode a row's event is published once, by the region
// that wrote it, and the ledger keeps the books of that: a row with a
// region is listed in the unpublished index (tabledef.UnpublishedIndex)
// until MarkPublished, and each region's heartbeat says whether it still
// runs. A region that finds another's rows unpublished and its heartbeat
// stale publishes them itself (package publish).

// Books are the charge.Books of the events' publication on the table
// (Table.Books): the unpublished index and the regions' heartbeats.
type Books struct {
	api   API
	table string
}

// shardOf is the unpublished index's partition of row id's row (a
// charge's or a refund's): the in-flight index's sharding (idem.ShardOf),
// since each row writes it twice too (listed, then unlisted).
func shardOf(id string) string { return fmt.Sprintf("%02d", idem.ShardOf(rowKey(id))) }

// pageSize is how many index entries one query of the listing reads (a
// variable for the test of the paging).
var pageSize int32 = 100

// MarkPublished unlists row id's row, a charge's or a refund's: its event
// is published. One UpdateItem, conditioned on the row's existence
// (charge.ErrNoCharge without it); marking a row twice changes nothing. It may fail with
// idem.ErrWriteConflict, without effect.
func (b *Books) MarkPublished(ctx context.Context, id string) error {
	_, err := b.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(b.table),
		Key:                 map[string]types.AttributeValue{tabledef.KeyAttribute: &types.AttributeValueMemberS{Value: rowKey(id)}},
		UpdateExpression:    aws.String("REMOVE " + tabledef.UnpublishedShardAttribute + ", " + tabledef.UnpublishedSinceAttribute),
		ConditionExpression: aws.String("attribute_exists(" + tabledef.KeyAttribute + ")"),
	})
	var missing *types.ConditionalCheckFailedException
	if errors.As(err, &missing) {
		return fmt.Errorf("mark %s published: %w", idem.Ref(id), charge.ErrNoCharge)
	}
	if err != nil {
		return fmt.Errorf("mark %s published: %w", idem.Ref(id), writeError(err))
	}
	return nil
}

// Unpublished lists the rows written before before that are still
// unpublished, shard by shard from a shard drawn at random (so a run that
// stops at its deadline leaves a different part unread each time), oldest
// first within a shard, reading pages of the index as the caller goes on.
// An entry that does not read is yielded with its error and the listing
// goes on; a query's error ends it.
func (b *Books) Unpublished(ctx context.Context, before time.Time) iter.Seq2[charge.Unpublished, error] {
	cond := tabledef.UnpublishedShardAttribute + " = :shard AND " + tabledef.UnpublishedSinceAttribute + " < :before"
	return listShards(ctx, b.api, b.table, tabledef.UnpublishedIndex, "unpublished rows", cond, before.UnixMilli(), unpublishedOf)
}

// listShards lists the sparse index's entries that cond (its key
// condition on :shard and :before, which is before) admits, shard by
// shard from a shard drawn at random (so a run that stops at its deadline
// leaves a different part unread each time), in the index's order within
// a shard, reading pages as the caller goes on. An entry that does not
// read (read) is yielded with its error and the listing goes on; a
// query's error ends it.
func listShards[T any](ctx context.Context, api API, table, index, what, cond string, before int64,
	read func(map[string]types.AttributeValue) (T, error)) iter.Seq2[T, error] {
	return listPartitions(ctx, api, table, index, what, cond, "", before, pageSize, read)
}

// listPartitions is listShards over partitions named prefix and a shard
// ("2026-12-07#05" for the day index's), limit entries a Query (none:
// DynamoDB's 1 MB page, when 0).
func listPartitions[T any](ctx context.Context, api API, table, index, what, cond, prefix string, before int64, limit int32,
	read func(map[string]types.AttributeValue) (T, error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		first := rand.IntN(idem.Shards)
		for i := range idem.Shards {
			shard := (first + i) % idem.Shards
			var start map[string]types.AttributeValue
			for {
				out, err := api.Query(ctx, &dynamodb.QueryInput{
					TableName:              aws.String(table),
					IndexName:              aws.String(index),
					KeyConditionExpression: aws.String(cond),
					ExpressionAttributeValues: map[string]types.AttributeValue{
						":shard":  &types.AttributeValueMemberS{Value: fmt.Sprintf("%s%02d", prefix, shard)},
						":before": &types.AttributeValueMemberN{Value: strconv.FormatInt(before, 10)},
					},
					Limit: limitOf(limit), ExclusiveStartKey: start,
				})
				if err != nil {
					var none T
					yield(none, fmt.Errorf("list %s, shard %d: %w", what, shard, err))
					return
				}
				for _, item := range out.Items {
					if !yield(read(item)) {
						return
					}
				}
				if start = out.LastEvaluatedKey; start == nil {
					break
				}
			}
		}
	}
}

// limitOf is a Query's Limit: none for 0.
func limitOf(limit int32) *int32 {
	if limit == 0 {
		return nil
	}
	return aws.Int32(limit)
}

// unpublishedOf reads an entry of the unpublished index.
func unpublishedOf(item map[string]types.AttributeValue) (charge.Unpublished, error) {
	pk, _ := item[tabledef.KeyAttribute].(*types.AttributeValueMemberS)
	region, _ := item[tabledef.RegionAttribute].(*types.AttributeValueMemberS)
	since, _ := item[tabledef.UnpublishedSinceAttribute].(*types.AttributeValueMemberN)
	var reg operations.Registration
	if pk != nil {
		reg, _ = operations.ByRowKey(pk.Value)
	}
	if reg.Name == "" || region == nil || since == nil {
		return charge.Unpublished{}, fmt.Errorf("%w: an unpublished index entry without its row's key, region or time", charge.ErrUnreadableCharge)
	}
	ms, err := strconv.ParseInt(since.Value, 10, 64)
	if err != nil {
		return charge.Unpublished{}, fmt.Errorf("%w: %s: %w", charge.ErrUnreadableCharge, tabledef.UnpublishedSinceAttribute, err)
	}
	id := strings.TrimPrefix(pk.Value, reg.RowKeyPrefix)
	return charge.Unpublished{ID: id, Region: region.Value, Since: time.UnixMilli(ms).UTC()}, nil
}

// heartbeatKey is the key of region's heartbeat item.
func heartbeatKey(region string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{tabledef.KeyAttribute: &types.AttributeValueMemberS{Value: tabledef.HeartbeatPrefix + region}}
}

// Beat records that region runs at at: one PutItem of its heartbeat item.
// It may fail with idem.ErrWriteConflict, without effect.
func (b *Books) Beat(ctx context.Context, region string, at time.Time) error {
	item := heartbeatKey(region)
	item[tabledef.RegionAttribute] = &types.AttributeValueMemberS{Value: region}
	item[tabledef.BeatAttribute] = &types.AttributeValueMemberN{Value: strconv.FormatInt(at.UnixMilli(), 10)}
	if _, err := b.api.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(b.table), Item: item}); err != nil {
		return fmt.Errorf("heartbeat of %s: %w", region, writeError(err))
	}
	return nil
}

// LastBeat is region's last heartbeat, read strongly consistently; the
// zero time when it has none.
func (b *Books) LastBeat(ctx context.Context, region string) (time.Time, error) {
	out, err := b.api.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(b.table), Key: heartbeatKey(region), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return time.Time{}, fmt.Errorf("heartbeat of %s: %w", region, err)
	}
	if out.Item == nil {
		return time.Time{}, nil
	}
	at, _ := out.Item[tabledef.BeatAttribute].(*types.AttributeValueMemberN)
	if at == nil {
		return time.Time{}, fmt.Errorf("heartbeat of %s: no %s", region, tabledef.BeatAttribute)
	}
	ms, err := strconv.ParseInt(at.Value, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("heartbeat of %s: %w", region, err)
	}
	return time.UnixMilli(ms).UTC(), nil
}

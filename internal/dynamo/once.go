package dynamo

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idempotent-payments/idempay/internal/tabledef"
)

// putOnce writes item, an item of a row written once (a ledger row, a
// refund row), unless an item with its key pk exists: one PutItem
// conditioned on the key's absence. exists says it did; the existing item
// comes back in the same call (ReturnValuesOnConditionCheckFailure
// ALL_OLD), or, where it does not, is read (old nil only if it is gone
// again). A write conflict wraps idem.ErrWriteConflict.
func putOnce(ctx context.Context, api API, table, pk string, item any) (old map[string]types.AttributeValue, exists bool, err error) {
	av, err := attributevalue.MarshalMap(item)
	if err != nil {
		return nil, false, fmt.Errorf("encode: %w", err)
	}
	_, err = api.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           aws.String(table),
		Item:                                av,
		ConditionExpression:                 aws.String("attribute_not_exists(" + tabledef.KeyAttribute + ")"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var conflict *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &conflict) && conflict.Item != nil:
		return conflict.Item, true, nil
	case errors.As(err, &conflict): // ALL_OLD should have returned it: read it
		old, err := getItem(ctx, api, table, pk)
		return old, true, err
	case err != nil:
		return nil, false, writeError(err)
	}
	return nil, false, nil
}

// getItem is the item under pk, read strongly consistent; nil when there
// is none.
func getItem(ctx context.Context, api API, table, pk string) (map[string]types.AttributeValue, error) {
	out, err := api.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: pkKey(pk), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, err
	}
	return out.Item, nil
}

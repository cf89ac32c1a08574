package dynamo

// The markers at a row's key (DESIGN §4): a charge's held marker, written
// before its record is held for an operator, and the voided marker an
// operator's void-confirmed writes before it releases a record, after
// which no row of that intent can be written. This file is the one place
// that knows their layout and the conditions that order a row's write
// against them; the ledger and the refund rows write through putRow.

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

// rowMarker is a marker's item: its type (tabledef.HeldMarkerType or
// tabledef.VoidedMarkerType) and, for a held marker, the held record's
// account and idempotency key. It has no expiry and no unpublished
// listing, so neither the purge nor the books ever list it, and the
// stream filters pass no change of it.
type rowMarker struct {
	PK             string `dynamodbav:"pk"`
	Type           string `dynamodbav:"type"`
	Account        string `dynamodbav:"account,omitempty"`
	IdempotencyKey string `dynamodbav:"idempotency_key,omitempty"`
}

// errVoided: a row's write met the voided marker and wrote nothing. The
// ledgers return it as their own sentinel (charge.ErrVoided,
// refund.ErrVoided).
var errVoided = errors.New("the key holds the voided marker")

// heldRowTries is how many times putRow puts a row that meets a held
// marker it then deletes: the marker goes once, unless a hold writes it
// again in between.
const heldRowTries = 3

// itemType is an item's type attribute, "" when it has none.
func itemType(item map[string]types.AttributeValue) string {
	t, _ := item[tabledef.TypeAttribute].(*types.AttributeValueMemberS)
	if t == nil {
		return ""
	}
	return t.Value
}

// putRow writes item, a row written once, under pk unless something is
// there (putOnce). An existing row comes back (exists). A voided marker
// refuses the row: errVoided, nothing written. A held marker gives way:
// it is deleted, conditioned on being a held marker still, and the row is
// put again, so the row is an insert like any other (its stream record is
// the row's event). Each put is one PutItem, each delete one DeleteItem.
func putRow(ctx context.Context, api API, table, pk string, item any) (old map[string]types.AttributeValue, exists bool, err error) {
	for range heldRowTries {
		old, exists, err := putOnce(ctx, api, table, pk, item)
		switch {
		case err != nil || !exists:
			return old, exists, err
		case old == nil: // the item that refused the put is gone again
			continue
		}
		switch itemType(old) {
		case tabledef.VoidedMarkerType:
			return nil, false, errVoided
		case tabledef.HeldMarkerType:
			if err := deleteHeldMarker(ctx, api, table, pk); err != nil {
				return nil, false, err
			}
			continue
		}
		return old, true, nil
	}
	return nil, false, fmt.Errorf("a held marker stood in the row's way %d times", heldRowTries)
}

// deleteHeldMarker deletes the held marker under pk, if it is one still:
// one DeleteItem conditioned on the item's type; a refused condition
// (another writer's row, a void's marker, or nothing) is no error.
func deleteHeldMarker(ctx context.Context, api API, table, pk string) error {
	_, err := api.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(table),
		Key:                       pkKey(pk),
		ConditionExpression:       aws.String("#type = :held"),
		ExpressionAttributeNames:  map[string]string{"#type": tabledef.TypeAttribute},
		ExpressionAttributeValues: map[string]types.AttributeValue{":held": &types.AttributeValueMemberS{Value: tabledef.HeldMarkerType}},
	})
	var refused *types.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &refused) {
		return fmt.Errorf("delete the held marker: %w", writeError(err))
	}
	return nil
}

// putHeldMarker writes the held marker under pk, naming account and key,
// unless anything is there (a row, or a marker): one PutItem conditioned
// on the key's absence, whose refusal is no error.
func putHeldMarker(ctx context.Context, api API, table, pk, account, key string) error {
	av, err := attributevalue.MarshalMap(rowMarker{PK: pk, Type: tabledef.HeldMarkerType, Account: account, IdempotencyKey: key})
	if err != nil {
		return fmt.Errorf("encode the held marker: %w", err)
	}
	_, err = api.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:           aws.String(table),
		Item:                av,
		ConditionExpression: aws.String("attribute_not_exists(" + tabledef.KeyAttribute + ")"),
	})
	var refused *types.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &refused) {
		return fmt.Errorf("put the held marker: %w", writeError(err))
	}
	return nil
}

// putVoidedMarker writes the voided marker under pk, over nothing, a held
// marker or a voided marker, and over nothing else: one PutItem whose
// condition decides. row reports that the key holds something else (a
// row), and then nothing was written.
func putVoidedMarker(ctx context.Context, api API, table, pk string) (row bool, err error) {
	av, err := attributevalue.MarshalMap(rowMarker{PK: pk, Type: tabledef.VoidedMarkerType})
	if err != nil {
		return false, fmt.Errorf("encode the voided marker: %w", err)
	}
	_, err = api.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                aws.String(table),
		Item:                     av,
		ConditionExpression:      aws.String("attribute_not_exists(" + tabledef.KeyAttribute + ") OR #type IN (:held, :voided)"),
		ExpressionAttributeNames: map[string]string{"#type": tabledef.TypeAttribute},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":held":   &types.AttributeValueMemberS{Value: tabledef.HeldMarkerType},
			":voided": &types.AttributeValueMemberS{Value: tabledef.VoidedMarkerType},
		},
	})
	var refused *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &refused):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("put the voided marker: %w", writeError(err))
	}
	return false, nil
}

// heldMarkerOf reads a held marker's item.
func heldMarkerOf(item map[string]types.AttributeValue) (rowMarker, error) {
	var m rowMarker
	if err := attributevalue.UnmarshalMap(item, &m); err != nil {
		return rowMarker{}, err
	}
	if m.Type != tabledef.HeldMarkerType || m.Account == "" || m.IdempotencyKey == "" {
		return rowMarker{}, errors.New("not a held marker")
	}
	return m, nil
}

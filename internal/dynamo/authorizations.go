package dynamo

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idempotent-payments/idempay/internal/capture"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/tabledef"
)

// Authorizations are the capture.Authorizations on the table
// (Table.Authorizations): the authorizations index
// (tabledef.AuthorizationIndex), which lists the ledger row of every
// authorization (Ledger.Write) until Unlist.
type Authorizations struct {
	api   API
	table string
}

// Lapsed implements capture.Authorizations: the index's entries whose
// expiry is at or before before, shard by shard (listShards), earliest
// expiry first within a shard.
func (a *Authorizations) Lapsed(ctx context.Context, before time.Time) iter.Seq2[capture.Lapsed, error] {
	cond := tabledef.AuthorizationShardAttribute + " = :shard AND " + tabledef.AuthorizationExpiresAttribute + " <= :before"
	return listShards(ctx, a.api, a.table, tabledef.AuthorizationIndex, "lapsed authorizations", cond, before.UnixMilli(), lapsedOf)
}

// lapsedOf reads an entry of the authorizations index.
func lapsedOf(item map[string]types.AttributeValue) (capture.Lapsed, error) {
	pk, _ := item[tabledef.KeyAttribute].(*types.AttributeValueMemberS)
	expires, _ := item[tabledef.AuthorizationExpiresAttribute].(*types.AttributeValueMemberN)
	amount, _ := item[tabledef.AmountAttribute].(*types.AttributeValueMemberN)
	if pk == nil || expires == nil || amount == nil || !strings.HasPrefix(pk.Value, tabledef.LedgerPrefix) {
		return capture.Lapsed{}, errors.New("an authorizations index entry without its row's key, expiry or amount")
	}
	ms, err := strconv.ParseInt(expires.Value, 10, 64)
	if err != nil {
		return capture.Lapsed{}, fmt.Errorf("%s: %w", tabledef.AuthorizationExpiresAttribute, err)
	}
	n, err := strconv.ParseInt(amount.Value, 10, 64)
	if err != nil || n <= 0 {
		return capture.Lapsed{}, fmt.Errorf("%s %q: want a positive number", tabledef.AmountAttribute, amount.Value)
	}
	return capture.Lapsed{ChargeID: strings.TrimPrefix(pk.Value, tabledef.LedgerPrefix), Authorized: n, ExpiresAt: time.UnixMilli(ms).UTC()}, nil
}

// Unlist implements capture.Authorizations: one UpdateItem that removes
// the row's index key, conditioned on the row's existence, and, for an
// authorization closed at its expiry, sets tabledef.ExpiredAttribute (the
// caller's time, expired) where it is absent: the one change of a row after
// its insert that makes an event, charge.expired. Neither touches what
// the row says.
func (a *Authorizations) Unlist(ctx context.Context, chargeID string, expired time.Time) error {
	in := &dynamodb.UpdateItemInput{
		TableName:           aws.String(a.table),
		Key:                 map[string]types.AttributeValue{tabledef.KeyAttribute: &types.AttributeValueMemberS{Value: Key(chargeID)}},
		UpdateExpression:    aws.String("REMOVE " + tabledef.AuthorizationShardAttribute),
		ConditionExpression: aws.String("attribute_exists(" + tabledef.KeyAttribute + ")"),
	}
	if !expired.IsZero() { // once: a later unlist finds the mark, and its change makes no event
		in.UpdateExpression = aws.String("SET " + tabledef.ExpiredAttribute + " = if_not_exists(" + tabledef.ExpiredAttribute + ", :at) " + *in.UpdateExpression)
		in.ExpressionAttributeValues = map[string]types.AttributeValue{":at": &types.AttributeValueMemberN{Value: strconv.FormatInt(expired.UnixMilli(), 10)}}
	}
	_, err := a.api.UpdateItem(ctx, in)
	var missing *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &missing):
		return nil // no row: nothing listed
	case err != nil:
		return fmt.Errorf("unlist %s: %w", idem.Ref(chargeID), writeError(err))
	}
	return nil
}

package dynamo

// The refund rows: one item per refund the acquirer decided, under
// tabledef.RefundPrefix + the refund id, without TTL. This file is the one
// place that knows their key and layout.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/refund"
	"github.com/idempotent-payments/idempay/internal/tabledef"
)

// refundRowType tells a refund row from any other item in a scan.
const refundRowType = "refund"

type refundRow struct {
	PK               string `dynamodbav:"pk"`
	Type             string `dynamodbav:"type"`
	ID               string `dynamodbav:"id"`
	Account          string `dynamodbav:"account"`
	ChargeID         string `dynamodbav:"charge_id"`
	IdempotencyKey   string `dynamodbav:"idempotency_key"`
	Source           string `dynamodbav:"source,omitempty"`
	Status           string `dynamodbav:"status"`
	DeclineCode      string `dynamodbav:"decline_code,omitempty"`
	Amount           int64  `dynamodbav:"amount"`
	Currency         string `dynamodbav:"currency"`
	Reason           string `dynamodbav:"reason,omitempty"`
	AcquirerRefundID string `dynamodbav:"acquirer_refund_id"`
	AcquirerID       string `dynamodbav:"acquirer_id,omitempty"`
	CreatedAt        string `dynamodbav:"created_at"` // RFC 3339, milliseconds, UTC
}

// Refunds is the refund.Ledger on the table (Table.Refunds).
type Refunds struct {
	api   API
	table string
}

// Write implements refund.Ledger with one PutItem conditioned on the
// row's absence; an existing row comes back in the same call.
func (l *Refunds) Write(ctx context.Context, r refund.Refund) (refund.Refund, error) {
	av, err := attributevalue.MarshalMap(refundRow{
		PK: tabledef.RefundPrefix + r.ID, Type: refundRowType, ID: r.ID, Account: r.Account, ChargeID: r.ChargeID,
		IdempotencyKey: r.IdempotencyKey, Source: r.Source, Status: r.Status, DeclineCode: r.DeclineCode,
		Amount: r.Amount, Currency: r.Currency, Reason: r.Reason, AcquirerRefundID: r.AcquirerRefundID, AcquirerID: r.AcquirerID,
		CreatedAt: r.CreatedAt.UTC().Format(time.RFC3339Nano),
	})
	if err != nil {
		return refund.Refund{}, fmt.Errorf("encode refund: %w", err)
	}
	_, err = l.api.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           aws.String(l.table),
		Item:                                av,
		ConditionExpression:                 aws.String("attribute_not_exists(" + tabledef.KeyAttribute + ")"),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var exists *types.ConditionalCheckFailedException
	if errors.As(err, &exists) {
		if exists.Item == nil {
			return l.Get(ctx, r.ID)
		}
		return decodeRefund(r.ID, exists.Item)
	}
	if err != nil {
		return refund.Refund{}, fmt.Errorf("put refund: %w", writeError(err))
	}
	return r, nil
}

// Get implements refund.Ledger with a strongly consistent GetItem.
func (l *Refunds) Get(ctx context.Context, id string) (refund.Refund, error) {
	out, err := l.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(l.table),
		Key:            pkKey(tabledef.RefundPrefix + id),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return refund.Refund{}, fmt.Errorf("get refund: %w", err)
	}
	if out.Item == nil {
		return refund.Refund{}, refund.ErrNoRefund
	}
	return decodeRefund(id, out.Item)
}

func decodeRefund(id string, item map[string]types.AttributeValue) (refund.Refund, error) {
	var r refundRow
	if err := attributevalue.UnmarshalMap(item, &r); err != nil {
		return refund.Refund{}, fmt.Errorf("refund %s: %w: %w", idem.Ref(id), refund.ErrUnreadableRefund, err)
	}
	if r.Type != refundRowType || r.ID != id {
		return refund.Refund{}, fmt.Errorf("refund %s: %w: not a refund row", idem.Ref(id), refund.ErrUnreadableRefund)
	}
	created, err := time.Parse(time.RFC3339Nano, r.CreatedAt)
	if err != nil {
		return refund.Refund{}, fmt.Errorf("refund %s: %w: created_at: %w", idem.Ref(id), refund.ErrUnreadableRefund, err)
	}
	return refund.Refund{
		ID: r.ID, Account: r.Account, ChargeID: r.ChargeID, IdempotencyKey: r.IdempotencyKey, Source: r.Source,
		Status: r.Status, DeclineCode: r.DeclineCode, Amount: r.Amount, Currency: r.Currency, Reason: r.Reason,
		AcquirerRefundID: r.AcquirerRefundID, AcquirerID: r.AcquirerID, CreatedAt: created,
	}, nil
}

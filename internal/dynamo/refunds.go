package dynamo

// The refund rows: one item per refund the acquirer decided, under
// tabledef.RefundPrefix + the refund id, without TTL, or the voided marker
// in its place (markers.go). This file is the one place that knows their
// key and layout.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/refund"
	"github.com/idempotent-payments/idempay/internal/tabledef"
)

// refundRowType tells a refund row from any other item in a scan.
const refundRowType = tabledef.RefundRowType

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
	// Region, UnpublishedShard and UnpublishedSince as a ledger row's
	// (row): a row written with a region is listed in the unpublished
	// index until its event is published.
	Region           string `dynamodbav:"region,omitempty"`
	UnpublishedShard string `dynamodbav:"unpublished_shard,omitempty"`
	UnpublishedSince int64  `dynamodbav:"unpublished_since,omitempty"` // epoch milliseconds
}

// Refunds is the refund.Ledger on the table (Table.Refunds).
type Refunds struct {
	api   API
	table string
}

// Write implements refund.Ledger with one PutItem conditioned on the
// row's absence; an existing row comes back in the same call. A row with
// a region is listed as unpublished in the same write. A voided marker
// refuses it (refund.ErrVoided).
func (l *Refunds) Write(ctx context.Context, r refund.Refund) (refund.Refund, error) {
	item := refundRow{
		PK: tabledef.RefundPrefix + r.ID, Type: refundRowType, ID: r.ID, Account: r.Account, ChargeID: r.ChargeID,
		IdempotencyKey: r.IdempotencyKey, Source: r.Source, Status: r.Status, DeclineCode: r.DeclineCode,
		Amount: r.Amount, Currency: r.Currency, Reason: r.Reason, AcquirerRefundID: r.AcquirerRefundID, AcquirerID: r.AcquirerID,
		CreatedAt: r.CreatedAt.UTC().Format(time.RFC3339Nano), Region: r.Region,
	}
	if r.Region != "" {
		item.UnpublishedShard, item.UnpublishedSince = shardOf(r.ID), r.CreatedAt.UnixMilli()
	}
	old, exists, err := putRow(ctx, l.api, l.table, item.PK, item)
	switch {
	case errors.Is(err, errVoided):
		return refund.Refund{}, fmt.Errorf("put refund %s: %w", idem.Ref(r.ID), refund.ErrVoided)
	case err != nil:
		return refund.Refund{}, fmt.Errorf("put refund: %w", err)
	case exists:
		return decodeRefund(r.ID, old)
	}
	return r, nil
}

// Get implements refund.Ledger with a strongly consistent GetItem.
func (l *Refunds) Get(ctx context.Context, id string) (refund.Refund, error) {
	item, err := getItem(ctx, l.api, l.table, tabledef.RefundPrefix+id)
	if err != nil {
		return refund.Refund{}, fmt.Errorf("get refund: %w", err)
	}
	if item == nil {
		return refund.Refund{}, refund.ErrNoRefund
	}
	if itemType(item) == tabledef.VoidedMarkerType {
		return refund.Refund{}, fmt.Errorf("refund %s: %w: %w", idem.Ref(id), refund.ErrNoRefund, refund.ErrVoided)
	}
	return decodeRefund(id, item)
}

// Void implements refund.Ledger: one PutItem whose condition admits
// nothing or a marker at the key (putVoidedMarker).
func (l *Refunds) Void(ctx context.Context, id string) error {
	row, err := putVoidedMarker(ctx, l.api, l.table, tabledef.RefundPrefix+id)
	switch {
	case err != nil:
		return fmt.Errorf("refund %s: %w", idem.Ref(id), err)
	case row:
		return fmt.Errorf("void refund %s: %w", idem.Ref(id), refund.ErrRowExists)
	}
	return nil
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
		AcquirerRefundID: r.AcquirerRefundID, AcquirerID: r.AcquirerID, CreatedAt: created, Region: r.Region,
	}, nil
}

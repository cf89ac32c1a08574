package dynamo

// The refund rows: one item per refund the acquirer decided, under
// tabledef.RefundPrefix + the refund id, without TTL, or the voided marker
// in its place (markers.go). This file is the one place that knows their
// key and layout.

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/refund"
	"github.com/idempotent-payments/idempay/internal/tabledef"
)

// refundRowType tells a refund row from any other item in a scan.
const refundRowType = tabledef.RefundRowType

// refundRow is the item layout of a refund's row (besides rowCommon's).
type refundRow struct {
	rowCommon
	ChargeID         string `dynamodbav:"charge_id"`
	DeclineCode      string `dynamodbav:"decline_code,omitempty"`
	Amount           int64  `dynamodbav:"amount"`
	Reason           string `dynamodbav:"reason,omitempty"`
	AcquirerRefundID string `dynamodbav:"acquirer_refund_id"`
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
		rowCommon: commonOf(tabledef.RefundPrefix+r.ID, refundRowType, r.Origin, r.Status, r.Currency),
		ChargeID:  r.ChargeID, DeclineCode: r.DeclineCode, Amount: r.Amount, Reason: r.Reason,
		AcquirerRefundID: r.AcquirerRefundID,
	}
	return writeRow(ctx, l.api, l.table, item, item.rowCommon, "refund", refund.ErrVoided, decodeRefund, r)
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
	created, err := readRow(item, &r, &r.rowCommon, id, refundRowType)
	if err != nil {
		return refund.Refund{}, fmt.Errorf("refund %s: %w: %w", idem.Ref(id), refund.ErrUnreadableRefund, err)
	}
	return refund.Refund{
		Origin:   r.origin(created),
		ChargeID: r.ChargeID, Status: r.Status, DeclineCode: r.DeclineCode, Amount: r.Amount, Currency: r.Currency,
		Reason: r.Reason, AcquirerRefundID: r.AcquirerRefundID,
	}, nil
}

package dynamo

// The capture and void rows: one item per capture or void the acquirer
// decided, under tabledef.CapturePrefix or VoidPrefix + the row's id,
// without TTL, or the voided marker in its place (markers.go). This file
// is the one place that knows their key and layout.

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idempotent-payments/idempay/internal/capture"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/tabledef"
)

// actionRow is the item layout of a capture's or a void's row (besides
// rowCommon's).
type actionRow struct {
	rowCommon
	ChargeID         string `dynamodbav:"charge_id"`
	Kind             string `dynamodbav:"kind"`
	DeclineCode      string `dynamodbav:"decline_code,omitempty"`
	Amount           int64  `dynamodbav:"amount"`
	Reason           string `dynamodbav:"reason,omitempty"`
	AcquirerActionID string `dynamodbav:"acquirer_action_id"`
}

// ActionRows is the capture.Ledger of one of the two operations on the
// table (Table.CaptureRows, Table.VoidRows).
type ActionRows struct {
	api   API
	table string
	// prefix begins its rows' keys, rowType is their type, and noun names
	// them in errors.
	prefix, rowType, noun string
}

// The two operations' layouts, on no table: their keys, types and nouns.
var (
	captureRows = ActionRows{prefix: tabledef.CapturePrefix, rowType: tabledef.CaptureRowType, noun: "capture"}
	voidRows    = ActionRows{prefix: tabledef.VoidPrefix, rowType: tabledef.VoidRowType, noun: "void"}
)

// CaptureRows are the captures' rows.
func (t *Table) CaptureRows() *ActionRows { return captureRows.on(t) }

// VoidRows are the voids' rows.
func (t *Table) VoidRows() *ActionRows { return voidRows.on(t) }

// on is l on table t.
func (l ActionRows) on(t *Table) *ActionRows {
	l.api, l.table = t.api, t.name
	return &l
}

// Write implements capture.Ledger with one PutItem conditioned on the
// row's absence; an existing row comes back in the same call. A voided
// marker refuses it (capture.ErrVoided).
func (l *ActionRows) Write(ctx context.Context, r capture.Row) (capture.Row, error) {
	item := actionRow{
		rowCommon: commonOf(l.prefix+r.ID, l.rowType, r.Origin, r.Status, r.Currency),
		ChargeID:  r.ChargeID, Kind: string(r.Kind), DeclineCode: r.DeclineCode, Amount: r.Amount, Reason: r.Reason,
		AcquirerActionID: r.AcquirerActionID,
	}
	return writeRow(ctx, l.api, l.table, item, item.rowCommon, l.noun, capture.ErrVoided, l.decode, r)
}

// Get implements capture.Ledger with a strongly consistent GetItem.
func (l *ActionRows) Get(ctx context.Context, id string) (capture.Row, error) {
	item, err := getItem(ctx, l.api, l.table, l.prefix+id)
	if err != nil {
		return capture.Row{}, fmt.Errorf("get %s: %w", l.noun, err)
	}
	if item == nil {
		return capture.Row{}, capture.ErrNoRow
	}
	if itemType(item) == tabledef.VoidedMarkerType {
		return capture.Row{}, fmt.Errorf("%s %s: %w: %w", l.noun, idem.Ref(id), capture.ErrNoRow, capture.ErrVoided)
	}
	return l.decode(id, item)
}

// Void implements capture.Ledger: one PutItem whose condition admits
// nothing or a marker at the key (putVoidedMarker).
func (l *ActionRows) Void(ctx context.Context, id string) error {
	row, err := putVoidedMarker(ctx, l.api, l.table, l.prefix+id)
	switch {
	case err != nil:
		return fmt.Errorf("%s %s: %w", l.noun, idem.Ref(id), err)
	case row:
		return fmt.Errorf("void %s %s: %w", l.noun, idem.Ref(id), capture.ErrRowExists)
	}
	return nil
}

func (l *ActionRows) decode(id string, item map[string]types.AttributeValue) (capture.Row, error) {
	var r actionRow
	created, err := readRow(item, &r, &r.rowCommon, id, l.rowType)
	if err != nil {
		return capture.Row{}, fmt.Errorf("%s %s: %w: %w", l.noun, idem.Ref(id), capture.ErrUnreadableRow, err)
	}
	return capture.Row{
		Origin:   r.origin(created),
		ChargeID: r.ChargeID, Kind: capture.Kind(r.Kind), Status: r.Status, DeclineCode: r.DeclineCode, Amount: r.Amount,
		Currency: r.Currency, Reason: r.Reason, AcquirerActionID: r.AcquirerActionID,
	}, nil
}

package dynamo

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/operations"
	"github.com/idempotent-payments/idempay/internal/outbox"
	"github.com/idempotent-payments/idempay/internal/refund"
)

// rowLayout is how the table stores one operation's ledger rows: decode
// reads a row's item, get reads row id as its ledger does (markers
// included).
type rowLayout struct {
	decode func(id string, item map[string]types.AttributeValue) (outbox.Row, error)
	get    func(ctx context.Context, t *Table, id string) (outbox.Row, error)
}

// rowLayouts are the layouts by operation (operations.Registration.Name):
// TestEveryOperationHasARowLayout holds them equal to the registrations.
var rowLayouts = map[string]rowLayout{
	charge.Operation: {
		decode: func(id string, item map[string]types.AttributeValue) (outbox.Row, error) {
			c, err := decode(id, item)
			return operations.ChargeRow{Charge: c}, err
		},
		get: func(ctx context.Context, t *Table, id string) (outbox.Row, error) {
			c, err := t.Ledger().Get(ctx, id)
			return operations.ChargeRow{Charge: c}, err
		},
	},
	refund.Operation: {
		decode: func(id string, item map[string]types.AttributeValue) (outbox.Row, error) {
			r, err := decodeRefund(id, item)
			return operations.RefundRow{Refund: r}, err
		},
		get: func(ctx context.Context, t *Table, id string) (outbox.Row, error) {
			r, err := t.Refunds().Get(ctx, id)
			return operations.RefundRow{Refund: r}, err
		},
	},
}

// layoutOf is the layout of the rows of reg's operation; a registration
// without one is a wiring mistake the test above catches.
func layoutOf(reg operations.Registration) (rowLayout, error) {
	l, ok := rowLayouts[reg.Name]
	if !ok {
		return rowLayout{}, fmt.Errorf("no row layout for operation %q", reg.Name)
	}
	return l, nil
}

// Rows read any operation's ledger row by its id (the backstop's
// take-over), through its operation's ledger.
type Rows struct{ t *Table }

// Rows are the table's rows of every operation.
func (t *Table) Rows() *Rows { return &Rows{t: t} }

// Row is row id, read as its operation's ledger reads it: an error
// wrapping charge.ErrNoCharge when id is no registered operation's row.
func (r *Rows) Row(ctx context.Context, id string) (outbox.Row, error) {
	reg, ok := operations.ByRowID(id)
	if !ok {
		return nil, fmt.Errorf("row %s: no operation's row id: %w", idem.Ref(id), charge.ErrNoCharge)
	}
	l, err := layoutOf(reg)
	if err != nil {
		return nil, err
	}
	return l.get(ctx, r.t, id)
}

// rowKey is the table key of row id, of any operation (a row id no
// operation registers keeps its id as its key, which no item has).
func rowKey(id string) string {
	if reg, ok := operations.ByRowID(id); ok {
		return reg.RowKeyPrefix + id
	}
	return id
}

package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idempotent-payments/idempay/internal/capture"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/op"
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
	charge.Operation: layout(decode, func(t *Table) getter[charge.Charge] { return t.Ledger().Get },
		func(c charge.Charge) outbox.Row { return operations.ChargeRow{Charge: c} }),
	refund.Operation: layout(decodeRefund, func(t *Table) getter[refund.Refund] { return t.Refunds().Get },
		func(r refund.Refund) outbox.Row { return operations.RefundRow{Refund: r} }),
	capture.OperationCapture: layout(captureRows.decode, func(t *Table) getter[capture.Row] { return t.CaptureRows().Get }, asOutboxRow),
	capture.OperationVoid:    layout(voidRows.decode, func(t *Table) getter[capture.Row] { return t.VoidRows().Get }, asOutboxRow),
}

// asOutboxRow is a capture's or a void's row as the outbox sees it.
func asOutboxRow(r capture.Row) outbox.Row { return operations.ActionRow{Row: r} }

// getter reads a row by its id, as an operation's ledger does.
type getter[R any] func(ctx context.Context, id string) (R, error)

// layout is the rowLayout of rows R: decoded by decode, read by the
// ledger's get, seen by the outbox as wrap makes them.
func layout[R any](decode func(string, map[string]types.AttributeValue) (R, error), get func(*Table) getter[R], wrap func(R) outbox.Row) rowLayout {
	return rowLayout{
		decode: func(id string, item map[string]types.AttributeValue) (outbox.Row, error) {
			r, err := decode(id, item)
			return wrap(r), err
		},
		get: func(ctx context.Context, t *Table, id string) (outbox.Row, error) {
			r, err := get(t)(ctx, id)
			return wrap(r), err
		},
	}
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

// rowCommon are the attributes every operation's row has: its key, its
// type (which tells it from any other item in a scan, and from a marker
// under its key), who asked, the outcome's status and currency, the
// acquirer, when, and, written with a region, its listing in the
// unpublished index until its event is published (Books.MarkPublished).
// An operation's row embeds it, whose attributes sit beside its own.
type rowCommon struct {
	PK      string `dynamodbav:"pk"`
	Type    string `dynamodbav:"type"`
	ID      string `dynamodbav:"id"`
	Account string `dynamodbav:"account"`
	// IdempotencyKey is the client's (rows written before rows kept it
	// have none).
	IdempotencyKey string `dynamodbav:"idempotency_key,omitempty"`
	Source         string `dynamodbav:"source,omitempty"`
	Status         string `dynamodbav:"status"`
	Currency       string `dynamodbav:"currency"`
	AcquirerID     string `dynamodbav:"acquirer_id,omitempty"`
	CreatedAt      string `dynamodbav:"created_at"` // RFC 3339, milliseconds, UTC
	Region         string `dynamodbav:"region,omitempty"`
	// UnpublishedShard and UnpublishedSince list a row that has a region.
	UnpublishedShard string `dynamodbav:"unpublished_shard,omitempty"`
	UnpublishedSince int64  `dynamodbav:"unpublished_since,omitempty"` // epoch milliseconds
	// DayShard and DayAt list every row in the day index, by the UTC day
	// and the time it was written (tabledef.DayIndex).
	DayShard string `dynamodbav:"day_shard"`
	DayAt    int64  `dynamodbav:"day_at"` // epoch milliseconds
}

// commonOf is rowCommon of the row of origin o at key, of type typ.
func commonOf(key, typ string, o op.Origin, status, currency string) rowCommon {
	c := rowCommon{
		PK: key, Type: typ, ID: o.ID, Account: o.Account, IdempotencyKey: o.IdempotencyKey, Source: o.Source, Status: status,
		Currency: currency, AcquirerID: o.AcquirerID, CreatedAt: o.CreatedAt.UTC().Format(time.RFC3339Nano), Region: o.Region,
		DayShard: DayShard(o.CreatedAt, o.ID), DayAt: o.CreatedAt.UnixMilli(),
	}
	if o.Region != "" {
		c.UnpublishedShard, c.UnpublishedSince = shardOf(o.ID), o.CreatedAt.UnixMilli()
	}
	return c
}

// origin is the origin c records, created at created (readRow).
func (c rowCommon) origin(created time.Time) op.Origin {
	return op.Origin{
		ID: c.ID, Account: c.Account, IdempotencyKey: c.IdempotencyKey, Source: c.Source, AcquirerID: c.AcquirerID,
		CreatedAt: created, Region: c.Region,
	}
}

// writeRow writes item, a row whose common attributes are c, with one
// PutItem conditioned on its key's holding no row (putRow), and returns
// the row as stored: want, or the row already there (decoded), which
// wins. A voided marker refuses it (voided); noun names the row in
// errors.
func writeRow[R any](ctx context.Context, api API, table string, item any, c rowCommon, noun string, voided error,
	decode func(string, map[string]types.AttributeValue) (R, error), want R) (R, error) {
	var zero R
	old, exists, err := putRow(ctx, api, table, c.PK, item)
	switch {
	case errors.Is(err, errVoided):
		return zero, fmt.Errorf("put %s %s: %w", noun, idem.Ref(c.ID), voided)
	case err != nil:
		return zero, fmt.Errorf("put %s: %w", noun, err)
	case exists:
		return decode(c.ID, old)
	}
	return want, nil
}

// readRow decodes item into row, whose common attributes are c, and
// checks it is a row of type typ and id: its creation time, or why it
// does not read.
func readRow(item map[string]types.AttributeValue, row any, c *rowCommon, id, typ string) (time.Time, error) {
	if err := attributevalue.UnmarshalMap(item, row); err != nil {
		return time.Time{}, err
	}
	if c.Type != typ || c.ID != id {
		return time.Time{}, fmt.Errorf("not a %s row", typ)
	}
	created, err := time.Parse(time.RFC3339Nano, c.CreatedAt)
	if err != nil {
		return time.Time{}, fmt.Errorf("created_at: %w", err)
	}
	return created, nil
}

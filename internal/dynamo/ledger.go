package dynamo

// The charge ledger: one item per charge under tabledef.LedgerPrefix + the
// charge id, without TTL, or a marker in its place (markers.go). This file
// is the one place that knows the ledger row's key and layout.

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/tabledef"
)

// rowType tells a ledger row from any other item in a scan, and from a
// marker under its key.
const rowType = tabledef.ChargeRowType

// row is the item layout of a charge's row (besides rowCommon's). The
// amount is a number, in minor units.
type row struct {
	rowCommon
	Amount          amount `dynamodbav:"amount"`
	OrderID         string `dynamodbav:"order_id"`
	Description     string `dynamodbav:"description"`
	DeclineCode     string `dynamodbav:"decline_code"`
	AuthorizationID string `dynamodbav:"authorization_id"`
	// AuthorizationExpiresAt is an authorization's expiry, in epoch
	// milliseconds; absent on every other row. With AuthorizationShard it
	// lists the row in the authorizations index until the sweeper has
	// seen its balance closed (Unlist).
	AuthorizationExpiresAt int64  `dynamodbav:"authorization_expires_at,omitempty"`
	AuthorizationShard     string `dynamodbav:"authorization_shard,omitempty"`
	// ExpiredAt is set by the sweeper's Unlist of an authorization it
	// found closed at its expiry (tabledef.ExpiredAttribute).
	ExpiredAt int64 `dynamodbav:"expired_at,omitempty"`
}

// amount decodes a number, or the decimal string rows written before the
// amount became a number carry; it always encodes a number.
type amount int64

// UnmarshalDynamoDBAttributeValue implements attributevalue.Unmarshaler.
func (a *amount) UnmarshalDynamoDBAttributeValue(av types.AttributeValue) error {
	var digits string
	switch v := av.(type) {
	case *types.AttributeValueMemberN:
		digits = v.Value
	case *types.AttributeValueMemberS:
		digits = v.Value
	default:
		return fmt.Errorf("amount: %T, want a number", av)
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return fmt.Errorf("amount: %w", err)
	}
	*a = amount(n)
	return nil
}

// Ledger is the charge.Ledger on the table (Table.Ledger).
type Ledger struct {
	api   API
	table string
}

// Key is the partition key of charge id's row.
func Key(id string) string { return tabledef.LedgerPrefix + id }

// Write implements charge.Ledger with one PutItem conditioned on the row's
// absence; an existing row comes back in the same call
// (ReturnValuesOnConditionCheckFailure ALL_OLD). A row with a region is
// listed as unpublished in the same write. A held marker in its place
// costs a DeleteItem and a second PutItem; a voided marker refuses it
// (charge.ErrVoided).
func (l *Ledger) Write(ctx context.Context, c charge.Charge) (charge.Charge, error) {
	r := row{
		rowCommon: commonOf(Key(c.ID), rowType, c.Origin, c.Status, c.Currency),
		Amount:    amount(c.Amount), OrderID: c.OrderID, Description: c.Description,
		DeclineCode: c.DeclineCode, AuthorizationID: c.AuthorizationID,
	}
	if !c.AuthorizationExpiresAt.IsZero() {
		r.AuthorizationExpiresAt, r.AuthorizationShard = c.AuthorizationExpiresAt.UnixMilli(), shardOf(c.ID)
	}
	return writeRow(ctx, l.api, l.table, r, r.rowCommon, "charge", charge.ErrVoided, decode, c)
}

// Get implements charge.Ledger with a strongly consistent GetItem.
func (l *Ledger) Get(ctx context.Context, id string) (charge.Charge, error) {
	item, err := getItem(ctx, l.api, l.table, Key(id))
	if err != nil {
		return charge.Charge{}, fmt.Errorf("get charge: %w", err)
	}
	switch itemType(item) {
	case tabledef.VoidedMarkerType:
		return charge.Charge{}, fmt.Errorf("charge %s: %w: %w", idem.Ref(id), charge.ErrNoCharge, charge.ErrVoided)
	case tabledef.HeldMarkerType:
		m, err := heldMarkerOf(item)
		if err != nil {
			return charge.Charge{}, fmt.Errorf("charge %s: %w: %w", idem.Ref(id), charge.ErrUnreadableCharge, err)
		}
		return charge.Charge{}, &charge.HeldMarkerError{ID: id, Marker: charge.HeldMarker{Account: m.Account, Key: m.IdempotencyKey}}
	}
	if item == nil {
		return charge.Charge{}, charge.ErrNoCharge
	}
	return decode(id, item)
}

// Hold implements charge.Ledger: one PutItem conditioned on the key's
// absence (putHeldMarker).
func (l *Ledger) Hold(ctx context.Context, id string, m charge.HeldMarker) error {
	if err := putHeldMarker(ctx, l.api, l.table, Key(id), m.Account, m.Key); err != nil {
		return fmt.Errorf("charge %s: %w", idem.Ref(id), err)
	}
	return nil
}

// Void implements charge.Ledger: one PutItem whose condition admits
// nothing, a held marker or a voided marker at the key
// (putVoidedMarker).
func (l *Ledger) Void(ctx context.Context, id string) error {
	row, err := putVoidedMarker(ctx, l.api, l.table, Key(id))
	switch {
	case err != nil:
		return fmt.Errorf("charge %s: %w", idem.Ref(id), err)
	case row:
		return fmt.Errorf("void charge %s: %w", idem.Ref(id), charge.ErrLedgerRowExists)
	}
	return nil
}

// decode reads charge id's row; anything else is ErrUnreadableCharge.
func decode(id string, item map[string]types.AttributeValue) (charge.Charge, error) {
	var r row
	created, err := readRow(item, &r, &r.rowCommon, id, rowType)
	if err != nil {
		return charge.Charge{}, fmt.Errorf("charge %s: %w: %w", idem.Ref(id), charge.ErrUnreadableCharge, err)
	}
	c := charge.Charge{
		Origin: r.origin(created),
		Status: r.Status, Amount: int64(r.Amount), Currency: r.Currency, OrderID: r.OrderID,
		Description: r.Description, DeclineCode: r.DeclineCode, AuthorizationID: r.AuthorizationID,
	}
	if r.AuthorizationExpiresAt != 0 {
		c.AuthorizationExpiresAt = time.UnixMilli(r.AuthorizationExpiresAt).UTC()
	}
	c.Expired = r.ExpiredAt != 0
	return c, nil
}

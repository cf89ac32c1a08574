// Package dynamoledger is the charge ledger on the table of dynamostore:
// one item per charge under Prefix + the charge id, written by the
// completion's transaction (dynamostore.Store.Complete) and read here. It
// is the one place that knows the ledger row's key and layout.
package dynamoledger

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/idem"
)

// Prefix begins the key of every ledger row; nothing else is written under
// it (the reconciler's role may put only such rows).
const Prefix = "CHARGE#"

// rowType tells a ledger row from any other item in a scan.
const rowType = "charge"

// row is the item layout. The amount is a number, in minor units.
type row struct {
	Type            string `dynamodbav:"type"`
	ID              string `dynamodbav:"id"`
	Account         string `dynamodbav:"account"`
	Status          string `dynamodbav:"status"`
	Amount          int64  `dynamodbav:"amount"`
	Currency        string `dynamodbav:"currency"`
	OrderID         string `dynamodbav:"order_id"`
	Description     string `dynamodbav:"description"`
	DeclineCode     string `dynamodbav:"decline_code"`
	AuthorizationID string `dynamodbav:"authorization_id"`
	CreatedAt       string `dynamodbav:"created_at"` // RFC 3339, milliseconds, UTC
}

// API is the part of the DynamoDB client the ledger calls.
type API interface {
	GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

// Ledger is a charge.Ledger on one table.
type Ledger struct {
	api   API
	table string
}

// New returns the ledger on table, the table of the guard's dynamostore.
func New(api API, table string) *Ledger { return &Ledger{api: api, table: table} }

// Key is the partition key of charge id's row.
func Key(id string) string { return Prefix + id }

// Entry implements charge.Ledger.
func (l *Ledger) Entry(c charge.Charge) idem.Item {
	return idem.Item{PK: Key(c.ID), Value: row{
		Type: rowType, ID: c.ID, Account: c.Account, Status: c.Status,
		Amount: c.Amount, Currency: c.Currency, OrderID: c.OrderID, Description: c.Description,
		DeclineCode: c.DeclineCode, AuthorizationID: c.AuthorizationID,
		CreatedAt: c.CreatedAt.UTC().Format(time.RFC3339Nano),
	}}
}

// Get implements charge.Ledger with a strongly consistent GetItem.
func (l *Ledger) Get(ctx context.Context, id string) (charge.Charge, error) {
	out, err := l.api.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(l.table),
		Key:            map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: Key(id)}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return charge.Charge{}, fmt.Errorf("get charge: %w", err)
	}
	if out.Item == nil {
		return charge.Charge{}, charge.ErrNoCharge
	}
	var r row
	if err := attributevalue.UnmarshalMap(out.Item, &r); err != nil {
		return charge.Charge{}, fmt.Errorf("decode charge %s: %w", idem.Ref(id), err)
	}
	if r.Type != rowType || r.ID != id {
		return charge.Charge{}, fmt.Errorf("decode charge %s: not a ledger row", idem.Ref(id))
	}
	created, err := time.Parse(time.RFC3339Nano, r.CreatedAt)
	if err != nil {
		return charge.Charge{}, fmt.Errorf("decode charge %s: created_at: %w", idem.Ref(id), err)
	}
	return charge.Charge{
		ID: r.ID, Account: r.Account, Status: r.Status, Amount: r.Amount, Currency: r.Currency,
		OrderID: r.OrderID, Description: r.Description, DeclineCode: r.DeclineCode,
		AuthorizationID: r.AuthorizationID, CreatedAt: created,
	}, nil
}

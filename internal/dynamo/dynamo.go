// Package dynamo is the one home of the DynamoDB table. Everything that
// knows the table's items, its SDK client or its stream lives here: the
// idem.Store of the idempotency records, the charge ledger, the books of
// the events' publication, the table's creation, the decoding of its
// stream's records, and the client with its tuning. SDK types stop here:
// callers see idem, charge and outbox types and their errors, and stream
// records in Lambda's form (events.DynamoDBEventRecord); the Streams API's
// records are taken in only to be turned into that form (StreamRecords).
//
// Open the table once and take every view of it from the Table, so the
// ledger and the books are on the records' table by construction:
//
//	t := dynamo.Open(client, name)
//	guard := idem.NewGuard(t.Store(), cfg)
//	svc := charge.NewService(guard, t.Ledger(), acq, render, chargeCfg)
package dynamo

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// API is the part of the DynamoDB client the table's views call (the SDK's
// client, or a test's wrapper of it).
type API interface {
	PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

// Table is one table created from TableInput, opened with a client.
type Table struct {
	api  API
	name string
}

// Open is the table name, through api.
func Open(api API, name string) *Table { return &Table{api: api, name: name} }

// Name is the table's name.
func (t *Table) Name() string { return t.name }

// Store is the table's idem.Store: the idempotency records.
func (t *Table) Store() *Store { return &Store{api: t.api, table: t.name} }

// Ledger is the table's charge.Ledger: the ledger rows.
func (t *Table) Ledger() *Ledger { return &Ledger{api: t.api, table: t.name} }

// Books are the table's charge.Books: what the publication of the outcome
// events keeps (the unpublished index, the regions' heartbeats).
func (t *Table) Books() *Books { return &Books{api: t.api, table: t.name} }

// Balances are the table's refund.Balances: each charge's refund balance.
func (t *Table) Balances() *Balances { return &Balances{api: t.api, table: t.name} }

// Captures are the table's capture.Balances: the capture side of the
// same balance items.
func (t *Table) Captures() *Captures { return &Captures{b: t.Balances()} }

// Authorizations are the table's capture.Authorizations: the
// authorizations index over the ledger rows.
func (t *Table) Authorizations() *Authorizations { return &Authorizations{api: t.api, table: t.name} }

// Refunds are the table's refund.Ledger: the refund rows.
func (t *Table) Refunds() *Refunds { return &Refunds{api: t.api, table: t.name} }

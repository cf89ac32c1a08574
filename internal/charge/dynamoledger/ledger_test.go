package dynamoledger_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/charge/chargetest"
	"github.com/idempotent-payments/idempay/internal/charge/dynamoledger"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/idem/dynamostore"
	"github.com/idempotent-payments/idempay/internal/idem/dynamostore/dynamotest"
)

func TestLedgerConformance(t *testing.T) {
	t.Parallel()
	chargetest.RunLedgerConformance(t, func(t *testing.T) (idem.Store, charge.Ledger) {
		client := dynamotest.Client(t)
		table := dynamotest.NewTable(t, client)
		return dynamostore.New(client, table), dynamoledger.New(client, table)
	})
}

// TestAmountIsANumber: the row keeps the amount as a DynamoDB number, so
// the table can be summed and compared without parsing strings.
func TestAmountIsANumber(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := dynamotest.Client(t)
	table := dynamotest.NewTable(t, client)
	guard := idem.NewGuard(dynamostore.New(client, table), idem.Config{})
	claim, err := guard.Begin(ctx, idem.Scope{Operation: charge.Operation, Account: "acct_n", Key: "amount-number-key"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	id := "ch_0123456789abcdef0123456789abcdef01234567"
	ledger := dynamoledger.New(client, table)
	if err := claim.Lease.Complete(ctx, idem.Response{StatusCode: 201}, ledger.Entry(charge.Charge{ID: id, Account: "acct_n", Status: "captured", Amount: 1990, Currency: "BRL"})); err != nil {
		t.Fatal(err)
	}
	out, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: dynamoledger.Key(id)}}})
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := out.Item["amount"].(*types.AttributeValueMemberN); !ok || n.Value != "1990" {
		t.Fatalf("amount stored as %#v, want the number 1990", out.Item["amount"])
	}
}

package dynamo_test

import (
	"testing"

	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/dynamo/dynamotest"
	"github.com/idempotent-payments/idempay/internal/refund"
	"github.com/idempotent-payments/idempay/internal/refund/refundtest"
)

// TestBalancesConformance: the refund balance on DynamoDB Local passes the
// suite the memory balances pass.
func TestBalancesConformance(t *testing.T) {
	client := dynamotest.Client(t)
	table := dynamotest.NewTable(t, client)
	refundtest.RunConformance(t, func(*testing.T) refund.Balances { return dynamo.Open(client, table).Balances() })
}

// TestRefundServiceConformance: every path of a refund's state machine
// on DynamoDB Local, as on the memory stores.
func TestRefundServiceConformance(t *testing.T) {
	client := dynamotest.Client(t)
	refundtest.RunServiceConformance(t, func(t *testing.T) refundtest.Stores {
		table := dynamo.Open(client, dynamotest.NewTable(t, client))
		return refundtest.Stores{Store: table.Store(), Charges: table.Ledger(), Balances: table.Balances(), Refunds: table.Refunds()}
	})
}

// TestRefundLedgerConformance: the refund rows on DynamoDB Local.
func TestRefundLedgerConformance(t *testing.T) {
	client := dynamotest.Client(t)
	refundtest.RunLedgerConformance(t, dynamo.Open(client, dynamotest.NewTable(t, client)).Refunds())
}

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

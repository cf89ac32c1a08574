package refundtest_test

import (
	"testing"

	"github.com/idempotent-payments/idempay/internal/refund"
	"github.com/idempotent-payments/idempay/internal/refund/refundtest"
)

func TestMemoryBalancesConformance(t *testing.T) {
	refundtest.RunConformance(t, func(*testing.T) refund.Balances { return refundtest.NewMemoryBalances() })
}

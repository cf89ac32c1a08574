package refundtest_test

import (
	"testing"

	"github.com/idempotent-payments/idempay/internal/charge/chargetest"
	"github.com/idempotent-payments/idempay/internal/idem/idemtest"
	"github.com/idempotent-payments/idempay/internal/refund"
	"github.com/idempotent-payments/idempay/internal/refund/refundtest"
)

func TestMemoryBalancesConformance(t *testing.T) {
	refundtest.RunConformance(t, func(*testing.T) refund.Balances { return refundtest.NewMemoryBalances() })
}

func TestMemoryServiceConformance(t *testing.T) {
	refundtest.RunServiceConformance(t, func(*testing.T) refundtest.Stores {
		return refundtest.Stores{Store: idemtest.NewMemoryStore(), Charges: chargetest.NewLedger(),
			Balances: refundtest.NewMemoryBalances(), Refunds: refundtest.NewLedger()}
	})
}

func TestLedgerConformance(t *testing.T) {
	refundtest.RunLedgerConformance(t, refundtest.NewLedger())
}

package storetest_test

import (
	"testing"

	"github.com/idempotent-payments/idempay/internal/charge/chargetest"
	"github.com/idempotent-payments/idempay/internal/idem/idemtest"
	"github.com/idempotent-payments/idempay/internal/refund/refundtest"
	"github.com/idempotent-payments/idempay/internal/storetest"
)

// TestMemoryConformance: the memory stores pass every suite.
func TestMemoryConformance(t *testing.T) {
	storetest.RunConformance(t, func(*testing.T) storetest.Stores {
		ledger := chargetest.NewLedger()
		return storetest.Stores{Store: idemtest.NewMemoryStore(), Ledger: ledger, Books: ledger,
			Balances: refundtest.NewMemoryBalances(), Refunds: refundtest.NewLedgerListedIn(ledger)}
	})
}

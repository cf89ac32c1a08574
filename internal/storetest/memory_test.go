package storetest_test

import (
	"testing"

	"github.com/idempotent-payments/idempay/internal/capture/capturetest"
	"github.com/idempotent-payments/idempay/internal/charge/chargetest"
	"github.com/idempotent-payments/idempay/internal/idem/idemtest"
	"github.com/idempotent-payments/idempay/internal/refund/refundtest"
	"github.com/idempotent-payments/idempay/internal/storetest"
)

// TestMemoryConformance: the memory stores pass every suite.
func TestMemoryConformance(t *testing.T) {
	storetest.RunConformance(t, func(*testing.T) storetest.Stores {
		ledger := chargetest.NewLedger()
		balances := refundtest.NewMemoryBalances()
		return storetest.Stores{Store: idemtest.NewMemoryStore(), Ledger: ledger, Books: ledger,
			Balances: balances, Captures: balances.Captures(), Authorizations: ledger, Refunds: refundtest.NewLedgerListedIn(ledger),
			CaptureRows: capturetest.NewLedger(), VoidRows: capturetest.NewLedger()}
	})
}

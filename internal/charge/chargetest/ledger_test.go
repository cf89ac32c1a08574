package chargetest_test

import (
	"testing"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/charge/chargetest"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/idem/idemtest"
)

func TestMemoryLedgerConformance(t *testing.T) {
	chargetest.RunLedgerConformance(t, func(*testing.T) (idem.Store, charge.Ledger) {
		store := idemtest.NewMemoryStore()
		return store, chargetest.NewLedger(store)
	})
}

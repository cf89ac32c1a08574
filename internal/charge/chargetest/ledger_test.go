package chargetest_test

import (
	"testing"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/charge/chargetest"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/idem/idemtest"
)

func memory(*testing.T) (idem.Store, charge.Ledger) {
	return idemtest.NewMemoryStore(), chargetest.NewLedger()
}

func TestMemoryLedgerConformance(t *testing.T)     { chargetest.RunLedgerConformance(t, memory) }
func TestMemoryCompletionConformance(t *testing.T) { chargetest.RunCompletionConformance(t, memory) }
func TestMemoryHoldConformance(t *testing.T)       { chargetest.RunHoldConformance(t, memory) }

func TestMemoryBooksConformance(t *testing.T) {
	chargetest.RunBooksConformance(t, func(*testing.T) (charge.Ledger, charge.Books) {
		l := chargetest.NewLedger()
		return l, l
	})
}

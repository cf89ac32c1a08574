package idemtest_test

import (
	"testing"

	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/idem/idemtest"
)

func TestMemoryStoreConformance(t *testing.T) {
	idemtest.RunConformance(t, func(*testing.T) idem.Store { return idemtest.NewMemoryStore() })
}

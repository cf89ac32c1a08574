// Package storetest runs every conformance suite on one store
// implementation, as one entry: the engine's records (idemtest), the
// charges' ledger rows, completions, holds and books (chargetest), the
// refund balances, the refund rows, the books of those rows and the
// services on them (refundtest), the capture side of the balances
// (capturetest). Each implementation (the memory stores, the table on
// DynamoDB Local) calls RunConformance once.
package storetest

import (
	"testing"

	"github.com/idempotent-payments/idempay/internal/capture"
	"github.com/idempotent-payments/idempay/internal/capture/capturetest"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/charge/chargetest"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/idem/idemtest"
	"github.com/idempotent-payments/idempay/internal/refund"
	"github.com/idempotent-payments/idempay/internal/refund/refundtest"
)

// Stores are every seam of one store implementation, fresh and empty:
// the records, the charges' rows, the books (Books lists Ledger's rows
// and Refunds' alike), the balances (both sides) and the refund rows.
type Stores struct {
	Store    idem.Store
	Ledger   charge.Ledger
	Books    charge.Books
	Balances refund.Balances
	// Captures is the capture side of Balances' items, and
	// Authorizations the listing of Ledger's authorization rows.
	Captures       capture.Balances
	Authorizations capture.Authorizations
	Refunds        refund.Ledger
	// CaptureRows and VoidRows are the captures' and the voids' rows.
	CaptureRows, VoidRows capture.Ledger
}

// NewStoresFunc makes fresh Stores for a test.
type NewStoresFunc func(t *testing.T) Stores

// RunConformance runs every suite, in parallel, on the stores newStores
// makes, each suite (and each of its tests) on fresh ones.
func RunConformance(t *testing.T, newStores NewStoresFunc) {
	charges := func(t *testing.T) (idem.Store, charge.Ledger) {
		s := newStores(t)
		return s.Store, s.Ledger
	}
	t.Run("engine", func(t *testing.T) {
		t.Parallel()
		idemtest.RunConformance(t, func(t *testing.T) idem.Store { return newStores(t).Store })
	})
	t.Run("ledger", func(t *testing.T) { t.Parallel(); chargetest.RunLedgerConformance(t, charges) })
	t.Run("completion", func(t *testing.T) { t.Parallel(); chargetest.RunCompletionConformance(t, charges) })
	t.Run("holds", func(t *testing.T) { t.Parallel(); chargetest.RunHoldConformance(t, charges) })
	t.Run("authorize-only", func(t *testing.T) { t.Parallel(); chargetest.RunAuthorizeOnlyConformance(t, charges) })
	t.Run("books", func(t *testing.T) {
		t.Parallel()
		chargetest.RunBooksConformance(t, func(t *testing.T) (charge.Ledger, charge.Books) {
			s := newStores(t)
			return s.Ledger, s.Books
		})
	})
	t.Run("books of refund rows", func(t *testing.T) {
		t.Parallel()
		refundtest.RunBooksConformance(t, func(t *testing.T) (refund.Ledger, charge.Books) {
			s := newStores(t)
			return s.Refunds, s.Books
		})
	})
	t.Run("balances", func(t *testing.T) {
		t.Parallel()
		refundtest.RunConformance(t, func(t *testing.T) refund.Balances { return newStores(t).Balances })
	})
	t.Run("captures", func(t *testing.T) {
		t.Parallel()
		capturetest.RunConformance(t, func(t *testing.T) capturetest.Balances {
			s := newStores(t)
			return capturetest.Balances{Refunds: s.Balances, Captures: s.Captures}
		})
	})
	t.Run("expiry", func(t *testing.T) {
		capturetest.RunExpiryConformance(t, func(t *testing.T) capturetest.Stores {
			s := newStores(t)
			return capturetest.Stores{Ledger: s.Ledger, Authorizations: s.Authorizations,
				Balances: capturetest.Balances{Refunds: s.Balances, Captures: s.Captures}}
		})
	})
	t.Run("refund rows", func(t *testing.T) { t.Parallel(); refundtest.RunLedgerConformance(t, newStores(t).Refunds) })
	t.Run("capture rows", func(t *testing.T) {
		t.Parallel()
		capturetest.RunLedgerConformance(t, newStores(t).CaptureRows, capture.CaptureID, capture.Partial)
	})
	t.Run("void rows", func(t *testing.T) {
		t.Parallel()
		capturetest.RunLedgerConformance(t, newStores(t).VoidRows, capture.VoidID, capture.Void)
	})
	t.Run("services", func(t *testing.T) {
		t.Parallel()
		refundtest.RunServiceConformance(t, func(t *testing.T) refundtest.Stores {
			s := newStores(t)
			return refundtest.Stores{Store: s.Store, Charges: s.Ledger, Balances: s.Balances, Captures: s.Captures, Refunds: s.Refunds}
		})
	})
	t.Run("capture services", func(t *testing.T) {
		t.Parallel()
		capturetest.RunServiceConformance(t, func(t *testing.T) capturetest.ServiceStores {
			s := newStores(t)
			return capturetest.ServiceStores{Store: s.Store, Charges: s.Ledger, Balances: capturetest.Balances{Refunds: s.Balances, Captures: s.Captures},
				Refunds: s.Refunds, CaptureRows: s.CaptureRows, VoidRows: s.VoidRows}
		})
	})
}

// Package chargetest has the charge ledger in memory, on
// idemtest.MemoryStore, for unit tests and benchmarks.
package chargetest

import (
	"context"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/idem/idemtest"
)

// Ledger is a charge.Ledger whose rows a MemoryStore's completions write.
type Ledger struct{ store *idemtest.MemoryStore }

// NewLedger returns the ledger on store: give the service a guard on the
// same store.
func NewLedger(store *idemtest.MemoryStore) *Ledger { return &Ledger{store: store} }

func key(id string) string { return "ledger/" + id }

// Entry implements charge.Ledger.
func (l *Ledger) Entry(c charge.Charge) idem.Item { return idem.Item{PK: key(c.ID), Value: c} }

// Get implements charge.Ledger.
func (l *Ledger) Get(_ context.Context, id string) (charge.Charge, error) {
	v, ok := l.store.Item(key(id))
	if !ok {
		return charge.Charge{}, charge.ErrNoCharge
	}
	return v.(charge.Charge), nil
}

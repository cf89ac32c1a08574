// Package chargetest has the charge ledger in memory, for unit tests and
// benchmarks, and the conformance every ledger passes.
package chargetest

import (
	"context"
	"sync"

	"github.com/idempotent-payments/idempay/internal/charge"
)

// Ledger is a charge.Ledger in memory.
type Ledger struct {
	mu   sync.Mutex
	rows map[string]charge.Charge
}

// NewLedger returns an empty ledger.
func NewLedger() *Ledger { return &Ledger{rows: map[string]charge.Charge{}} }

// Write implements charge.Ledger.
func (l *Ledger) Write(_ context.Context, c charge.Charge) (charge.Charge, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if existing, ok := l.rows[c.ID]; ok {
		return existing, nil
	}
	l.rows[c.ID] = c
	return c, nil
}

// Rows returns every row, in no order.
func (l *Ledger) Rows() []charge.Charge {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]charge.Charge, 0, len(l.rows))
	for _, c := range l.rows {
		out = append(out, c)
	}
	return out
}

// Get implements charge.Ledger.
func (l *Ledger) Get(_ context.Context, id string) (charge.Charge, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c, ok := l.rows[id]
	if !ok {
		return charge.Charge{}, charge.ErrNoCharge
	}
	return c, nil
}

// Len is how many rows the ledger holds.
func (l *Ledger) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.rows)
}

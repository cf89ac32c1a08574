// Package refundtest has refund.Balances in memory and the conformance
// suite every implementation must pass.
package refundtest

import (
	"context"
	"maps"
	"sync"

	"github.com/idempotent-payments/idempay/internal/refund"
)

// MemoryBalances are refund.Balances in memory, with the DynamoDB
// implementation's conditions: each method is one step under one lock.
type MemoryBalances struct {
	mu       sync.Mutex
	balances map[string]*balance
}

type balance struct {
	refund.Balance
	entries map[string]refund.Entry
}

// NewMemoryBalances returns balances with no charge refunded.
func NewMemoryBalances() *MemoryBalances {
	return &MemoryBalances{balances: map[string]*balance{}}
}

// of is the charge's balance, created empty (no charge amount yet) when
// absent.
func (m *MemoryBalances) of(chargeID string) *balance {
	b, ok := m.balances[chargeID]
	if !ok {
		b = &balance{entries: map[string]refund.Entry{}}
		m.balances[chargeID] = b
	}
	return b
}

// Reserve implements refund.Balances.
func (m *MemoryBalances) Reserve(_ context.Context, r refund.Reservation) (refund.Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.of(r.ChargeID)
	if b.ChargeAmount == 0 {
		b.ChargeAmount, b.Remaining = r.ChargeAmount, r.ChargeAmount
	}
	e, exists := b.entries[r.Key]
	switch {
	case e.State == refund.EntryReserved && e.Fence == r.Fence:
		return e, nil // this attempt's own reservation, answered again
	case e.State != "" || exists && e.Fence != r.Fence:
		return e, refund.ErrFenced
	case b.Entries >= refund.MaxEntries:
		return e, refund.ErrLimitReached
	}
	amount := r.Amount
	if amount == 0 {
		amount = b.Remaining
	}
	if amount == 0 || amount > b.Remaining {
		return e, &refund.NoRoomError{Refundable: b.Remaining}
	}
	e = refund.Entry{State: refund.EntryReserved, Fence: r.Fence, Amount: amount}
	b.entries[r.Key] = e
	b.Remaining -= amount
	b.Reserved += amount
	b.Entries++
	return e, nil
}

// Refence implements refund.Balances.
func (m *MemoryBalances) Refence(_ context.Context, chargeID, key string, fence int) (refund.Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.of(chargeID)
	e := b.entries[key]
	switch {
	case e.Fence == fence:
		return e, nil // this attempt's own write, answered again
	case e.Fence > fence:
		return e, refund.ErrFenced
	}
	e.Fence = fence
	b.entries[key] = e
	return e, nil
}

// Succeed implements refund.Balances.
func (m *MemoryBalances) Succeed(_ context.Context, chargeID, key string, fence int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.of(chargeID)
	e := b.entries[key]
	switch {
	case e.Fence != fence:
		return refund.ErrFenced
	case e.State == refund.EntrySucceeded:
		return nil
	case e.State != refund.EntryReserved:
		return refund.ErrFenced
	}
	e.State = refund.EntrySucceeded
	b.entries[key] = e
	b.Reserved -= e.Amount
	b.Refunded += e.Amount
	return nil
}

// Release implements refund.Balances.
func (m *MemoryBalances) Release(_ context.Context, chargeID, key string, fence int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.of(chargeID)
	e, exists := b.entries[key]
	switch {
	case exists && e.Fence != fence:
		return refund.ErrFenced
	case e.State == refund.EntryReleased:
		return nil
	case e.State == refund.EntrySucceeded:
		return refund.ErrFenced
	case e.State == refund.EntryReserved:
		b.Reserved -= e.Amount
		b.Remaining += e.Amount
	}
	e.State, e.Fence = refund.EntryReleased, fence
	b.entries[key] = e
	return nil
}

// Get implements refund.Balances.
func (m *MemoryBalances) Get(_ context.Context, chargeID string) (refund.Balance, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.balances[chargeID]
	if !ok {
		return refund.Balance{}, nil
	}
	out := b.Balance
	if len(b.entries) > 0 {
		out.ByKey = maps.Clone(b.entries)
	}
	return out, nil
}

// Entry implements refund.Balances.
func (m *MemoryBalances) Entry(_ context.Context, chargeID, key string) (refund.Entry, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.balances[chargeID]
	if !ok {
		return refund.Entry{}, false, nil
	}
	e, ok := b.entries[key]
	return e, ok, nil
}

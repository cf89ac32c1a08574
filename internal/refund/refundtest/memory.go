// Package refundtest has refund.Balances in memory and the conformance
// suite every implementation must pass.
package refundtest

import (
	"context"
	"maps"
	"sync"
	"time"

	"github.com/idempotent-payments/idempay/internal/capture"
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
	// capture is the capture side (MemoryBalances.Captures), opened by
	// its first step.
	capture capture.Balance
	// opened: a step opened the refund side (a reservation, with the
	// charge's amount remaining, or a capture's success).
	opened bool
	// held are the keys of the entries marked held for an operator
	// (capture.Balances.MarkHeld), each removed with its entry.
	held map[string]bool
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

// Reserve implements refund.Balances. An amount over the charge is
// refused before anything else, as the DynamoDB balances refuse it.
func (m *MemoryBalances) Reserve(_ context.Context, r refund.Reservation) (refund.Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.of(r.ChargeID)
	remaining := b.Remaining
	if !b.opened {
		remaining = r.ChargeAmount // nothing reserved yet: the charge's amount remains (none for an authorization)
	}
	if r.ChargeAmount > 0 && r.Amount > r.ChargeAmount {
		return refund.Entry{}, &refund.NoRoomError{Refundable: remaining}
	}
	e, decided, err := b.refuses(r.Intent, r.Fence, r.Stamp)
	if decided {
		return e, err
	}
	amount := r.Amount
	if amount == 0 {
		amount = remaining
	}
	if amount == 0 || amount > remaining {
		return e, &refund.NoRoomError{Refundable: remaining}
	}
	if !b.opened {
		b.ChargeAmount, b.Remaining, b.opened = r.ChargeAmount, r.ChargeAmount, true
	}
	e = refund.Entry{State: refund.EntryReserved, Fence: r.Fence, Amount: amount}
	b.entries[r.Intent.Key] = e
	b.Remaining -= amount
	b.Reserved += amount
	b.Entries++
	return e, nil
}

// refuses says why the balance refuses a reservation of in by fence,
// stamped stamp, when its entry, the watermarks or the limit decide it
// (decided); the entry is its own reservation, answered again, with no
// error. Otherwise the operation's own conditions decide.
func (b *balance) refuses(in refund.Intent, fence int, stamp time.Time) (e refund.Entry, decided bool, err error) {
	e, exists := b.entries[in.Key]
	switch {
	case e.State == refund.EntryReserved && e.Fence == fence:
		return e, true, nil // this attempt's own reservation, answered again
	case exists:
		return e, true, refund.ErrFenced
	case b.folds(in):
		return refund.Entry{State: refund.EntryReleased}, true, refund.ErrReleased
	case !b.FoldedAt.IsZero() && !stamp.After(b.FoldedAt):
		return refund.Entry{}, true, refund.ErrStampPassed
	case b.Entries >= refund.MaxEntries:
		return e, true, refund.ErrLimitReached
	}
	return e, false, nil
}

// folds reports whether the balance's watermark folds the intent.
func (b *balance) folds(in refund.Intent) bool {
	return !b.ReleasedThrough.IsZero() && !b.ReleasedThrough.Before(in.Claimed.Truncate(time.Millisecond))
}

// fold raises FoldedAt to the intent's FoldAt and, unless byClaim is
// false, ReleasedThrough to its claim time; neither is ever lowered.
func (b *balance) fold(in refund.Intent, byClaim bool) {
	if in.FoldAt.After(b.FoldedAt) {
		b.FoldedAt = in.FoldAt
	}
	if byClaim && !b.folds(in) {
		b.ReleasedThrough = in.Claimed.Truncate(time.Millisecond)
	}
}

// remove folds the intent's entry out of the balance.
func (b *balance) remove(key string) {
	delete(b.entries, key)
	delete(b.held, key)
	b.Entries--
}

// Refence implements refund.Balances.
func (m *MemoryBalances) Refence(_ context.Context, chargeID string, in refund.Intent, fence int) (refund.Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.of(chargeID)
	e, exists := b.entries[in.Key]
	switch {
	case !exists:
		b.fold(in, true) // no attempt reserved, and now none can
		return refund.Entry{State: refund.EntryReleased}, nil
	case e.Fence == fence:
		return e, nil // this attempt's own write, answered again
	case e.Fence > fence:
		return e, refund.ErrFenced
	}
	e.Fence = fence
	b.entries[in.Key] = e
	return e, nil
}

// Succeed implements refund.Balances.
func (m *MemoryBalances) Succeed(_ context.Context, chargeID string, in refund.Intent, fence int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.of(chargeID)
	e, exists := b.entries[in.Key]
	switch {
	case !exists:
		return nil // ended: the caller holds the row
	case e.Fence != fence:
		return refund.ErrFenced
	case e.State == refund.EntrySucceeded: // an earlier version's: folded
	case e.State != refund.EntryReserved:
		return refund.ErrFenced
	default:
		b.Reserved -= e.Amount
		b.Refunded += e.Amount
	}
	b.remove(in.Key)
	b.fold(in, !in.First)
	return nil
}

// Release implements refund.Balances.
func (m *MemoryBalances) Release(_ context.Context, chargeID string, in refund.Intent, fence int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.of(chargeID)
	e, exists := b.entries[in.Key]
	switch {
	case !exists:
		b.fold(in, true) // nothing reserved, or ended already
		return nil
	case e.State != refund.EntryReserved || e.Fence != fence:
		return refund.ErrFenced
	}
	b.Reserved -= e.Amount
	b.Remaining += e.Amount
	b.remove(in.Key)
	b.fold(in, true)
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
	out.Captured = b.capture.Captured
	if len(b.entries) > 0 {
		out.ByKey = maps.Clone(b.entries)
	}
	return out, nil
}

// Entry implements refund.Balances.
func (m *MemoryBalances) Entry(_ context.Context, chargeID string, in refund.Intent) (refund.Entry, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.balances[chargeID]
	if !ok {
		return refund.Entry{}, false, nil
	}
	if e, ok := b.entries[in.Key]; ok {
		return e, true, nil
	}
	if b.folds(in) {
		return refund.Entry{State: refund.EntryReleased}, true, nil
	}
	return refund.Entry{}, false, nil
}

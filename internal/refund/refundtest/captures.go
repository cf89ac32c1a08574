package refundtest

import (
	"context"

	"github.com/idempotent-payments/idempay/internal/capture"
	"github.com/idempotent-payments/idempay/internal/refund"
)

// Captures is the capture side of the same balances (capture.Balances),
// with the DynamoDB implementation's conditions: each method is one step
// under the balances' one lock, on the same entries and watermarks as
// refunds.
func (m *MemoryBalances) Captures() capture.Balances { return memoryCaptures{m} }

type memoryCaptures struct{ m *MemoryBalances }

// open is the capture side of b, opened with all of authorized
// capturable when no step has touched it.
func (b *balance) open(authorized int64) *capture.Balance {
	if b.capture.Authorized == 0 {
		b.capture = capture.Balance{Authorized: authorized, Capturable: authorized}
	}
	return &b.capture
}

// Reserve implements capture.Balances.
func (c memoryCaptures) Reserve(_ context.Context, r capture.Reservation) (refund.Entry, error) {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	b := c.m.of(r.ChargeID)
	cb := b.capture
	if cb.Authorized == 0 {
		cb = capture.Balance{Authorized: r.Authorized, Capturable: r.Authorized}
	}
	if r.Kind != capture.Void && r.Amount > r.Authorized {
		return refund.Entry{}, &capture.NoRoomError{Capturable: cb.Capturable}
	}
	e, decided, err := b.refuses(r.Intent, r.Fence, r.Stamp)
	if decided {
		return e, err
	}
	amount := r.Amount
	if amount <= 0 || r.Kind == capture.Void {
		amount = cb.Capturable
	}
	switch closing := closes(r.Kind); {
	case cb.Closed != "":
		return e, &capture.ClosedError{Closed: cb.Closed}
	case cb.Closing != "":
		return e, &capture.InFlightError{Kind: cb.ClosingKind, Held: b.held[cb.Closing]}
	case closing && cb.Reserved > 0:
		return e, &capture.InFlightError{Kind: capture.Partial, Held: len(b.held) > 0}
	case amount == 0 && cb.Reserved > 0:
		return e, &capture.InFlightError{Kind: capture.Partial, Held: len(b.held) > 0}
	case amount == 0:
		return e, capture.ErrNothingCapturable
	case amount > cb.Capturable:
		return e, &capture.NoRoomError{Capturable: cb.Capturable}
	}
	cs := b.open(r.Authorized)
	cs.Capturable -= amount
	cs.Reserved += amount
	if closes(r.Kind) {
		cs.Closing, cs.ClosingKind = r.Intent.Key, r.Kind
	}
	e = refund.Entry{State: refund.EntryReserved, Fence: r.Fence, Amount: amount}
	b.entries[r.Intent.Key] = e
	b.Entries++
	return e, nil
}

// Refence implements capture.Balances: the balance's own.
func (c memoryCaptures) Refence(ctx context.Context, chargeID string, in refund.Intent, fence int) (refund.Entry, error) {
	return c.m.Refence(ctx, chargeID, in, fence)
}

// Entry implements capture.Balances: the balance's own.
func (c memoryCaptures) Entry(ctx context.Context, chargeID string, in refund.Intent) (refund.Entry, bool, error) {
	return c.m.Entry(ctx, chargeID, in)
}

// Succeed implements capture.Balances.
func (c memoryCaptures) Succeed(_ context.Context, chargeID string, in refund.Intent, fence int, kind capture.Kind) error {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	b := c.m.of(chargeID)
	e, exists := b.entries[in.Key]
	switch {
	case !exists:
		return nil // ended: the caller holds the row
	case e.State != refund.EntryReserved || e.Fence != fence:
		return refund.ErrFenced
	case !ofKind(b.capture, in.Key, kind):
		return capture.ErrKindDiffers
	}
	cs := &b.capture
	cs.Reserved -= e.Amount
	switch kind {
	case capture.Void:
		cs.Released += e.Amount
		cs.Closed = capture.ClosedVoided
	default:
		cs.Captured += e.Amount
		b.Remaining += e.Amount // refundable from now on
		b.opened = true
	}
	if kind == capture.Final {
		cs.Released += cs.Capturable
		cs.Capturable = 0
		cs.Closed = capture.ClosedCaptured
	}
	if closes(kind) {
		cs.Closing, cs.ClosingKind = "", ""
	}
	b.remove(in.Key)
	b.fold(in, !in.First)
	return nil
}

func closes(kind capture.Kind) bool { return kind == capture.Final || kind == capture.Void }

// ofKind reports whether an entry of key reserved as kind is the one the
// capture side holds: a closing intent is its Closing, of its kind, and a
// capture is not.
func ofKind(cs capture.Balance, key string, kind capture.Kind) bool {
	if closes(kind) {
		return cs.Closing == key && cs.ClosingKind == kind
	}
	return cs.Closing != key
}

// Release implements capture.Balances.
func (c memoryCaptures) Release(_ context.Context, chargeID string, in refund.Intent, fence int, kind capture.Kind) error {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	b := c.m.of(chargeID)
	e, exists := b.entries[in.Key]
	switch {
	case !exists:
		b.fold(in, true) // nothing reserved, or ended already
		return nil
	case e.State != refund.EntryReserved || e.Fence != fence:
		return refund.ErrFenced
	case !ofKind(b.capture, in.Key, kind):
		return capture.ErrKindDiffers
	}
	cs := &b.capture
	cs.Reserved -= e.Amount
	cs.Capturable += e.Amount
	if closes(kind) {
		cs.Closing, cs.ClosingKind = "", ""
	}
	b.remove(in.Key)
	b.fold(in, true)
	return nil
}

// MarkHeld implements capture.Balances.
func (c memoryCaptures) MarkHeld(_ context.Context, chargeID string, in refund.Intent, fence int, held bool) error {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	b := c.m.of(chargeID)
	e, exists := b.entries[in.Key]
	switch {
	case !exists:
		return nil // ended: it stops nothing
	case e.State != refund.EntryReserved || e.Fence != fence:
		return refund.ErrFenced
	}
	if !held {
		delete(b.held, in.Key)
		return nil
	}
	if b.held == nil {
		b.held = map[string]bool{}
	}
	b.held[in.Key] = true
	return nil
}

// Expire implements capture.Balances.
func (c memoryCaptures) Expire(_ context.Context, chargeID string, authorized int64) (capture.Closed, bool, error) {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	b := c.m.of(chargeID)
	cs := b.open(authorized)
	switch {
	case cs.Closed != "":
		return cs.Closed, false, nil
	case cs.Closing != "":
		return "", false, &capture.InFlightError{Kind: cs.ClosingKind, Held: b.held[cs.Closing]}
	case cs.Reserved > 0:
		return "", false, &capture.InFlightError{Kind: capture.Partial, Held: len(b.held) > 0}
	}
	cs.Released += cs.Capturable
	cs.Capturable = 0
	cs.Closed = capture.ClosedExpired
	return cs.Closed, true, nil
}

// Get implements capture.Balances.
func (c memoryCaptures) Get(_ context.Context, chargeID string) (capture.Balance, error) {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	if b, ok := c.m.balances[chargeID]; ok {
		cb := b.capture
		cb.Refunded, cb.Held = b.Refunded, len(b.held)
		return cb, nil
	}
	return capture.Balance{}, nil
}

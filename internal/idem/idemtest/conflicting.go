package idemtest

import (
	"context"
	"sync"
	"time"

	"github.com/idempotent-payments/idempay/internal/idem"
)

// The writes of idem.Store, by the names Conflicting asks Refuse about.
const (
	WriteClaim        = "Claim"
	WriteTakeOver     = "TakeOver"
	WriteTakeOverHeld = "TakeOverHeld"
	WriteHold         = "Hold"
	WriteSetLease     = "SetLease"
	WriteComplete     = "Complete"
	WriteRelease      = "Release"
	WriteMarkRelease  = "MarkRelease"
	WriteFlag         = "Flag"
	WritePurge        = "Purge"
)

// Conflicting is an idem.Store that refuses chosen writes with
// idem.ErrWriteConflict without passing them on, so without any effect,
// as a strongly consistent global table refuses a write that races another
// region's. Before each write it asks Refuse with the write's name
// (Write*); a nil Refuse refuses none. Reads always pass.
type Conflicting struct {
	idem.Store
	Refuse func(write string) bool
}

func (c *Conflicting) refused(write string) bool { return c.Refuse != nil && c.Refuse(write) }

// Claim implements idem.Store.
func (c *Conflicting) Claim(ctx context.Context, rec idem.Record, now time.Time) (*idem.Record, bool, error) {
	if c.refused(WriteClaim) {
		return nil, false, idem.ErrWriteConflict
	}
	return c.Store.Claim(ctx, rec, now)
}

// TakeOver implements idem.Store.
func (c *Conflicting) TakeOver(ctx context.Context, h idem.Handover) (*idem.Record, error) {
	if c.refused(WriteTakeOver) {
		return nil, idem.ErrWriteConflict
	}
	return c.Store.TakeOver(ctx, h)
}

// TakeOverHeld implements idem.Store.
func (c *Conflicting) TakeOverHeld(ctx context.Context, h idem.Handover) (*idem.Record, error) {
	if c.refused(WriteTakeOverHeld) {
		return nil, idem.ErrWriteConflict
	}
	return c.Store.TakeOverHeld(ctx, h)
}

// Hold implements idem.Store.
func (c *Conflicting) Hold(ctx context.Context, pk, token, heldToken string, hold idem.Hold, leaseExpiresAt time.Time) error {
	if c.refused(WriteHold) {
		return idem.ErrWriteConflict
	}
	return c.Store.Hold(ctx, pk, token, heldToken, hold, leaseExpiresAt)
}

// SetLease implements idem.Store.
func (c *Conflicting) SetLease(ctx context.Context, pk, token string, leaseExpiresAt time.Time) error {
	if c.refused(WriteSetLease) {
		return idem.ErrWriteConflict
	}
	return c.Store.SetLease(ctx, pk, token, leaseExpiresAt)
}

// Complete implements idem.Store.
func (c *Conflicting) Complete(ctx context.Context, pk, token string, resp idem.Response, settled *idem.Settlement, expiresAt time.Time) error {
	if c.refused(WriteComplete) {
		return idem.ErrWriteConflict
	}
	return c.Store.Complete(ctx, pk, token, resp, settled, expiresAt)
}

// Release implements idem.Store.
func (c *Conflicting) Release(ctx context.Context, pk, token string) error {
	if c.refused(WriteRelease) {
		return idem.ErrWriteConflict
	}
	return c.Store.Release(ctx, pk, token)
}

// MarkRelease implements idem.Store.
func (c *Conflicting) MarkRelease(ctx context.Context, m idem.ReleaseMarker) error {
	if c.refused(WriteMarkRelease) {
		return idem.ErrWriteConflict
	}
	return c.Store.MarkRelease(ctx, m)
}

// Flag implements idem.Store.
func (c *Conflicting) Flag(ctx context.Context, e idem.InFlight, now time.Time) error {
	if c.refused(WriteFlag) {
		return idem.ErrWriteConflict
	}
	return c.Store.Flag(ctx, e, now)
}

// Purge implements idem.Store.
func (c *Conflicting) Purge(ctx context.Context, e idem.Expired, now time.Time) error {
	if c.refused(WritePurge) {
		return idem.ErrWriteConflict
	}
	return c.Store.Purge(ctx, e, now)
}

// RefuseFirst refuses the first n writes named write, then none: a
// Conflicting.Refuse that is safe for concurrent use. A negative n refuses
// every one.
func RefuseFirst(write string, n int) func(string) bool {
	var mu sync.Mutex
	return func(w string) bool {
		mu.Lock()
		defer mu.Unlock()
		if w != write || n == 0 {
			return false
		}
		n--
		return true
	}
}

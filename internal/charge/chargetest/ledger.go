// Package chargetest has the charge ledger in memory, for unit tests and
// benchmarks, and the conformance every ledger passes.
package chargetest

import (
	"cmp"
	"context"
	"fmt"
	"iter"
	"slices"
	"sync"
	"time"

	"github.com/idempotent-payments/idempay/internal/capture"
	"github.com/idempotent-payments/idempay/internal/charge"
)

// Ledger is a charge.Ledger and its charge.Books in memory.
type Ledger struct {
	mu          sync.Mutex
	rows        map[string]charge.Charge
	held        map[string]charge.HeldMarker  // the held markers, by charge id
	voided      map[string]bool               // the voided markers, by charge id
	unpublished map[string]charge.Unpublished // by row id, a charge's or another operation's (List)
	listed      map[string]bool               // the rows of other operations listed here, by id
	beats       map[string]time.Time          // by region
	unlisted    map[string]bool               // the authorizations taken off the listing (Unlist), by charge id
}

// NewLedger returns an empty ledger.
func NewLedger() *Ledger {
	return &Ledger{rows: map[string]charge.Charge{}, held: map[string]charge.HeldMarker{}, voided: map[string]bool{},
		unpublished: map[string]charge.Unpublished{}, listed: map[string]bool{}, beats: map[string]time.Time{}, unlisted: map[string]bool{}}
}

// Write implements charge.Ledger; a row with a region is unpublished.
func (l *Ledger) Write(_ context.Context, c charge.Charge) (charge.Charge, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if existing, ok := l.rows[c.ID]; ok {
		return existing, nil
	}
	if l.voided[c.ID] {
		return charge.Charge{}, fmt.Errorf("put charge %s: %w", c.ID, charge.ErrVoided)
	}
	delete(l.held, c.ID)
	l.rows[c.ID] = c
	if c.Region != "" {
		l.unpublished[c.ID] = charge.Unpublished{ID: c.ID, Region: c.Region, Since: c.CreatedAt.Truncate(time.Millisecond)}
	}
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
	if m, held := l.held[id]; !ok && held {
		return charge.Charge{}, &charge.HeldMarkerError{ID: id, Marker: m}
	}
	if !ok && l.voided[id] {
		return charge.Charge{}, fmt.Errorf("charge %s: %w: %w", id, charge.ErrNoCharge, charge.ErrVoided)
	}
	if !ok {
		return charge.Charge{}, charge.ErrNoCharge
	}
	return c, nil
}

// Hold implements charge.Ledger.
func (l *Ledger) Hold(_ context.Context, id string, m charge.HeldMarker) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, row := l.rows[id]; row || l.voided[id] {
		return nil
	}
	if _, held := l.held[id]; !held {
		l.held[id] = m
	}
	return nil
}

// Void implements charge.Ledger.
func (l *Ledger) Void(_ context.Context, id string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, row := l.rows[id]; row {
		return fmt.Errorf("void charge %s: %w", id, charge.ErrLedgerRowExists)
	}
	delete(l.held, id)
	l.voided[id] = true
	return nil
}

// Len is how many rows the ledger holds.
func (l *Ledger) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.rows)
}

// List lists u, a row another operation's memory ledger wrote with a
// region, in these books beside the charges' (refundtest.NewLedgerListedIn).
func (l *Ledger) List(u charge.Unpublished) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.listed[u.ID] = true
	l.unpublished[u.ID] = u
}

// MarkPublished implements charge.Books, for a charge's row or one listed
// by another operation's ledger.
func (l *Ledger) MarkPublished(_ context.Context, id string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.rows[id]; !ok && !l.listed[id] {
		return charge.ErrNoCharge
	}
	delete(l.unpublished, id)
	return nil
}

// Unpublished implements charge.Books, oldest first.
func (l *Ledger) Unpublished(_ context.Context, before time.Time) iter.Seq2[charge.Unpublished, error] {
	l.mu.Lock()
	var out []charge.Unpublished
	for _, u := range l.unpublished {
		if u.Since.Before(before) {
			out = append(out, u)
		}
	}
	l.mu.Unlock()
	slices.SortFunc(out, func(a, b charge.Unpublished) int { return cmp.Or(a.Since.Compare(b.Since), cmp.Compare(a.ID, b.ID)) })
	return func(yield func(charge.Unpublished, error) bool) {
		for _, u := range out {
			if !yield(u, nil) {
				return
			}
		}
	}
}

// Beat implements charge.Books.
func (l *Ledger) Beat(_ context.Context, region string, at time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.beats[region] = at.Truncate(time.Millisecond)
	return nil
}

// LastBeat implements charge.Books.
func (l *Ledger) LastBeat(_ context.Context, region string) (time.Time, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.beats[region], nil
}

// Lapsed implements capture.Authorizations: the authorization rows not
// unlisted whose expiry is at or before before, earliest first.
func (l *Ledger) Lapsed(_ context.Context, before time.Time) iter.Seq2[capture.Lapsed, error] {
	l.mu.Lock()
	var out []capture.Lapsed
	for _, c := range l.rows {
		if !c.AuthorizationExpiresAt.IsZero() && !c.AuthorizationExpiresAt.After(before) && !l.unlisted[c.ID] {
			out = append(out, capture.Lapsed{ChargeID: c.ID, Authorized: c.Amount, ExpiresAt: c.AuthorizationExpiresAt})
		}
	}
	l.mu.Unlock()
	slices.SortFunc(out, func(a, b capture.Lapsed) int { return a.ExpiresAt.Compare(b.ExpiresAt) })
	return func(yield func(capture.Lapsed, error) bool) {
		for _, a := range out {
			if !yield(a, nil) {
				return
			}
		}
	}
}

// Unlist implements capture.Authorizations.
func (l *Ledger) Unlist(_ context.Context, chargeID string, expired time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c, ok := l.rows[chargeID]; ok {
		l.unlisted[chargeID] = true
		if !expired.IsZero() { // as the table's: any row unlisted as expired is marked
			c.Expired = true
			l.rows[chargeID] = c
		}
	}
	return nil
}

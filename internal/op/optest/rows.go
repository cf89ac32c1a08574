// Package optest holds what the tests of every operation share: an
// operation's rows in memory.
package optest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/op"
)

// RowErrors are the errors an operation names for its rows (op.Rows):
// no such row, a voided intent, a row that refuses a void.
type RowErrors struct{ NoRow, Voided, RowExists error }

// Lister lists a row in the books every operation's rows share
// (chargetest.Ledger.List), as the table lists them beside the charges'.
type Lister interface {
	List(u charge.Unpublished)
}

// Rows is op.Rows[R] in memory: rows R, whose origin origin reads,
// failing with errs.
type Rows[R any] struct {
	mu     sync.Mutex
	rows   map[string]R
	voided map[string]bool // the voided markers, by row id
	origin func(R) op.Origin
	errs   RowErrors
	books  Lister // nil: its rows are listed nowhere
}

// NewRows returns empty rows; books, when not nil, lists each row
// written with a region as unpublished.
func NewRows[R any](origin func(R) op.Origin, errs RowErrors, books Lister) *Rows[R] {
	return &Rows[R]{rows: map[string]R{}, voided: map[string]bool{}, origin: origin, errs: errs, books: books}
}

// Write implements op.Rows: the first row under an id wins; none is
// written where the voided marker is.
func (l *Rows[R]) Write(_ context.Context, r R) (R, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	o := l.origin(r)
	if old, ok := l.rows[o.ID]; ok {
		return old, nil
	}
	if l.voided[o.ID] {
		var zero R
		return zero, fmt.Errorf("put %s: %w", o.ID, l.errs.Voided)
	}
	l.rows[o.ID] = r
	if l.books != nil && o.Region != "" {
		l.books.List(charge.Unpublished{ID: o.ID, Region: o.Region, Since: o.CreatedAt.Truncate(time.Millisecond)})
	}
	return r, nil
}

// Get implements op.Rows: a voided marker reads as no row and voided.
func (l *Rows[R]) Get(_ context.Context, id string) (R, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.rows[id]
	switch {
	case !ok && l.voided[id]:
		return r, fmt.Errorf("%s: %w: %w", id, l.errs.NoRow, l.errs.Voided)
	case !ok:
		return r, l.errs.NoRow
	}
	return r, nil
}

// Void implements op.Rows: refused where a row is.
func (l *Rows[R]) Void(_ context.Context, id string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.rows[id]; ok {
		return fmt.Errorf("void %s: %w", id, l.errs.RowExists)
	}
	l.voided[id] = true
	return nil
}

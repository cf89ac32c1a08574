package capturetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/capture"
	"github.com/idempotent-payments/idempay/internal/op"
)

// Ledger is capture.Ledger in memory, for one of the two operations.
type Ledger struct {
	mu     sync.Mutex
	rows   map[string]capture.Row
	voided map[string]bool // the voided markers, by row id
}

// NewLedger returns an empty ledger.
func NewLedger() *Ledger { return &Ledger{rows: map[string]capture.Row{}, voided: map[string]bool{}} }

// Write implements capture.Ledger: the first row under an id wins; none
// is written where the voided marker is.
func (l *Ledger) Write(_ context.Context, r capture.Row) (capture.Row, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if old, ok := l.rows[r.ID]; ok {
		return old, nil
	}
	if l.voided[r.ID] {
		return capture.Row{}, fmt.Errorf("put %s: %w", r.ID, capture.ErrVoided)
	}
	l.rows[r.ID] = r
	return r, nil
}

// Get implements capture.Ledger.
func (l *Ledger) Get(_ context.Context, id string) (capture.Row, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.rows[id]
	switch {
	case !ok && l.voided[id]:
		return capture.Row{}, fmt.Errorf("%s: %w: %w", id, capture.ErrNoRow, capture.ErrVoided)
	case !ok:
		return capture.Row{}, capture.ErrNoRow
	}
	return r, nil
}

// Void implements capture.Ledger.
func (l *Ledger) Void(_ context.Context, id string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.rows[id]; ok {
		return fmt.Errorf("void %s: %w", id, capture.ErrRowExists)
	}
	l.voided[id] = true
	return nil
}

// RunLedgerConformance runs what every capture.Ledger must do, for the
// rows of ids made by id (capture.CaptureID or VoidID) of kind: a row
// written reads back equal; a second write of the same id changes nothing
// and returns the first row; a missing row is ErrNoRow; the voided marker
// refuses every row after it.
func RunLedgerConformance(t *testing.T, ledger capture.Ledger, id func(string) string, kind capture.Kind) {
	rowID := func() string { return id(chargeOf()[3:]) }
	want := capture.Row{
		Origin: op.Origin{ID: rowID(), Account: "acct_l", IdempotencyKey: "action-1", Source: "http",
			AcquirerID: "sandbox", CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
		ChargeID: chargeOf(), Kind: kind, Status: "succeeded", Amount: 123456789012, Currency: "BRL",
		AcquirerActionID: "act_1",
	}
	if kind == capture.Void {
		want.Reason = capture.ReasonAbandoned
	}
	if got, err := ledger.Write(ctx, want); err != nil || got != want {
		t.Fatalf("Write = %+v, %v", got, err)
	}
	late := want
	late.Status, late.Amount, late.CreatedAt = "declined", 1, want.CreatedAt.Add(time.Minute)
	if got, err := ledger.Write(ctx, late); err != nil || got != want {
		t.Fatalf("a second Write = %+v, %v; want the first row", got, err)
	}
	if got, err := ledger.Get(ctx, want.ID); err != nil || got != want {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	if _, err := ledger.Get(ctx, rowID()); !errors.Is(err, capture.ErrNoRow) {
		t.Fatalf("Get of a missing row: %v", err)
	}
	if err := ledger.Void(ctx, want.ID); !errors.Is(err, capture.ErrRowExists) {
		t.Fatalf("Void of a row: %v, want ErrRowExists", err)
	}
	voided := want
	voided.ID = rowID()
	for range 2 {
		if err := ledger.Void(ctx, voided.ID); err != nil {
			t.Fatalf("Void: %v", err)
		}
	}
	if _, err := ledger.Write(ctx, voided); !errors.Is(err, capture.ErrVoided) {
		t.Fatalf("Write after the void: %v, want ErrVoided", err)
	}
	if _, err := ledger.Get(ctx, voided.ID); !errors.Is(err, capture.ErrNoRow) || !errors.Is(err, capture.ErrVoided) {
		t.Fatalf("Get of a voided row: %v, want no row, voided", err)
	}
}

package capturetest

import (
	"errors"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/capture"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/op/optest"
)

// Ledger is capture.Ledger in memory, for one of the two operations.
type Ledger = optest.Rows[capture.Row]

// NewLedger returns an empty ledger.
func NewLedger() *Ledger { return NewLedgerListedIn(nil) }

// NewLedgerListedIn returns an empty ledger whose rows written with a
// region are listed unpublished in books, as the table lists them beside
// the charges'.
func NewLedgerListedIn(books optest.Lister) *Ledger {
	return optest.NewRows(func(r capture.Row) op.Origin { return r.Origin },
		optest.RowErrors{NoRow: capture.ErrNoRow, Voided: capture.ErrVoided, RowExists: capture.ErrRowExists}, books)
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

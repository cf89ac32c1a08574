package refundtest

import (
	"errors"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/refund"
)

// RunLedgerConformance runs what every refund.Ledger must do: a row
// written reads back equal; a second write of the same id changes nothing
// and returns the first row; a missing row is ErrNoRefund; the voided
// marker refuses every row after it.
func RunLedgerConformance(t *testing.T, ledger refund.Ledger) {
	id := refund.ID(chargeOf(t)[3:])
	want := refund.Refund{
		Origin: op.Origin{ID: id, Account: "acct_l", IdempotencyKey: "refund-1", Source: "http",
			AcquirerID: "sandbox", CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
		ChargeID: chargeOf(t), Status: "succeeded", Amount: 123456789012, Currency: "BRL",
		Reason: refund.ReasonDuplicate, AcquirerRefundID: "rf_1",
	}
	if got, err := ledger.Write(ctx, want); err != nil || got != want {
		t.Fatalf("Write = %+v, %v", got, err)
	}
	late := want
	late.Status, late.Amount, late.CreatedAt = "declined", 1, want.CreatedAt.Add(time.Minute)
	if got, err := ledger.Write(ctx, late); err != nil || got != want {
		t.Fatalf("a second Write = %+v, %v; want the first row", got, err)
	}
	if got, err := ledger.Get(ctx, id); err != nil || got != want {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	if _, err := ledger.Get(ctx, refund.ID(chargeOf(t)[3:])); !errors.Is(err, refund.ErrNoRefund) {
		t.Fatalf("Get of a missing refund: %v", err)
	}
	// The voided marker: refused over a row; over nothing, it reads as no
	// refund, voided, and refuses every row after it; a void again is
	// nothing new.
	if err := ledger.Void(ctx, id); !errors.Is(err, refund.ErrRowExists) {
		t.Fatalf("Void of a row: %v, want ErrRowExists", err)
	}
	if got, err := ledger.Get(ctx, id); err != nil || got != want {
		t.Fatalf("the row after a Void = %+v, %v", got, err)
	}
	voided := want
	voided.ID = refund.ID(chargeOf(t)[3:])
	for range 2 {
		if err := ledger.Void(ctx, voided.ID); err != nil {
			t.Fatalf("Void: %v", err)
		}
	}
	if _, err := ledger.Write(ctx, voided); !errors.Is(err, refund.ErrVoided) {
		t.Fatalf("Write after the void: %v, want ErrVoided", err)
	}
	if _, err := ledger.Get(ctx, voided.ID); !errors.Is(err, refund.ErrNoRefund) || !errors.Is(err, refund.ErrVoided) {
		t.Fatalf("Get of a voided refund: %v, want no refund, voided", err)
	}
}

// RunBooksConformance runs what the books (charge.Books) must do with
// refund rows, which the table lists beside the charges': a row written
// with a region is listed unpublished until MarkPublished; a row of no
// region is listed nowhere.
func RunBooksConformance(t *testing.T, newStores func(t *testing.T) (refund.Ledger, charge.Books)) {
	ledger, books := newStores(t)
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC) // rows of the past: every one is before the listing's bound
	row := func(region string) refund.Refund {
		c := chargeOf(t)
		return refund.Refund{
			Origin: op.Origin{ID: refund.ID(c[3:]), Account: "acct_b", IdempotencyKey: "refund-" + region,
				Source: "http", AcquirerID: "sandbox", CreatedAt: at, Region: region},
			ChargeID: c, Status: "succeeded", Amount: 10, Currency: "BRL", AcquirerRefundID: "rf_" + region,
		}
	}
	listed, none := row("a"), row("")
	for _, r := range []refund.Refund{listed, none} {
		if _, err := ledger.Write(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	unpublished := func() map[string]string {
		out := map[string]string{}
		for u, err := range books.Unpublished(ctx, at.Add(time.Hour)) {
			if err != nil {
				t.Fatal(err)
			}
			out[u.ID] = u.Region
		}
		return out
	}
	if got := unpublished(); len(got) != 1 || got[listed.ID] != "a" {
		t.Fatalf("listed %v; want the refund row written with a region alone", got)
	}
	if err := books.MarkPublished(ctx, listed.ID); err != nil {
		t.Fatal(err)
	}
	if got := unpublished(); len(got) != 0 {
		t.Fatalf("after MarkPublished: listed %v", got)
	}
}

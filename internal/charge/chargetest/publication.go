package chargetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/op"
)

// NewBooksFunc returns a fresh ledger and the books of its rows'
// publication, on one table.
type NewBooksFunc func(t *testing.T) (charge.Ledger, charge.Books)

// RunBooksConformance runs what every charge.Books must do:
// a row written with a region is listed as unpublished, once its time is
// before the listing's, until it is marked published, and a row without a
// region never is; a second write of the row lists nothing again; marking
// twice changes nothing, and marking a missing row is ErrNoCharge; a
// region's heartbeat reads back as its last beat, and the zero time
// before its first.
func RunBooksConformance(t *testing.T, newBooks NewBooksFunc) {
	ctx := context.Background()
	ledger, books := newBooks(t)
	row := func(region string, at time.Time) charge.Charge {
		return charge.Charge{
			Origin: op.Origin{ID: newID(), Account: "acct_books", CreatedAt: at, Region: region},
			Status: acquirer.StatusCaptured, Amount: 100, Currency: "BRL", OrderID: "o",
		}
	}
	a, b, local := row("region-a", epoch), row("region-b", epoch.Add(time.Second)), row("", epoch)
	for _, c := range []charge.Charge{a, b, local} {
		if got, err := ledger.Write(ctx, c); err != nil || got != c {
			t.Fatalf("Write = %+v, %v; want %+v", got, err, c)
		}
	}
	if got, err := ledger.Get(ctx, b.ID); err != nil || got.Region != "region-b" {
		t.Fatalf("Get = %+v, %v; want the row with its region", got, err)
	}
	wantListed(t, books, epoch, nil)
	wantListed(t, books, epoch.Add(time.Second), []charge.Unpublished{{ID: a.ID, Region: "region-a", Since: epoch}})
	both := []charge.Unpublished{{ID: a.ID, Region: "region-a", Since: epoch}, {ID: b.ID, Region: "region-b", Since: b.CreatedAt}}
	wantListed(t, books, epoch.Add(time.Hour), both)

	if err := books.MarkPublished(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if err := books.MarkPublished(ctx, a.ID); err != nil {
		t.Fatalf("marking again: %v", err)
	}
	wantListed(t, books, epoch.Add(time.Hour), both[1:])
	again := a
	again.CreatedAt = epoch.Add(time.Minute)
	if got, err := ledger.Write(ctx, again); err != nil || got != a {
		t.Fatalf("a second Write = %+v, %v; want the first row", got, err)
	}
	wantListed(t, books, epoch.Add(time.Hour), both[1:])
	if got, err := ledger.Get(ctx, a.ID); err != nil || got != a {
		t.Fatalf("Get after the mark = %+v, %v; want the row unchanged", got, err)
	}
	if err := books.MarkPublished(ctx, newID()); !errors.Is(err, charge.ErrNoCharge) {
		t.Fatalf("marking a missing row: %v, want ErrNoCharge", err)
	}

	if at, err := books.LastBeat(ctx, "region-a"); err != nil || !at.IsZero() {
		t.Fatalf("LastBeat before any = %v, %v", at, err)
	}
	for _, at := range []time.Time{epoch, epoch.Add(time.Minute)} {
		if err := books.Beat(ctx, "region-a", at); err != nil {
			t.Fatal(err)
		}
		if got, err := books.LastBeat(ctx, "region-a"); err != nil || !got.Equal(at) {
			t.Fatalf("LastBeat = %v, %v; want %v", got, err, at)
		}
	}
	if got, err := books.LastBeat(ctx, "region-b"); err != nil || !got.IsZero() {
		t.Fatalf("another region's LastBeat = %v, %v", got, err)
	}
}

// wantListed: books lists exactly want (in any order) as unpublished
// before before.
func wantListed(t *testing.T, books charge.Books, before time.Time, want []charge.Unpublished) {
	t.Helper()
	got := map[string]charge.Unpublished{}
	for u, err := range books.Unpublished(context.Background(), before) {
		if err != nil {
			t.Fatal(err)
		}
		got[u.ID] = u
	}
	if len(got) != len(want) {
		t.Fatalf("unpublished before %s: %v, want %v", before, got, want)
	}
	for _, w := range want {
		if g, ok := got[w.ID]; !ok || g.Region != w.Region || !g.Since.Equal(w.Since) {
			t.Fatalf("unpublished before %s: %v, want %v", before, got, want)
		}
	}
}

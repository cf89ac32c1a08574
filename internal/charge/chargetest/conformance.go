package chargetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/idem"
)

// NewLedgerFunc returns a fresh store and the ledger on it.
type NewLedgerFunc func(t *testing.T) (idem.Store, charge.Ledger)

// RunLedgerConformance runs what every charge.Ledger must do on the store
// its rows are written to: a row written with a completion reads back
// equal; a missing one is ErrNoCharge; a second row for the same charge is
// refused with the completion.
func RunLedgerConformance(t *testing.T, newLedger NewLedgerFunc) {
	ctx := context.Background()
	store, ledger := newLedger(t)
	guard := idem.NewGuard(store, idem.Config{})
	complete := func(key string, c charge.Charge) error {
		t.Helper()
		claim, err := guard.Begin(ctx, idem.Scope{Operation: charge.Operation, Account: c.Account, Key: key}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return claim.Lease.Complete(ctx, idem.Response{StatusCode: 201}, ledger.Entry(c))
	}
	id := fmt.Sprintf("ch_%040x", time.Now().UnixNano())
	want := charge.Charge{
		ID: id, Account: "acct_ledger", Status: "captured", Amount: 123456789012, Currency: "BRL",
		OrderID: "order-1", Description: "café ☕", AuthorizationID: "auth_1",
		CreatedAt: time.Now().UTC().Truncate(time.Millisecond),
	}
	if err := complete("ledger-key-1", want); err != nil {
		t.Fatalf("complete: %v", err)
	}
	got, err := ledger.Get(ctx, id)
	if err != nil || got != want {
		t.Fatalf("Get = %+v, %v; want %+v", got, err, want)
	}
	declined := want
	declined.ID, declined.Status, declined.DeclineCode, declined.AuthorizationID = id[:len(id)-1]+"x", "declined", "insufficient_funds", ""
	if err := complete("ledger-key-2", declined); err != nil {
		t.Fatal(err)
	}
	if got, err := ledger.Get(ctx, declined.ID); err != nil || got != declined {
		t.Fatalf("Get declined = %+v, %v", got, err)
	}
	if _, err := ledger.Get(ctx, "ch_"+fmt.Sprintf("%040d", 0)); !errors.Is(err, charge.ErrNoCharge) {
		t.Fatalf("Get of a missing charge: %v, want ErrNoCharge", err)
	}
	if err := complete("ledger-key-3", want); !errors.Is(err, idem.ErrItemExists) {
		t.Fatalf("a second row for %s: %v, want ErrItemExists", id, err)
	}
}

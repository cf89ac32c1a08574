package capturetest

import (
	"context"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/capture"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/op"
)

// Stores are what the expiry runs on: the charges' ledger, its listing
// of authorizations and the balances (both sides), of one store.
type Stores struct {
	Ledger         charge.Ledger
	Authorizations capture.Authorizations
	Balances
}

// NewStoresFunc returns fresh, empty stores for one test.
type NewStoresFunc func(t *testing.T) Stores

// RunExpiryConformance runs the sweeper's closing of lapsed
// authorizations (capture.Expiry) over a store: a lapsed authorization's
// balance is closed and it is unlisted; one with a capture in flight
// waits; one not lapsed, or a charge captured at creation, is never
// touched; one a void closed is unlisted as it is. Only the rows of
// those closed at their expiry are marked expired (charge.expired), and
// one whose run stopped between its close and its unlist is marked by
// the next.
func RunExpiryConformance(t *testing.T, newStores NewStoresFunc) {
	t.Parallel()
	s := newStores(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	row := func(status string, expires time.Time) string {
		t.Helper()
		id := chargeOf()
		c := charge.Charge{Origin: op.Origin{ID: id, Account: "acct_x", CreatedAt: now.Add(-time.Hour)}, Status: status,
			Amount: authorized, Currency: "BRL", OrderID: "o", AuthorizationID: "auth_" + id[3:13], AuthorizationExpiresAt: expires}
		if _, err := s.Ledger.Write(ctx, c); err != nil {
			t.Fatal(err)
		}
		return id
	}
	lapsed := row(acquirer.StatusAuthorized, now.Add(-time.Minute))
	capturing := row(acquirer.StatusAuthorized, now.Add(-time.Second))
	if _, err := reserve(s.Balances, capturing, 0, capture.Partial, 300); err != nil {
		t.Fatal(err)
	}
	open := row(acquirer.StatusAuthorized, now.Add(time.Hour))
	voided := row(acquirer.StatusAuthorized, now.Add(-time.Minute))
	if _, err := reserve(s.Balances, voided, 1, capture.Void, 0); err != nil {
		t.Fatal(err)
	}
	succeed(t, s.Balances, voided, 1, capture.Void)
	captured := row(acquirer.StatusCaptured, time.Time{})

	x := capture.Expiry{Authorizations: s.Authorizations, Balances: s.Captures, Now: func() time.Time { return now }}
	if r, err := x.Run(ctx); err != nil || r != (capture.ExpiryReport{Closed: 2, Expired: 1, Waiting: 1, Complete: true}) {
		t.Fatalf("the first run: %+v, %v; want 2 closed (one expired, one voided), 1 waiting", r, err)
	}
	mustHold(t, s.Balances, lapsed, capture.Balance{Authorized: authorized, Released: authorized, Closed: capture.ClosedExpired})
	mustHold(t, s.Balances, voided, capture.Balance{Authorized: authorized, Released: authorized, Closed: capture.ClosedVoided})
	mustHold(t, s.Balances, capturing, capture.Balance{Authorized: authorized, Capturable: 700, Reserved: 300})
	mustHold(t, s.Balances, open, capture.Balance{})
	mustHold(t, s.Balances, captured, capture.Balance{})
	expired := func(id string, want bool) {
		t.Helper()
		if got, err := s.Ledger.Get(ctx, id); err != nil || got.Expired != want {
			t.Fatalf("row %s marked expired: %v, %v; want %v", id, got.Expired, err, want)
		}
	}
	expired(lapsed, true)
	expired(voided, false)
	expired(capturing, false)

	succeed(t, s.Balances, capturing, 0, capture.Partial)
	if r, err := x.Run(ctx); err != nil || r != (capture.ExpiryReport{Closed: 1, Expired: 1, Complete: true}) {
		t.Fatalf("the second run: %+v, %v; want the one that waited closed, and nothing else listed", r, err)
	}
	mustHold(t, s.Balances, capturing, capture.Balance{Authorized: authorized, Captured: 300, Released: 700, Closed: capture.ClosedExpired})
	expired(capturing, true)
	// A run that stopped after the close and before the unlist: the next
	// finds the balance closed at its expiry, and marks the row.
	stopped := row(acquirer.StatusAuthorized, now.Add(-time.Minute))
	if by, closed, err := s.Captures.Expire(ctx, stopped, authorized); err != nil || !closed || by != capture.ClosedExpired {
		t.Fatalf("the close: %v, %v", closed, err)
	}
	if r, err := x.Run(ctx); err != nil || r != (capture.ExpiryReport{Closed: 1, Complete: true}) {
		t.Fatalf("the run after a stop: %+v, %v; want it closed, not by this run", r, err)
	}
	expired(stopped, true)
	if r, err := x.Run(ctx); err != nil || r != (capture.ExpiryReport{Complete: true}) {
		t.Fatalf("a third run: %+v, %v; want nothing listed", r, err)
	}
	// Unlisting leaves the row as it was; a row that is not there is
	// nothing to unlist.
	if got, err := s.Ledger.Get(ctx, lapsed); err != nil || got.Status != acquirer.StatusAuthorized || !got.AuthorizationExpiresAt.Equal(now.Add(-time.Minute)) {
		t.Fatalf("the unlisted row: %+v, %v", got, err)
	}
	if err := s.Authorizations.Unlist(ctx, chargeOf(), now); err != nil {
		t.Fatalf("unlisting no row: %v", err)
	}
	// A run with less than its stop margin left stops at once, incomplete
	// and without an error: the next run goes on.
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	late := capture.Expiry{Authorizations: s.Authorizations, Balances: s.Captures, Now: func() time.Time { return now.Add(2 * time.Hour) }}
	if r, err := late.Run(short); err != nil || r != (capture.ExpiryReport{}) {
		t.Fatalf("a run out of time: %+v, %v; want nothing done, incomplete", r, err)
	}
	later := capture.Expiry{Authorizations: s.Authorizations, Balances: s.Captures, Now: func() time.Time { return now.Add(2 * time.Hour) }}
	if r, err := later.Run(ctx); err != nil || r != (capture.ExpiryReport{Closed: 1, Expired: 1, Complete: true}) {
		t.Fatalf("two hours later: %+v, %v; want the open one closed", r, err)
	}
}

package chargetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/sandbox"
)

// authorizeOnly is the suites' body asking for the authorization alone.
const authorizeOnly = `{"amount": 25000, "currency": "BRL", "order_id": "123", "payment_method": "pm_card_visa", "capture": false}`

func authorizeInput(key string) charge.Input {
	return charge.Input{Account: account, Keys: []string{key}, Body: []byte(authorizeOnly)}
}

// RunAuthorizeOnlyConformance runs charges asked with "capture": false
// over a store and its ledger: the acquirer is asked to authorize only,
// the row is an authorization with its expiry (the acquirer's, else the
// deployment's window), and an answer that captured when it was asked not
// to, or the other way round, holds the record.
func RunAuthorizeOnlyConformance(t *testing.T, newStores NewStoresFunc) {
	runParallel(t, newStores, []suiteCase{
		{"TheRowIsAnAuthorizationWithTheAcquirersExpiry", authorizeTheAcquirersExpiry},
		{"WithoutAStatedExpiryTheWindowDecides", authorizeTheWindowDecides},
		{"ACaptureAskedToAuthorizeOnlyIsHeld", holdOnAMismatchOf(authorizeInput, func(a acquirer.Authorization) acquirer.Authorization {
			a.Status, a.ExpiresAt = acquirer.StatusCaptured, time.Time{}
			return a
		})},
		{"AnAuthorizationAskedToCaptureIsHeld", holdOnAMismatchOf(input, func(a acquirer.Authorization) acquirer.Authorization {
			a.Status, a.ExpiresAt = acquirer.StatusAuthorized, a.CreatedAt.Add(time.Hour)
			return a
		})},
		{"TheReconcilerCompletesAnAuthorization", authorizeReconciled},
		{"AnOperatorAcceptsAHeldAuthorization", authorizeAccepted},
	})
}

// authorizeTheAcquirersExpiry: "capture": false is authorized, not
// captured; the row says authorized with the expiry the acquirer stated,
// and a replay is the first answer.
func authorizeTheAcquirersExpiry(t *testing.T, newStores NewStoresFunc) {
	ctx := context.Background()
	w := newWorld(t, newStores)
	sb, acq := sandboxAcquirer()
	sb.SetAuthorizationWindow(2 * 24 * time.Hour)
	svc := w.service(acq)
	r := svc.Charge(ctx, authorizeInput("authorize-key"))
	if r.Outcome != op.Executed || r.Response.StatusCode != 201 {
		t.Fatalf("authorize only: %s %d", r.Outcome, r.Response.StatusCode)
	}
	row := w.mustMatchLedger(t, sb, "authorize-key", r)
	auth := sb.ByKey()[w.record(t, "authorize-key").DownstreamKey]
	if row.Status != acquirer.StatusAuthorized || auth.Status != acquirer.StatusAuthorized || auth.ExpiresAt.IsZero() ||
		!row.AuthorizationExpiresAt.Equal(auth.ExpiresAt.Truncate(time.Millisecond)) {
		t.Fatalf("row %+v, the acquirer's %+v: want an authorization expiring when the acquirer said", row, auth)
	}
	if again := svc.Charge(ctx, authorizeInput("authorize-key")); again.Outcome != op.Replayed || string(again.Response.Body) != string(r.Response.Body) {
		t.Fatalf("replay: %s %s", again.Outcome, again.Response.Body)
	}
	// The same key with the member absent is another request.
	if other := svc.Charge(ctx, input("authorize-key")); other.Outcome != op.KeyReused {
		t.Fatalf("the key with the capture member absent: %s, want %s", other.Outcome, op.KeyReused)
	}
}

// authorizeTheWindowDecides: an acquirer that states no expiry leaves it
// to the deployment's window, from the intent's claim (a row written
// later, by a take-over, never promises more).
func authorizeTheWindowDecides(t *testing.T, newStores NewStoresFunc) {
	ctx := context.Background()
	w := newWorld(t, newStores)
	sb := sandbox.New("")
	acq := &liar{sb: sb, authorize: func(a acquirer.Authorization) acquirer.Authorization { a.ExpiresAt = time.Time{}; return a }}
	svc := charge.NewService(w.guard, w.ledger, acq, Render, charge.Config{Now: w.clock.Now, AuthorizationWindow: 36 * time.Hour})
	r := svc.Charge(ctx, authorizeInput("window-key"))
	if r.Outcome != op.Executed {
		t.Fatalf("authorize only: %s", r.Outcome)
	}
	row := w.mustMatchLedger(t, sb, "window-key", r)
	if claimed := w.record(t, "window-key").CreatedAt; row.Status != acquirer.StatusAuthorized || !row.AuthorizationExpiresAt.Equal(claimed.Add(36*time.Hour)) {
		t.Fatalf("row %+v: want an authorization expiring 36 h after its claim, %v", row, claimed)
	}
}

// holdOnAMismatchOf: the request in(key) answered through authorize
// disagrees on what was captured: the record is held (capture_differs)
// with no row.
func holdOnAMismatchOf(in func(string) charge.Input, authorize func(acquirer.Authorization) acquirer.Authorization) func(*testing.T, NewStoresFunc) {
	return func(t *testing.T, newStores NewStoresFunc) {
		w := newWorld(t, newStores)
		acq := &liar{sb: sandbox.New(""), authorize: authorize}
		if r := w.service(acq).Charge(context.Background(), in("capture-differs-key")); r.Outcome != op.Mismatch {
			t.Fatalf("first attempt: %s, want %s", r.Outcome, op.Mismatch)
		}
		w.mustHaveNoRow(t, w.mustBeHeld(t, "capture-differs-key", acquirer.ReasonCapture))
	}
}

// authorizeReconciled: an authorization whose answer was lost is
// completed by the reconciler from the acquirer's lookup, as an
// authorization.
func authorizeReconciled(t *testing.T, newStores NewStoresFunc) {
	ctx := context.Background()
	w := newWorld(t, newStores)
	sb, acq := sandboxAcquirer()
	if r := w.service(&losesAnswer{acq}).Charge(ctx, authorizeInput("lost-authorization")); r.Outcome != op.Pending {
		t.Fatalf("the lost answer: %s", r.Outcome)
	}
	w.clock.Advance(reconcilable)
	svc := w.service(acq)
	if did, err := svc.Reconcile(ctx, pkOf("lost-authorization")); err != nil || did != op.ReconciledCompleted {
		t.Fatalf("Reconcile: %s, %v", did, err)
	}
	r := svc.Charge(ctx, authorizeInput("lost-authorization"))
	row := w.mustMatchLedger(t, sb, "lost-authorization", r)
	stated := sb.ByKey()[w.record(t, "lost-authorization").DownstreamKey].ExpiresAt
	if r.Outcome != op.Replayed || row.Status != acquirer.StatusAuthorized || !row.AuthorizationExpiresAt.Equal(stated.Truncate(time.Millisecond)) {
		t.Fatalf("after the reconciler: %s, row %+v; want the acquirer's expiry %v", r.Outcome, row, stated)
	}
}

// authorizeAccepted: an authorization held on other terms is accepted
// with the acquirer's terms as an authorization; a lookup that says it
// captured is refused (the charge asked to authorize only).
func authorizeAccepted(t *testing.T, newStores NewStoresFunc) {
	ctx := context.Background()
	w := newWorld(t, newStores)
	acq := &liar{sb: sandbox.New(""), authorize: otherCurrency, lookup: otherCurrency}
	svc := w.service(acq)
	svc.Charge(ctx, authorizeInput("held-authorization"))
	w.mustBeHeld(t, "held-authorization", acquirer.ReasonCurrency)
	w.clock.Advance(time.Millisecond)
	shown, err := svc.Peek(ctx, pkOf("held-authorization"))
	if err != nil || shown.Status != acquirer.StatusAuthorized {
		t.Fatalf("Peek: %+v, %v", shown, err)
	}
	accept := w.decision(t, "held-authorization", idem.SettleAccept, "dec-held-authorization", shown)
	acq.lookup = func(a acquirer.Authorization) acquirer.Authorization {
		a = otherCurrency(a)
		a.Status = acquirer.StatusCaptured
		return a
	}
	if _, err := svc.Settle(ctx, accept); !errors.Is(err, acquirer.ErrMismatch) {
		t.Fatalf("accept of a capture the charge did not ask for: %v, want a mismatch", err)
	}
	acq.lookup = otherCurrency
	w.clock.Advance(time.Second)
	st, err := svc.Settle(ctx, accept)
	if ch := st.Row; err != nil || st.State != op.CompletedByThis || ch.Status != acquirer.StatusAuthorized || ch.Currency != "JPY" ||
		!ch.AuthorizationExpiresAt.Equal(shown.ExpiresAt.Truncate(time.Millisecond)) {
		t.Fatalf("accept: %+v, %v; want the acquirer's authorization, expiring at %v", st, err, shown.ExpiresAt)
	}
}

// record is key's record.
func (w *world) record(t *testing.T, key string) *idem.Record {
	t.Helper()
	rec, err := w.guard.Lookup(context.Background(), pkOf(key))
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

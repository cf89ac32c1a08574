package chargetest

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/sandbox"
)

// liar is the sandbox in process whose answers say something else: each
// authorization the sandbox gives passes through authorize (or lookup)
// before the service reads it. It counts the calls that reach it.
type liar struct {
	sb                *sandbox.Server
	authorize, lookup func(acquirer.Authorization) acquirer.Authorization
	calls             atomic.Int64
}

func (l *liar) Authorize(ctx context.Context, key string, req acquirer.Request) (acquirer.Authorization, error) {
	l.calls.Add(1)
	a, err := l.sb.Authorize(ctx, key, req)
	if err == nil && l.authorize != nil {
		a = l.authorize(a)
	}
	return a, err
}

func (l *liar) Lookup(ctx context.Context, key string) (acquirer.Authorization, error) {
	l.calls.Add(1)
	a, err := l.sb.Lookup(ctx, key)
	if err == nil && l.lookup != nil {
		a = l.lookup(a)
	}
	return a, err
}

// Ways an answer can disagree with the request of the suites' body (25000
// BRL).
var (
	tenTimes      = func(a acquirer.Authorization) acquirer.Authorization { a.Amount *= 10; return a }
	otherCurrency = func(a acquirer.Authorization) acquirer.Authorization { a.Currency = "JPY"; return a }
	lowerCase     = func(a acquirer.Authorization) acquirer.Authorization { a.Currency = "brl"; return a }
	otherKey      = func(a acquirer.Authorization) acquirer.Authorization {
		a.IdempotencyKey = "someone-elses-key"
		return a
	}
	noTerms = func(a acquirer.Authorization) acquirer.Authorization {
		a.Status, a.DeclineCode, a.Amount, a.Currency = acquirer.StatusDeclined, "card_declined", 0, ""
		return a
	}
)

// RunHoldConformance runs the acquirer's answer as evidence over a store
// and its ledger: an answer that disagrees with the request holds the
// record (no ledger row, no answer the acquirer did not give), a held
// record is never taken over, reconciled or expired, and only an
// operator's step settles it.
func RunHoldConformance(t *testing.T, newStores NewStoresFunc) {
	runParallel(t, newStores, []suiteCase{
		{"TenTimesTheAmount", holdOnAMismatch(tenTimes, acquirer.ReasonAmount, 250000)},
		{"AnotherCurrency", holdOnAMismatch(otherCurrency, acquirer.ReasonCurrency, 25000)},
		{"TheCurrencyInLowerCase", holdOnAMismatch(lowerCase, acquirer.ReasonCurrency, 25000)},
		{"AnotherKeysAuthorization", holdOnAMismatch(otherKey, acquirer.ReasonKey, 25000)},
		{"ADeclineWithoutTerms", holdOnAMismatch(noTerms, acquirer.ReasonTermsMissing, 0)},
		{"ALookupThatClaimsTenTimes", holdALookupThatClaimsTenTimes},
		{"TheReconcilersLookupThatClaimsTenTimes", holdTheReconcilersLookupThatClaimsTenTimes},
		{"VoidConfirmedWaitsOutThenTheRetryChargesOnce", holdVoidConfirmedWaitsOutThenTheRetryChargesOnce},
		{"AHeldRecordWithALedgerRow", holdWithALedgerRow},
		{"AcceptCompletesWithTheFreshLookupsTerms", holdAcceptCompletesWithTheFreshLookupsTerms},
		{"ReadBackNamesOnlyItsDecision", holdReadBackNamesOnlyItsDecision},
		{"ALateRowAfterAVoidIsRefused", holdALateRowAfterAVoid},
		{"AHeldChargeWithoutARowOnEveryRoute", holdWithoutARowOnEveryRoute},
		{"AMarkerWhoseRecordIsGone", holdAMarkerWhoseRecordIsGone},
	})
}

// holdOnAMismatch is the case of an authorization answer that authorize
// makes disagree with the request: the first attempt holds the record for
// reason, with both sides as evidence (the acquirer's amount,
// acquirerAmount, and the 25000 asked), no ledger row, and neither a retry
// nor a reconciliation touches it.
func holdOnAMismatch(authorize func(acquirer.Authorization) acquirer.Authorization, reason string, acquirerAmount int64) func(*testing.T, NewStoresFunc) {
	return func(t *testing.T, newStores NewStoresFunc) {
		ctx := context.Background()
		w := newWorld(t, newStores)
		acq := &liar{sb: sandbox.New(""), authorize: authorize}
		svc := w.service(acq)
		r := svc.Charge(ctx, input("mismatch-key"))
		if r.Outcome != op.Mismatch || r.RetryAfter <= 0 {
			t.Fatalf("first attempt: %s, want %s", r.Outcome, op.Mismatch)
		}
		rec := w.mustBeHeld(t, "mismatch-key", reason)
		var evidence struct {
			Answer acquirer.Authorization `json:"answer"`
			Asked  struct{ Amount int64 } `json:"asked"`
		}
		// The evidence is what the service itself stored on the hold, not
		// untrusted input: plain encoding/json reads it back.
		if err := json.Unmarshal(rec.Hold.Evidence, &evidence); err != nil || evidence.Answer.Amount != acquirerAmount || evidence.Asked.Amount != 25000 {
			t.Fatalf("evidence %s (%v): want both sides", rec.Hold.Evidence, err)
		}
		w.mustHaveNoRow(t, rec)
		w.mustNotTouch(t, svc, acq, "mismatch-key")
	}
}

// holdALookupThatClaimsTenTimes: a take-over whose lookup claims ten times
// the amount holds the record, with no ledger row, and neither a retry nor
// a reconciliation touches it.
func holdALookupThatClaimsTenTimes(t *testing.T, newStores NewStoresFunc) {
	ctx := context.Background()
	w := newWorld(t, newStores)
	acq := &liar{sb: sandbox.New(""), lookup: tenTimes}
	w.dieAfterTheRowless(t, acq, "lookup-lies-key")
	w.clock.Advance(time.Minute)
	if r := w.service(acq).Charge(ctx, input("lookup-lies-key")); r.Outcome != op.Mismatch || r.Attempt != 2 {
		t.Fatalf("the take-over: %s attempt %d, want %s", r.Outcome, r.Attempt, op.Mismatch)
	}
	rec := w.mustBeHeld(t, "lookup-lies-key", acquirer.ReasonAmount)
	w.mustHaveNoRow(t, rec)
	w.mustNotTouch(t, w.service(acq), acq, "lookup-lies-key")
}

// holdTheReconcilersLookupThatClaimsTenTimes: a reconciliation whose
// lookup claims ten times the amount holds the record, with no ledger row.
func holdTheReconcilersLookupThatClaimsTenTimes(t *testing.T, newStores NewStoresFunc) {
	ctx := context.Background()
	w := newWorld(t, newStores)
	acq := &liar{sb: sandbox.New(""), lookup: tenTimes}
	w.dieAfterTheRowless(t, acq, "reconciler-lies-key")
	w.clock.Advance(reconcilable)
	if did, err := w.service(acq).Reconcile(ctx, pkOf("reconciler-lies-key")); err != nil || did != op.ReconciledMismatch {
		t.Fatalf("Reconcile: %s, %v; want a mismatch", did, err)
	}
	w.mustHaveNoRow(t, w.mustBeHeld(t, "reconciler-lies-key", acquirer.ReasonAmount))
}

// holdVoidConfirmedWaitsOutThenTheRetryChargesOnce: void-confirmed is
// refused until T + skew after the hold ended the lease; once settled, the
// client's retry charges once, under a new key, and is then replayed.
func holdVoidConfirmedWaitsOutThenTheRetryChargesOnce(t *testing.T, newStores NewStoresFunc) {
	ctx := context.Background()
	w := newWorld(t, newStores)
	sb := sandbox.New("")
	acq := &liar{sb: sb, authorize: tenTimes}
	svc := w.service(acq)
	svc.Charge(ctx, input("void-key"))
	first := w.mustBeHeld(t, "void-key", acquirer.ReasonAmount)
	w.clock.Advance(5 * time.Second) // less than T + skew (6 s) after the hold ended the lease
	void := w.decision(t, "void-key", idem.SettleVoidConfirmed, "dec-void-key", acquirer.Authorization{})
	if st, err := svc.Settle(ctx, void); !errors.Is(err, idem.ErrTooEarly) || st.State != op.StillHeld {
		t.Fatalf("void-confirmed before T + skew: %s, %v; want still held, ErrTooEarly", st.State, err)
	}
	w.mustBeHeld(t, "void-key", acquirer.ReasonAmount)
	w.clock.Advance(2 * time.Second)
	st, err := svc.Settle(ctx, void)
	if err != nil || st.State != op.ReleasedByThis || st.Decision == nil || st.Decision.By != "ops:ana" {
		t.Fatalf("void-confirmed: %+v, %v", st, err)
	}
	if again, err := svc.Settle(ctx, void); err != nil || again.State != op.ReleasedByThis {
		t.Fatalf("the same decision retried: %s, %v; want released by this decision, nothing done", again.State, err)
	}
	other := void
	other.ID = "dec-void-key-2"
	if st, err := svc.Settle(ctx, other); err == nil || st.State != op.ReleasedByAnother {
		t.Fatalf("another decision on the released record: %s, %v; want released by another, refused", st.State, err)
	}
	acq.authorize = nil // the acquirer answers truly now
	r := svc.Charge(ctx, input("void-key"))
	if r.Outcome != op.Executed || r.Attempt != 1 {
		t.Fatalf("the retry after void-confirmed: %s attempt %d", r.Outcome, r.Attempt)
	}
	rec, _ := w.guard.Lookup(ctx, pkOf("void-key"))
	if rec.DownstreamKey == first.DownstreamKey || len(sb.ByKey()) != 2 {
		t.Fatalf("the retry charged under the voided key, or more than once: %d authorizations", len(sb.ByKey()))
	}
	if again := svc.Charge(ctx, input("void-key")); again.Outcome != op.Replayed || len(sb.ByKey()) != 2 {
		t.Fatalf("a second retry: %s, %d authorizations", again.Outcome, len(sb.ByKey()))
	}
}

// holdWithALedgerRow: an attempt's answer agreed and its ledger row was
// written, but the attempt died before completing; the take-over's lookup
// disagrees, so the record is held with a row. Void-confirmed is refused
// (the row records a charge), accept refuses terms the row does not state,
// and accept with the row's terms completes from the row.
func holdWithALedgerRow(t *testing.T, newStores NewStoresFunc) {
	ctx := context.Background()
	w := newWorld(t, newStores)
	sb := sandbox.New("")
	acq := &liar{sb: sb}
	svc := w.service(acq)
	w.dieAfterTheRow(t, svc, "held-row-key")
	inFlight, err := w.guard.Lookup(ctx, pkOf("held-row-key"))
	if err != nil {
		t.Fatal(err)
	}
	// One status per charge: a record not completed answers the same on
	// every route, although its row exists.
	w.mustAnswerOnEveryRoute(t, svc, "held-row-key", charge.ID(inFlight.DownstreamKey), op.InFlight)
	acq.lookup = tenTimes
	w.clock.Advance(time.Minute)
	if r := svc.Charge(ctx, input("held-row-key")); r.Outcome != op.Mismatch {
		t.Fatalf("the take-over whose lookup disagrees: %s", r.Outcome)
	}
	rec := w.mustBeHeld(t, "held-row-key", acquirer.ReasonAmount)
	row, err := w.ledger.Get(ctx, charge.ID(rec.DownstreamKey))
	if err != nil {
		t.Fatalf("the row written before the hold: %v", err)
	}
	w.mustAnswerOnEveryRoute(t, svc, "held-row-key", row.ID, op.Held)
	w.clock.Advance(time.Minute)
	if _, err := svc.Settle(ctx, w.decision(t, "held-row-key", idem.SettleVoidConfirmed, "dec-held-row-1", acquirer.Authorization{})); !errors.Is(err, charge.ErrLedgerRowExists) {
		t.Fatalf("void-confirmed of a held record with a ledger row: %v, want ErrLedgerRowExists", err)
	}
	w.clock.Advance(time.Second)
	shown, err := svc.Peek(ctx, pkOf("held-row-key"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Settle(ctx, w.decision(t, "held-row-key", idem.SettleAccept, "dec-held-row-2", shown)); !errors.Is(err, charge.ErrLedgerDisagrees) {
		t.Fatalf("accept of terms the row does not state: %v, want ErrLedgerDisagrees", err)
	}
	w.mustBeHeld(t, "held-row-key", acquirer.ReasonAmount)
	acq.lookup = nil
	w.clock.Advance(time.Second)
	if shown, err = svc.Peek(ctx, pkOf("held-row-key")); err != nil {
		t.Fatal(err)
	}
	st, err := svc.Settle(ctx, w.decision(t, "held-row-key", idem.SettleAccept, "dec-held-row-3", shown))
	if err != nil || st.State != op.CompletedByThis || st.Row != row {
		t.Fatalf("accept of the row's terms: %+v, %v; want the row %+v", st, err, row)
	}
	if r := svc.Charge(ctx, input("held-row-key")); r.Outcome != op.Replayed || len(sb.ByKey()) != 1 {
		t.Fatalf("the client's retry: %s, %d authorizations", r.Outcome, len(sb.ByKey()))
	}
	w.mustAnswerOnEveryRoute(t, svc, "held-row-key", row.ID, op.Found)
}

// decision is ops:ana's decision id of the given action on key's record
// as it is now (its intent), with terms for an accept.
func (w *world) decision(t *testing.T, key, action, id string, terms acquirer.Authorization) op.Decision {
	t.Helper()
	rec, err := w.guard.Lookup(context.Background(), pkOf(key))
	if err != nil {
		t.Fatal(err)
	}
	return op.Decision{PK: pkOf(key), Instance: rec.DownstreamKey, Action: action, By: "ops:ana", ID: id, Terms: charge.TermsOf(terms)}
}

// mustAnswerOnEveryRoute checks that key's charge id has one status on
// every route: the POST's retry (Charge), the lookup by key (ByKey) and
// the lookup by id (Get) answer want (a retry that replays is Found).
func (w *world) mustAnswerOnEveryRoute(t *testing.T, svc *charge.Service, key, id string, want op.Outcome) {
	t.Helper()
	post := svc.Charge(context.Background(), input(key)).Outcome
	if post == op.Replayed {
		post = op.Found
	}
	byKey := svc.ByKey(context.Background(), account, key).Outcome
	byID := svc.Get(context.Background(), account, id).Outcome
	if post != want || byKey != want || byID != want {
		t.Fatalf("charge %s: POST %s, by key %s, by id %s; want %s on every route", id, post, byKey, byID, want)
	}
}

// holdAcceptCompletesWithTheFreshLookupsTerms: accept completes the held
// record with the acquirer's terms as a fresh lookup states them, and
// refuses while the lookup disagrees with itself or the terms changed
// since they were shown.
func holdAcceptCompletesWithTheFreshLookupsTerms(t *testing.T, newStores NewStoresFunc) {
	ctx := context.Background()
	w := newWorld(t, newStores)
	sb := sandbox.New("")
	acq := &liar{sb: sb, authorize: otherCurrency, lookup: otherCurrency}
	svc := w.service(acq)
	svc.Charge(ctx, input("accept-key"))
	w.mustBeHeld(t, "accept-key", acquirer.ReasonCurrency)
	w.clock.Advance(time.Millisecond) // the hold ended the lease
	shown, err := svc.Peek(ctx, pkOf("accept-key"))
	if err != nil || shown.Currency != "JPY" {
		t.Fatalf("Peek: %+v, %v", shown, err)
	}
	accept := w.decision(t, "accept-key", idem.SettleAccept, "dec-accept-key", shown)
	acq.lookup = func(a acquirer.Authorization) acquirer.Authorization { a = otherCurrency(a); return otherKey(a) }
	if _, err := svc.Settle(ctx, accept); !errors.Is(err, acquirer.ErrMismatch) {
		t.Fatalf("accept of a lookup that disagrees with itself: %v, want a mismatch (the operator chooses)", err)
	}
	w.mustBeHeld(t, "accept-key", acquirer.ReasonCurrency)
	acq.lookup = func(a acquirer.Authorization) acquirer.Authorization {
		a = otherCurrency(a)
		a.Status = acquirer.StatusAuthorized
		return a
	}
	w.clock.Advance(time.Second)
	if _, err := svc.Settle(ctx, accept); !errors.Is(err, acquirer.ErrMismatch) {
		t.Fatalf("accept of an authorization held without its capture, never asked for: %v, want a mismatch", err)
	}
	w.mustBeHeld(t, "accept-key", acquirer.ReasonCurrency)
	acq.lookup = func(a acquirer.Authorization) acquirer.Authorization { return tenTimes(otherCurrency(a)) }
	w.clock.Advance(time.Second)
	if _, err := svc.Settle(ctx, accept); !errors.Is(err, op.ErrTermsChanged) {
		t.Fatalf("accept when the terms changed since they were shown: %v, want ErrTermsChanged", err)
	}
	w.mustBeHeld(t, "accept-key", acquirer.ReasonCurrency)
	acq.lookup = otherCurrency
	w.clock.Advance(time.Second)
	st, err := svc.Settle(ctx, accept)
	if ch := st.Row; err != nil || st.State != op.CompletedByThis || ch.Currency != "JPY" || ch.Amount != 25000 || ch.AuthorizationID == "" {
		t.Fatalf("accept: %+v, %v; want the acquirer's terms (25000 JPY)", st, err)
	}
	rec, err := w.guard.Lookup(ctx, pkOf("accept-key"))
	if err != nil || rec.Status != idem.StatusCompleted || rec.Hold.Settlement == nil || rec.Hold.Settlement.By != "ops:ana" ||
		rec.Hold.Settlement.Action != idem.SettleAccept || rec.Hold.Settlement.Decision != "dec-accept-key" || !rec.Hold.Settlement.At.Equal(w.clock.Now()) {
		t.Fatalf("accepted record: %+v, %v", rec, err)
	}
	if again, err := svc.Settle(ctx, accept); err != nil || again.State != op.CompletedByThis {
		t.Fatalf("the same accept retried: %s, %v; want completed by this decision, nothing done", again.State, err)
	}
	other := accept
	other.ID = "dec-accept-key-2"
	if st, err := svc.Settle(ctx, other); err == nil || st.State != op.CompletedByAnother {
		t.Fatalf("another decision on the completed record: %s, %v; want completed by another, refused", st.State, err)
	}
	if row, err := w.ledger.Get(ctx, charge.ID(rec.DownstreamKey)); err != nil || row.Currency != "JPY" {
		t.Fatalf("ledger row %+v, %v; want the acquirer's terms", row, err)
	}
	if r := svc.Charge(ctx, input("accept-key")); r.Outcome != op.Replayed || len(sb.ByKey()) != 1 {
		t.Fatalf("the client's retry: %s, %d authorizations", r.Outcome, len(sb.ByKey()))
	}
}

// dieAfterTheRowless runs a first attempt of key whose acquirer
// authorizes but whose answer is lost: the record stays in flight, its
// lease ended, with the authorization at the acquirer.
func (w *world) dieAfterTheRowless(t *testing.T, acq *liar, key string) {
	t.Helper()
	lost := &loses{liar: acq}
	if r := w.service(lost).Charge(context.Background(), input(key)); r.Outcome != op.Pending {
		t.Fatalf("the attempt whose answer was lost: %s", r.Outcome)
	}
}

// loses makes the authorization, then loses its answer.
type loses struct{ *liar }

func (l *loses) Authorize(ctx context.Context, key string, req acquirer.Request) (acquirer.Authorization, error) {
	if _, err := l.sb.Authorize(ctx, key, req); err != nil {
		return acquirer.Authorization{}, err
	}
	return acquirer.Authorization{}, acquirer.ErrOutcomeUnknown
}

// mustBeHeld: key's record is held, for reason, with no end of retention.
func (w *world) mustBeHeld(t *testing.T, key, reason string) *idem.Record {
	t.Helper()
	rec, err := w.guard.Lookup(context.Background(), pkOf(key))
	if err != nil || !rec.Held() || rec.Hold.Reason != reason || !rec.ExpiresAt.IsZero() {
		t.Fatalf("record %+v (%v): want held for %s", rec, err, reason)
	}
	return rec
}

// mustHaveNoRow: no ledger row states terms for rec.
func (w *world) mustHaveNoRow(t *testing.T, rec *idem.Record) {
	t.Helper()
	if row, err := w.ledger.Get(context.Background(), charge.ID(rec.DownstreamKey)); !errors.Is(err, charge.ErrNoCharge) {
		t.Fatalf("a held record has a ledger row %+v (%v)", row, err)
	}
}

// mustNotTouch: a client's retry and a reconciliation of key's held
// record, past its retention, answer held without asking the acquirer.
func (w *world) mustNotTouch(t *testing.T, svc *charge.Service, acq *liar, key string) {
	t.Helper()
	ctx := context.Background()
	calls := acq.calls.Load()
	w.clock.Advance(idem.DefaultRetention + reconcilable)
	if r := svc.Charge(ctx, input(key)); r.Outcome != op.Held || r.RetryAfter <= 0 {
		t.Fatalf("a retry of a held record past its retention: %s", r.Outcome)
	}
	if did, err := svc.Reconcile(ctx, pkOf(key)); err != nil || did != op.ReconciledHeld {
		t.Fatalf("Reconcile of a held record: %s, %v", did, err)
	}
	if n := acq.calls.Load() - calls; n != 0 {
		t.Fatalf("a held record reached the acquirer %d times", n)
	}
	if rec, err := w.guard.Lookup(ctx, pkOf(key)); err != nil || !rec.Held() || rec.Attempt > 2 {
		t.Fatalf("after the retry and the reconciliation: %+v, %v", rec, err)
	}
}

// holdReadBackNamesOnlyItsDecision: what Settle reads back names a
// decision as this one's only by its id and its action; a call of a
// decision sent again while an earlier call holds the lease does nothing
// and says so; and once the record is gone, a void's marker left by a void
// that never deleted does not claim a record an accept completed.
func holdReadBackNamesOnlyItsDecision(t *testing.T, newStores NewStoresFunc) {
	ctx := context.Background()
	w := newWorld(t, newStores)
	acq := &liar{sb: sandbox.New(""), authorize: tenTimes}
	svc := w.service(acq)
	svc.Charge(ctx, input("read-back-key"))
	rec := w.mustBeHeld(t, "read-back-key", acquirer.ReasonAmount)
	w.clock.Advance(7 * time.Second) // past T + skew
	shown, err := svc.Peek(ctx, pkOf("read-back-key"))
	if err != nil {
		t.Fatal(err)
	}
	accept := w.decision(t, "read-back-key", idem.SettleAccept, "dec-read-back-1", shown)

	// An earlier call of the same decision holds the lease: nothing is done.
	if _, err := w.guard.TakeOverHeld(ctx, pkOf("read-back-key"), rec.DownstreamKey, idem.Settlement{Action: idem.SettleAccept, By: "ops:ana", Decision: accept.ID}); err != nil {
		t.Fatal(err)
	}
	if st, err := svc.Settle(ctx, accept); st.State != op.InProgress || err == nil || st.Until.IsZero() {
		t.Fatalf("a call while an earlier one of the decision runs: %+v, %v; want in progress", st, err)
	}
	if r := w.mustBeHeld(t, "read-back-key", acquirer.ReasonAmount); r.Attempt != rec.Attempt+1 {
		t.Fatalf("the call in progress's duplicate wrote: attempt %d", r.Attempt)
	}

	// A void of this intent wrote its marker and died before its delete.
	w.clock.Advance(2 * time.Minute)
	void, err := w.guard.TakeOverHeld(ctx, pkOf("read-back-key"), rec.DownstreamKey, idem.Settlement{Action: idem.SettleVoidConfirmed, By: "ops:bia", Decision: "dec-read-back-2"})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.store.MarkRelease(ctx, idem.ReleaseMarker{DownstreamKey: rec.DownstreamKey, PK: rec.PK, Attempt: void.Attempt(), Decision: *void.Record().Hold.Settling}); err != nil {
		t.Fatal(err)
	}
	w.clock.Advance(2 * time.Minute)
	if st, err := svc.Settle(ctx, accept); err != nil || st.State != op.CompletedByThis {
		t.Fatalf("the accept: %+v, %v", st, err)
	}
	// The same id under the other action is not this decision.
	crossed := accept
	crossed.Action = idem.SettleVoidConfirmed
	if st, err := svc.ReadBack(ctx, crossed); err != nil || st.State != op.CompletedByAnother {
		t.Fatalf("the accept's id read back as a void: %s, %v; want completed by another", st.State, err)
	}
	// Past its retention the record is gone: the row, not the stale
	// marker, says what became of the intent.
	w.clock.Advance(idem.DefaultRetention + time.Hour)
	staleVoid := op.Decision{PK: rec.PK, Instance: rec.DownstreamKey, Action: idem.SettleVoidConfirmed, By: "ops:bia", ID: "dec-read-back-2"}
	if st, err := svc.ReadBack(ctx, staleVoid); err != nil || st.State != op.CompletedByAnother || st.Row.ID == "" {
		t.Fatalf("the unfinished void, read back once the record is gone: %+v, %v; want completed (its row)", st, err)
	}
}

package refundtest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/acquirer/acquirerhttp"
	"github.com/idempotent-payments/idempay/internal/capture"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/charge/chargetest"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/idem/idemtest"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/refund"
	"github.com/idempotent-payments/idempay/internal/sandbox"
)

// Stores are one table's stores, fresh for one test: the engine's, the
// charges' ledger, the balances and the refunds' ledger.
type Stores struct {
	Store    idem.Store
	Charges  charge.Ledger
	Balances refund.Balances
	// Captures is the capture side of Balances' items: the cases that
	// refund an authorization capture on it directly.
	Captures capture.Balances
	Refunds  refund.Ledger
}

// NewStoresFunc returns fresh stores for one test.
type NewStoresFunc func(t *testing.T) Stores

// RunServiceConformance runs every path of a refund's state machine
// (DESIGN §7) over the stores, with the sandbox acquirer behind a real
// socket and its own bound off, so only the service's bound decides:
// the order of decisions, the bound under concurrency on two instances,
// declines, dropped answers, kills between every two steps resolved by a
// retry and by the reconciler, and a lying acquirer.
func RunServiceConformance(t *testing.T, newStores NewStoresFunc) {
	for _, c := range []struct {
		name string
		run  func(t *testing.T, w *world)
	}{
		{"RefundsUpToTheCharge", serviceRefundsUpToTheCharge},
		{"ConcurrentRefundsOnTwoInstances", serviceConcurrentRefundsOnTwoInstances},
		{"TheKeyIsScopedByOperation", serviceTheKeyIsScopedByOperation},
		{"TheChargeDecidesFirst", serviceTheChargeDecidesFirst},
		{"RefundsOfAnAuthorizationFollowItsCaptures", serviceRefundsOfAnAuthorization},
		{"AChargeWhoseOutcomeIsPending", serviceAChargeWhoseOutcomeIsPending},
		{"AHeldCharge", serviceAHeldCharge},
		{"AHeldChargeWithoutARow", serviceAHeldChargeWithoutARow},
		{"ADeclineFreesTheAmount", serviceADeclineFreesTheAmount},
		{"ADroppedAnswerIsReconciled", serviceADroppedAnswerIsReconciled},
		{"NothingSentReleasesBoth", serviceNothingSentReleasesBoth},
		{"AnOutageNeverUsesUpTheRefunds", serviceAnOutageNeverUsesUpTheRefunds},
		{"AReservationWhoseAnswerWasLost", serviceAReservationWhoseAnswerWasLost},
		{"FailedReservationsNeverGrowTheBalance", serviceFailedReservationsNeverGrowTheBalance},
		{"AnUnknownOutcomeIsTakenOverAndSent", serviceAnUnknownOutcomeIsTakenOverAndSent},
		{"TheReconcilerReleasesWhatNeverLeft", serviceTheReconcilerReleasesWhatNeverLeft},
		{"KillsBetweenTheSteps", serviceKillsBetweenTheSteps},
		{"AForgetfulAcquirerNeverFreesARowsKey", serviceAForgetfulAcquirerNeverFreesARowsKey},
		{"ALateReservationAfterASuccessIsRefused", serviceALateReservationAfterASuccessIsRefused},
		{"AReservationPassedByAFoldIsIssuedAgain", serviceAReservationPassedByAFoldIsIssuedAgain},
		{"ALyingAcquirerIsHeld", serviceALyingAcquirerIsHeld},
		{"AHeldRefundIsAccepted", serviceAHeldRefundIsAccepted},
		{"AHeldRefundIsVoided", serviceAHeldRefundIsVoided},
		{"ALateRowAfterAVoidIsRefused", serviceALateRowAfterAVoid},
		{"AReleasedEntryIsNotBooked", serviceAReleasedEntryIsNotBooked},
		{"ARowThatDiffersIsHeld", serviceARowThatDiffersIsHeld},
		{"ARefundAfterItsReleaseIsHeld", serviceARefundAfterItsReleaseIsHeld},
		{"AGoneChargeWithAnEntryIsNotReleased", serviceAGoneChargeWithAnEntryIsNotReleased},
		{"AGoneChargesReleaseFoldsTheIntent", serviceAGoneChargesReleaseFoldsTheIntent},
		{"AGoneChargesRefundWithARowCompletes", serviceAGoneChargesRefundWithARowCompletes},
		{"TheLimitOfRefunds", serviceTheLimitOfRefunds},
		{"LookupsByIDAndKey", serviceLookupsByIDAndKey},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, newWorld(t, newStores))
		})
	}
}

// protocol is the suite's guards': T 5 s, skew 1 s, the sandbox.
var protocol = idem.Protocol{InTransitBound: 5 * time.Second, ClockSkew: time.Second, Downstream: "sandbox"}

const (
	account = "acct_r"
	// reconcilable is past a 30 s lease and T + skew.
	reconcilable = 30*time.Second + 7*time.Second
)

// world is a charge service and a refund service on fresh stores, with a
// test clock and the sandbox on a socket.
type world struct {
	stores Stores
	// clock is moved by the cases (Advance); now is its time plus the
	// wall time since the world began, so the acquirer calls' deadlines,
	// which the context measures by the wall clock, stay ahead of it.
	clock   *idemtest.Clock
	began   time.Time
	sb      *sandbox.Server
	acq     *acquirerhttp.Client
	charges *charge.Service
	svc     *refund.Service
	n       atomic.Int64
}

func newWorld(t *testing.T, newStores NewStoresFunc) *world {
	w := &world{stores: newStores(t), clock: idemtest.NewClock(time.Now().Truncate(time.Millisecond)), began: time.Now(), sb: sandbox.New("")}
	w.sb.SetRefundBound(false)
	srv := httptest.NewServer(w.sb)
	t.Cleanup(srv.Close)
	w.acq, _ = acquirerhttp.NewClient(srv.URL, "", nil)
	w.charges, w.svc = w.instance(w.acq)
	return w
}

// instance is one more function instance: its own guard (and warm
// cache) on the same stores.
func (w *world) instance(acq refund.Acquirer) (*charge.Service, *refund.Service) {
	guard := idem.NewGuard(w.stores.Store, idem.Config{Now: w.now, DefaultLease: 30 * time.Second, Protocol: protocol})
	cfg := charge.Config{Now: w.now}
	charges := charge.NewService(guard, w.stores.Charges, w.acq, chargetest.Render, cfg)
	return charges, refund.NewService(guard, charges, w.stores.Balances, w.stores.Refunds, acq, Render, cfg)
}

// now is the world's time.
func (w *world) now() time.Time { return w.clock.Now().Add(time.Since(w.began)) }

// with is the refund service of another instance sending through acq.
func (w *world) with(acq refund.Acquirer) *refund.Service {
	_, svc := w.instance(acq)
	return svc
}

// charge charges amount with method and returns the charge's id.
func (w *world) charge(t *testing.T, method string, amount int64) string {
	t.Helper()
	res := w.charges.Charge(ctx, charge.Input{Account: account, Keys: []string{fmt.Sprintf("charge-key-%d", w.n.Add(1))},
		Body: fmt.Appendf(nil, `{"amount": %d, "currency": "BRL", "order_id": "o-1", "payment_method": %q}`, amount, method)})
	if res.Outcome != op.Executed || res.ChargeID == "" {
		t.Fatalf("charge: %s", res.Outcome)
	}
	return res.ChargeID
}

func in(key, chargeID, body string) refund.Input {
	return refund.Input{Account: account, Keys: []string{key}, ChargeID: chargeID, Body: []byte(body)}
}

// pkOf is the record of a refund key.
func pkOf(key string) string {
	return idem.Scope{Operation: refund.Operation, Account: account, Key: key}.PK()
}

// mustAnswer checks a result's outcome and its stored answer's status.
func mustAnswer(t *testing.T, res refund.Result, outcome op.Outcome, status int) {
	t.Helper()
	if res.Outcome != outcome || (status != 0 && res.Response.StatusCode != status) {
		t.Fatalf("%s %d %s, want %s %d", res.Outcome, res.Response.StatusCode, res.Response.Body, outcome, status)
	}
}

// mustHold checks the charge's balance, its invariant, and that the
// sandbox refunded exactly what the balance says was refunded.
func (w *world) mustHold(t *testing.T, chargeID string, remaining, reserved, refunded int64) {
	t.Helper()
	mustBalance(t, w.stores.Balances, chargeID, remaining, reserved, refunded)
	ch, err := w.stores.Charges.Get(ctx, chargeID)
	if err != nil {
		t.Fatal(err)
	}
	if got := w.sb.Refunded(ch.AuthorizationID); got != refunded {
		t.Fatalf("the acquirer refunded %d, the balance says %d", got, refunded)
	}
	if w.sb.RefundsRefused() != 0 {
		t.Fatalf("the sandbox refused %d refunds: its bound is off", w.sb.RefundsRefused())
	}
}

// mustBeGone checks that the key has no record.
func (w *world) mustBeGone(t *testing.T, key string) {
	t.Helper()
	if rec, err := w.stores.Store.Get(ctx, pkOf(key), w.now()); !errors.Is(err, idem.ErrNotFound) {
		t.Fatalf("the key's record: %+v, %v; want none", rec, err)
	}
}

// serviceRefundsUpToTheCharge: partial refunds succeed while they fit; a
// replay is the first answer byte for byte; one that does not fit is a
// final 422 with what remained; {} takes what remains, resolved when it
// is accepted.
func serviceRefundsUpToTheCharge(t *testing.T, w *world) {
	ch := w.charge(t, "pm_card_visa", 1000)
	first := w.svc.Refund(ctx, in("refund-a", ch, `{"amount": 600, "reason": "requested_by_customer"}`))
	mustAnswer(t, first, op.Executed, 201)
	if first.ID == "" || first.Attempt != 1 {
		t.Fatalf("first: %+v", first)
	}
	again := w.svc.Refund(ctx, in("refund-a", ch, `{"reason": "requested_by_customer", "amount": 600}`))
	mustAnswer(t, again, op.Replayed, 201)
	if string(again.Response.Body) != string(first.Response.Body) || again.ID != first.ID {
		t.Fatalf("replay %s, first %s", again.Response.Body, first.Response.Body)
	}
	over := w.svc.Refund(ctx, in("refund-b", ch, `{"amount": 600}`))
	mustAnswer(t, over, op.Executed, 422)
	if !strings.Contains(string(over.Response.Body), `"Refundable":400`) {
		t.Fatalf("the refusal %s does not say 400 remains", over.Response.Body)
	}
	replayed := w.svc.Refund(ctx, in("refund-b", ch, `{"amount": 600}`))
	mustAnswer(t, replayed, op.Replayed, 422)
	if over.ID == "" || replayed.ID != over.ID || over.ClaimedAt.IsZero() || !replayed.ClaimedAt.Equal(over.ClaimedAt) || replayed.Source != over.Source {
		t.Fatalf("the refusal and its replay name the refund %q and %q, claimed at %s and %s, from %q and %q: want one of each",
			over.ID, replayed.ID, over.ClaimedAt, replayed.ClaimedAt, over.Source, replayed.Source)
	}
	// The record stores the typed result beside the bytes, and the replay
	// carries the refusal from it.
	want := map[string]string{"code": string(op.CodeRefundExceedsCharge), "id": over.ID, "refundable": "400", "rowless": "true"}
	if got := w.record(t, idem.Scope{Operation: refund.Operation, Account: account, Key: "refund-b"}).Response.Result; !maps.Equal(got, want) ||
		over.Refusal != op.CodeRefundExceedsCharge || replayed.Refusal != op.CodeRefundExceedsCharge || first.Refusal != "" || again.Refusal != "" {
		t.Fatalf("the stored result %v (want %v); refusals %q, %q, %q, %q", got, want, over.Refusal, replayed.Refusal, first.Refusal, again.Refusal)
	}
	rest := w.svc.Refund(ctx, in("refund-c", ch, `{}`))
	mustAnswer(t, rest, op.Executed, 201)
	if row, err := w.stores.Refunds.Get(ctx, rest.ID); err != nil || row.Amount != 400 || row.Reason != "" {
		t.Fatalf("the rest: %+v, %v", row, err)
	}
	mustAnswer(t, w.svc.Refund(ctx, in("refund-d", ch, `{}`)), op.Executed, 422)
	w.mustHold(t, ch, 0, 0, 1000)
	if got, err := w.svc.Refunded(ctx, ch); err != nil || got != 1000 {
		t.Fatalf("refunded %d, %v", got, err)
	}
}

// serviceConcurrentRefundsOnTwoInstances: 20 refunds of 20 % under 20
// keys at once, through two instances: exactly 5 succeed, 15 are refused
// 422, and the acquirer refunded exactly the charge. A 503 is an answer a
// client retries under its key, as the contract says: a reservation
// whose every write another refund's fold passed on its way (op.Reserve's
// tries, which a loaded store can use up) released its key.
func serviceConcurrentRefundsOnTwoInstances(t *testing.T, w *world) {
	ch := w.charge(t, "pm_card_visa", 1000)
	instances := []*refund.Service{w.svc, w.with(w.acq)}
	results := make([]refund.Result, 20)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			input := in(fmt.Sprintf("concurrent-%d", i), ch, `{"amount": 200}`)
			results[i] = instances[i%2].Refund(ctx, input)
			for try := 0; results[i].Outcome == op.Unavailable && try < 10; try++ {
				results[i] = instances[i%2].Refund(ctx, input)
			}
		})
	}
	wg.Wait()
	count := map[int]int{}
	for _, r := range results {
		if r.Outcome != op.Executed {
			t.Fatalf("%s: %s (%s)", r.Key, r.Outcome, r.Reason)
		}
		count[r.Response.StatusCode]++
	}
	if count[201] != 5 || count[422] != 15 {
		t.Fatalf("answers %v, want 5×201 and 15×422", count)
	}
	w.mustHold(t, ch, 0, 0, 1000)
}

// serviceTheKeyIsScopedByOperation: one key string for a charge and a
// refund names two intents; {} and {"amount": N} under one key are two
// requests, even when N is what {} resolved to.
func serviceTheKeyIsScopedByOperation(t *testing.T, w *world) {
	res := w.charges.Charge(ctx, charge.Input{Account: account, Keys: []string{"shared-key-1"},
		Body: []byte(`{"amount": 500, "currency": "BRL", "order_id": "o-2", "payment_method": "pm_card_visa"}`)})
	if res.Outcome != op.Executed {
		t.Fatalf("charge: %s", res.Outcome)
	}
	mustAnswer(t, w.svc.Refund(ctx, in("shared-key-1", res.ChargeID, `{}`)), op.Executed, 201)
	mustAnswer(t, w.svc.Refund(ctx, in("shared-key-1", res.ChargeID, `{"amount": 500}`)), op.KeyReused, 0)
	other := w.charge(t, "pm_card_visa", 500)
	mustAnswer(t, w.svc.Refund(ctx, in("shared-key-1", other, `{}`)), op.KeyReused, 0)
}

// serviceRefundsOfAnAuthorization: an authorization made without its
// capture has nothing refundable until a capture took something (the
// bound's answer, stored; a take-over of an attempt killed before then
// frees its key); then refunds are bounded by what its captures took, as
// a charge's by its amount.
func serviceRefundsOfAnAuthorization(t *testing.T, w *world) {
	res := w.charges.Charge(ctx, charge.Input{Account: account, Keys: []string{"authorization-to-refund"},
		Body: []byte(`{"amount": 1000, "currency": "BRL", "order_id": "o-9", "payment_method": "pm_card_visa", "capture": false}`)})
	if res.Outcome != op.Executed {
		t.Fatalf("the authorization: %s", res.Outcome)
	}
	ch := res.ChargeID
	// Nothing captured yet: nothing refundable, stored as the bound's
	// answer, so the key answers so even once a capture took something.
	if r := w.svc.Refund(ctx, in("refund-nothing-captured", ch, `{"amount": 100}`)); r.Outcome != op.Executed || r.Refusal != op.CodeRefundExceedsCharge {
		t.Fatalf("a refund with nothing captured: %s %s", r.Outcome, r.Refusal)
	}
	// An attempt killed while it read the charge, nothing captured: its
	// take-over reserved nothing, sent nothing, and frees the key; the
	// next try is decided as a first attempt is.
	guard := idem.NewGuard(w.stores.Store, idem.Config{Now: w.now, DefaultLease: 30 * time.Second, Protocol: protocol})
	doomed := refund.NewService(guard, dyingCharges{}, w.stores.Balances, w.stores.Refunds, w.acq, Render, charge.Config{Now: w.now})
	if !killed(func() { doomed.Refund(ctx, in("refund-killed-reading", ch, `{"amount": 100}`)) }) {
		t.Fatal("the attempt was not killed")
	}
	w.clock.Advance(time.Minute)
	if r := w.svc.Refund(ctx, in("refund-killed-reading", ch, `{"amount": 100}`)); r.Outcome != op.Released {
		t.Fatalf("the take-over of a refund killed reading its charge: %s", r.Outcome)
	}
	if r := w.svc.Refund(ctx, in("refund-killed-reading", ch, `{"amount": 100}`)); r.Outcome != op.Executed || r.Refusal != op.CodeRefundExceedsCharge {
		t.Fatalf("its next try: %s %s", r.Outcome, r.Refusal)
	}
	// A capture of 600, made on the balance as the capture operation will.
	now := w.now()
	captured := refund.Intent{Key: strings.Repeat("c", 40), Claimed: now.Truncate(time.Millisecond), FoldAt: now.Add(time.Millisecond), First: true}
	if _, err := w.stores.Captures.Reserve(ctx, capture.Reservation{ChargeID: ch, Authorized: 1000, Intent: captured, Fence: 1,
		Kind: capture.Partial, Stamp: now, Amount: 600}); err != nil {
		t.Fatal(err)
	}
	if err := w.stores.Captures.Succeed(ctx, ch, captured, 1, capture.Partial); err != nil {
		t.Fatal(err)
	}
	w.clock.Advance(time.Second)
	mustAnswer(t, w.svc.Refund(ctx, in("refund-of-the-capture-1", ch, `{"amount": 500}`)), op.Executed, 201)
	if r := w.svc.Refund(ctx, in("refund-of-the-capture-2", ch, `{"amount": 200}`)); r.Outcome != op.Executed || r.Response.StatusCode != 422 ||
		r.Refusal != op.CodeRefundExceedsCharge || !strings.Contains(string(r.Response.Body), `"Refundable":100`) {
		t.Fatalf("a refund over what the captures left: %s %d %s", r.Outcome, r.Response.StatusCode, r.Response.Body)
	}
	mustAnswer(t, w.svc.Refund(ctx, in("refund-of-the-capture-3", ch, `{}`)), op.Executed, 201)
	if bal, err := w.stores.Balances.Get(ctx, ch); err != nil || bal.Captured != 600 || bal.Refunded != 600 || bal.Remaining != 0 || bal.Reserved != 0 {
		t.Fatalf("the balance: %+v, %v; want 600 captured, 600 refunded", bal, err)
	}
}

// serviceTheChargeDecidesFirst: no such charge, another account's, a
// declined one, an authorization with nothing captured, one of another
// acquirer: nothing stored, the key free; a
// row that names no acquirer is the deployment's, and is refunded.
// The door refuses before anything: a bad key, a bad body, an id that
// cannot be a charge's.
func serviceTheChargeDecidesFirst(t *testing.T, w *world) {
	ch := w.charge(t, "pm_card_visa", 1000)
	declined := w.charges.Charge(ctx, charge.Input{Account: account, Keys: []string{"declined-charge"},
		Body: []byte(`{"amount": 100, "currency": "BRL", "order_id": "o-3", "payment_method": "pm_card_declined"}`)})
	authorized := w.charges.Charge(ctx, charge.Input{Account: account, Keys: []string{"authorized-charge"},
		Body: []byte(`{"amount": 100, "currency": "BRL", "order_id": "o-5", "payment_method": "pm_card_visa", "capture": false}`)})
	if authorized.Outcome != op.Executed {
		t.Fatalf("the authorization: %s", authorized.Outcome)
	}
	foreign := charge.Charge{
		Origin: op.Origin{ID: charge.ID(strings.Repeat("e", 40)), Account: account,
			AcquirerID: "another-acquirer", CreatedAt: w.now()},
		Status: acquirer.StatusCaptured, Amount: 100, Currency: "BRL", OrderID: "o-4", AuthorizationID: "auth_x",
	}
	if _, err := w.stores.Charges.Write(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	// A row written before rows named their acquirer counts as the
	// deployment's acquirer's: refundable.
	legacy := foreign
	legacy.ID, legacy.AcquirerID = charge.ID(strings.Repeat("f", 40)), ""
	if _, err := w.stores.Charges.Write(ctx, legacy); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		in   refund.Input
		want op.Outcome
	}{
		{"no such charge", in("decide-1", charge.ID(strings.Repeat("0", 40)), `{}`), op.NotFound},
		{"another account's", refund.Input{Account: "acct_other", Keys: []string{"decide-2"}, ChargeID: ch, Body: []byte(`{}`)}, op.NotFound},
		{"declined", in("decide-3", declined.ChargeID, `{}`), op.NotRefundable},
		{"another acquirer's", in("decide-4", foreign.ID, `{}`), op.NotRefundable},
		{"not a charge id", in("decide-5", "ch_1", `{}`), op.NotFound},
		{"no key", refund.Input{Account: account, ChargeID: ch, Body: []byte(`{}`)}, op.KeyMissing},
		{"two keys", refund.Input{Account: account, Keys: []string{"decide-6", "decide-7"}, ChargeID: ch, Body: []byte(`{}`)}, op.KeyInvalid},
		{"a bad body", in("decide-8", ch, `{"amount": 1, "Amount": 2}`), op.RequestInvalid},
		{"no account", refund.Input{Keys: []string{"decide-9"}, ChargeID: ch, Body: []byte(`{}`)}, op.AccountInvalid},
	} {
		if res := w.svc.Refund(ctx, c.in); res.Outcome != c.want {
			t.Errorf("%s: %s, want %s", c.name, res.Outcome, c.want)
		}
		for _, k := range c.in.Keys {
			w.mustBeGone(t, k)
		}
	}
	// An authorization with nothing captured: the bound's answer, nothing
	// refundable, stored and replayed.
	for _, want := range []op.Outcome{op.Executed, op.Replayed} {
		if res := w.svc.Refund(ctx, in("decide-10", authorized.ChargeID, `{"amount": 1}`)); res.Outcome != want || res.Refusal != op.CodeRefundExceedsCharge {
			t.Errorf("authorized, nothing captured: %s %s, want %s %s", res.Outcome, res.Refusal, want, op.CodeRefundExceedsCharge)
		}
	}
	mustBalance(t, w.stores.Balances, ch, 0, 0, 0)
	if len(w.sb.Refunds()) != 0 {
		t.Fatalf("the acquirer received %d refunds", len(w.sb.Refunds()))
	}
	// The legacy row's refund reaches the acquirer, which knows no such
	// authorization here and declines it: what matters is that it was sent.
	if res := w.svc.Refund(ctx, in("decide-legacy", legacy.ID, `{}`)); res.Outcome != op.Executed || len(w.sb.Refunds()) != 1 {
		t.Fatalf("a row without an acquirer id: %s, %d refunds sent", res.Outcome, len(w.sb.Refunds()))
	}
}

// failingCompletion fails the next Complete once armed: a charge whose
// worker wrote its row and died before completing its record.
type failingCompletion struct {
	idem.Store
	armed atomic.Bool
}

func (s *failingCompletion) Complete(c2 context.Context, pk, token string, resp idem.Response, settled *idem.Settlement, expiresAt time.Time) error {
	if s.armed.CompareAndSwap(true, false) {
		return errors.New("died between the row and the completion")
	}
	return s.Store.Complete(c2, pk, token, resp, settled, expiresAt)
}

// serviceAChargeWhoseOutcomeIsPending: a charge whose row exists while
// its record is still in flight answers 503 CHARGE_OUTCOME_PENDING;
// nothing stored; once the charge completes, the refund goes through.
func serviceAChargeWhoseOutcomeIsPending(t *testing.T, w *world) {
	store := &failingCompletion{Store: w.stores.Store}
	guard := idem.NewGuard(store, idem.Config{Now: w.now, DefaultLease: 30 * time.Second, Protocol: protocol})
	charges := charge.NewService(guard, w.stores.Charges, w.acq, chargetest.Render, charge.Config{Now: w.now})
	store.armed.Store(true)
	chargeIn := charge.Input{Account: account, Keys: []string{"pending-charge"},
		Body: []byte(`{"amount": 700, "currency": "BRL", "order_id": "o-5", "payment_method": "pm_card_visa"}`)}
	if res := charges.Charge(ctx, chargeIn); res.Outcome != op.Pending {
		t.Fatalf("the charge that died after its row: %s", res.Outcome)
	}
	id := charge.ID(w.record(t, idem.Scope{Operation: charge.Operation, Account: account, Key: "pending-charge"}).DownstreamKey)
	res := w.svc.Refund(ctx, in("refund-of-pending", id, `{}`))
	if res.Outcome != op.ChargePending || res.RetryAfter <= 0 || refund.Codes.Of(res.Outcome) != "CHARGE_OUTCOME_PENDING" {
		t.Fatalf("%s (%s), retry after %s", res.Outcome, refund.Codes.Of(res.Outcome), res.RetryAfter)
	}
	w.mustBeGone(t, "refund-of-pending")
	w.clock.Advance(time.Minute)
	if res := charges.Charge(ctx, chargeIn); res.Outcome != op.Executed {
		t.Fatalf("the charge's retry: %s", res.Outcome)
	}
	mustAnswer(t, w.svc.Refund(ctx, in("refund-of-pending", id, `{}`)), op.Executed, 201)
	w.mustHold(t, id, 0, 0, 700)
}

// serviceAHeldCharge: a charge whose record is held for an operator (its
// row written) answers ChargeHeld, 503 CHARGE_OUTCOME_PENDING over HTTP,
// apart from a charge in flight so a queue command is deleted rather than
// retried; nothing is stored or reserved.
func serviceAHeldCharge(t *testing.T, w *world) {
	store := &failingCompletion{Store: w.stores.Store}
	guard := idem.NewGuard(store, idem.Config{Now: w.now, DefaultLease: 30 * time.Second, Protocol: protocol})
	charges := charge.NewService(guard, w.stores.Charges, w.acq, chargetest.Render, charge.Config{Now: w.now})
	store.armed.Store(true)
	chargeIn := charge.Input{Account: account, Keys: []string{"held-charge"},
		Body: []byte(`{"amount": 700, "currency": "BRL", "order_id": "o-6", "payment_method": "pm_card_visa"}`)}
	if res := charges.Charge(ctx, chargeIn); res.Outcome != op.Pending {
		t.Fatalf("the charge that died after its row: %s", res.Outcome)
	}
	scope := idem.Scope{Operation: charge.Operation, Account: account, Key: "held-charge"}
	id := charge.ID(w.record(t, scope).DownstreamKey)
	w.clock.Advance(time.Hour)
	lease, err := guard.TakeOverStale(ctx, scope.PK())
	if err != nil {
		t.Fatal(err)
	}
	if err := lease.HoldForOperator(ctx, "amount_differs", nil); err != nil {
		t.Fatal(err)
	}
	res := w.svc.Refund(ctx, in("refund-of-held", id, `{}`))
	if res.Outcome != op.ChargeHeld || res.RetryAfter <= 0 || refund.Codes.Of(res.Outcome) != "CHARGE_OUTCOME_PENDING" {
		t.Fatalf("%s (%s), retry after %s", res.Outcome, refund.Codes.Of(res.Outcome), res.RetryAfter)
	}
	w.mustBeGone(t, "refund-of-held")
	w.mustHold(t, id, 0, 0, 0)
}

// record is the scope's record, as the store holds it now.
// intentOfRecord is the refund intent of a refund record, as the service
// names it on the balance.
func intentOfRecord(rec *idem.Record) refund.Intent {
	return refund.Intent{Key: rec.DownstreamKey, Claimed: rec.CreatedAt}
}

func (w *world) record(t *testing.T, scope idem.Scope) *idem.Record {
	t.Helper()
	rec, err := w.stores.Store.Get(ctx, scope.PK(), w.now())
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// held is the held record under scope as an operator finds it: a
// millisecond after the hold at least, as a person decides. (A hold ends
// its lease on a millisecond, the one after its floor when the floor is
// in the hold's own millisecond, and an accept waits for that end.)
func (w *world) held(t *testing.T, scope idem.Scope) *idem.Record {
	t.Helper()
	w.clock.Advance(time.Millisecond)
	return w.record(t, scope)
}

// serviceADeclineFreesTheAmount: a refund the acquirer declines is a
// stored 402 with its row, its reservation released; the amount can be
// refunded again.
func serviceADeclineFreesTheAmount(t *testing.T, w *world) {
	ch := w.charge(t, "pm_card_visa", 1000)
	w.sb.SetFaults(sandbox.Faults{DeclineRefunds: true})
	declined := w.svc.Refund(ctx, in("declined-refund", ch, `{"amount": 1000}`))
	mustAnswer(t, declined, op.Executed, 402)
	if row, err := w.stores.Refunds.Get(ctx, declined.ID); err != nil || row.Status != acquirer.RefundDeclined || row.DeclineCode == "" {
		t.Fatalf("the declined row: %+v, %v", row, err)
	}
	w.mustHold(t, ch, 1000, 0, 0)
	w.sb.SetFaults(sandbox.Faults{})
	w.clock.Advance(time.Millisecond) // claimed after the declined intent, which the balance folded
	mustAnswer(t, w.svc.Refund(ctx, in("after-the-decline", ch, `{"amount": 1000}`)), op.Executed, 201)
	w.mustHold(t, ch, 0, 0, 1000)
}

// serviceADroppedAnswerIsReconciled: the acquirer refunds and the answer
// is lost: 503 pending, the amount reserved; the reconciler completes it
// and the client's retry replays the refund.
func serviceADroppedAnswerIsReconciled(t *testing.T, w *world) {
	ch := w.charge(t, "pm_card_visa", 1000)
	w.sb.SetFaults(sandbox.Faults{DropRate: 1})
	res := w.svc.Refund(ctx, in("dropped-refund", ch, `{"amount": 300}`))
	if res.Outcome != op.Pending || refund.Codes.Of(res.Outcome) != op.CodeRefundOutcomePending {
		t.Fatalf("%s", res.Outcome)
	}
	w.sb.SetFaults(sandbox.Faults{})
	mustBalance(t, w.stores.Balances, ch, 700, 300, 0)
	w.clock.Advance(reconcilable)
	if got, err := w.svc.Reconcile(ctx, pkOf("dropped-refund")); err != nil || got != op.ReconciledCompleted {
		t.Fatalf("reconcile: %s, %v", got, err)
	}
	w.mustHold(t, ch, 700, 0, 300)
	mustAnswer(t, w.svc.Refund(ctx, in("dropped-refund", ch, `{"amount": 300}`)), op.Replayed, 201)
}

// serviceNothingSentReleasesBoth: an acquirer that cannot be reached on a
// first attempt: 503 with the key and the reservation released.
func serviceNothingSentReleasesBoth(t *testing.T, w *world) {
	ch := w.charge(t, "pm_card_visa", 1000)
	closed := httptest.NewServer(nil)
	closed.Close()
	unreachable, _ := acquirerhttp.NewClient(closed.URL, "", nil)
	res := w.with(unreachable).Refund(ctx, in("unsent-refund", ch, `{"amount": 1000}`))
	if res.Outcome != op.Released {
		t.Fatalf("%s", res.Outcome)
	}
	w.mustBeGone(t, "unsent-refund")
	w.mustHold(t, ch, 1000, 0, 0)
	w.clock.Advance(time.Millisecond) // a new intent: a new downstream key
	mustAnswer(t, w.svc.Refund(ctx, in("unsent-refund", ch, `{"amount": 1000}`)), op.Executed, 201)
}

// serviceAnOutageNeverUsesUpTheRefunds: a charge with one refund made;
// one refund key retried by the client's rule, and a few more keys (a
// queue redelivering its commands), more tries in all than the limit of
// refunds, while the acquirer cannot be reached: each answers 503 with
// nothing reserved and takes nothing from the limit. Once the acquirer is
// back, the key retried refunds.
func serviceAnOutageNeverUsesUpTheRefunds(t *testing.T, w *world) {
	ch := w.charge(t, "pm_card_visa", 10000)
	mustAnswer(t, w.svc.Refund(ctx, in("made-refund", ch, `{"amount": 1}`)), op.Executed, 201)
	closed := httptest.NewServer(nil)
	closed.Close()
	unreachable, _ := acquirerhttp.NewClient(closed.URL, "", nil)
	down := w.with(unreachable)
	for i := range refund.MaxEntries + 10 {
		key := "retried-in-the-outage"
		if i%7 == 6 {
			key = fmt.Sprintf("another-key-%d", i)
		}
		w.clock.Advance(time.Millisecond) // each try a new intent, claimed after the last
		res := down.Refund(ctx, in(key, ch, `{"amount": 100}`))
		if res.Outcome != op.Released || res.RetryAfter <= 0 {
			t.Fatalf("try %d in the outage: %s, want released with a Retry-After", i, res.Outcome)
		}
	}
	w.mustHold(t, ch, 9999, 0, 1)
	if bal, err := w.stores.Balances.Get(ctx, ch); err != nil || bal.Entries != 0 || len(bal.ByKey) != 0 {
		t.Fatalf("the balance after the outage: %d entries counted, %d held, %v; want none (nothing in flight)", bal.Entries, len(bal.ByKey), err)
	}
	w.clock.Advance(time.Millisecond)
	mustAnswer(t, w.svc.Refund(ctx, in("retried-in-the-outage", ch, `{"amount": 100}`)), op.Executed, 201)
	w.mustHold(t, ch, 9899, 0, 101)
}

// serviceFailedReservationsNeverGrowTheBalance: more refunds than the
// limit whose reservation the store fails (its write landing, or not) leave the
// balance as it was: nothing reserved, no entry kept, and the next
// refund is made.
func serviceFailedReservationsNeverGrowTheBalance(t *testing.T, w *world) {
	ch := w.charge(t, "pm_card_visa", 1000)
	mustAnswer(t, w.svc.Refund(ctx, in("the-one-refund", ch, `{"amount": 100}`)), op.Executed, 201)
	guard := idem.NewGuard(w.stores.Store, idem.Config{Now: w.now, DefaultLease: 30 * time.Second, Protocol: protocol})
	for i := range refund.MaxEntries + 10 {
		balances := refund.Balances(lostReservation{w.stores.Balances})
		if i%2 == 1 {
			balances = failedReservation{w.stores.Balances}
		}
		svc := refund.NewService(guard, w.charges, balances, w.stores.Refunds, w.acq, Render, charge.Config{Now: w.now})
		w.clock.Advance(time.Millisecond)
		if res := svc.Refund(ctx, in(fmt.Sprintf("failed-%d", i), ch, `{"amount": 100}`)); res.Outcome != op.Unavailable {
			t.Fatalf("try %d: %s", i, res.Outcome)
		}
	}
	if bal, err := w.stores.Balances.Get(ctx, ch); err != nil || bal.Entries != 0 || len(bal.ByKey) != 0 {
		t.Fatalf("the balance after %d failed reservations: %d entries counted, %d held, %v; want none (nothing in flight)", refund.MaxEntries+10, bal.Entries, len(bal.ByKey), err)
	}
	w.clock.Advance(time.Millisecond)
	mustAnswer(t, w.svc.Refund(ctx, in("after-the-failures", ch, `{"amount": 100}`)), op.Executed, 201)
	w.mustHold(t, ch, 800, 0, 200)
}

// failedReservation is balances whose Reserve fails without writing, as a
// throttled or failed write does.
type failedReservation struct{ refund.Balances }

func (failedReservation) Reserve(context.Context, refund.Reservation) (refund.Entry, error) {
	return refund.Entry{}, errors.New("the reservation failed")
}

// lostReservation is balances whose Reserve lands and then fails, as a
// write whose answer was lost does.
type lostReservation struct{ refund.Balances }

func (b lostReservation) Reserve(c2 context.Context, r refund.Reservation) (refund.Entry, error) {
	if _, err := b.Balances.Reserve(c2, r); err != nil {
		return refund.Entry{}, err
	}
	return refund.Entry{}, errors.New("the reservation's answer was lost")
}

// serviceAReservationWhoseAnswerWasLost: the store fails at the
// reservation, before anything is sent: 503 SERVICE_UNAVAILABLE, the
// entry released first (the write had landed), then the key.
func serviceAReservationWhoseAnswerWasLost(t *testing.T, w *world) {
	ch := w.charge(t, "pm_card_visa", 1000)
	guard := idem.NewGuard(w.stores.Store, idem.Config{Now: w.now, DefaultLease: 30 * time.Second, Protocol: protocol})
	svc := refund.NewService(guard, w.charges, lostReservation{w.stores.Balances}, w.stores.Refunds, w.acq, Render, charge.Config{Now: w.now})
	if res := svc.Refund(ctx, in("lost-reservation", ch, `{"amount": 700}`)); res.Outcome != op.Unavailable || res.RetryAfter <= 0 {
		t.Fatalf("%s", res.Outcome)
	}
	w.mustBeGone(t, "lost-reservation")
	w.mustHold(t, ch, 1000, 0, 0)
	if len(w.sb.Refunds()) != 0 {
		t.Fatal("the acquirer received a refund")
	}
}

// serviceAnUnknownOutcomeIsTakenOverAndSent: a 500 leaves the outcome
// unknown and the amount reserved; the client's retry takes over, finds
// nothing at the acquirer and sends the stored amount under the same key.
func serviceAnUnknownOutcomeIsTakenOverAndSent(t *testing.T, w *world) {
	ch := w.charge(t, "pm_card_visa", 1000)
	w.sb.SetFaults(sandbox.Faults{ErrorRate: 1})
	if res := w.svc.Refund(ctx, in("unknown-refund", ch, `{}`)); res.Outcome != op.Pending {
		t.Fatalf("%s", res.Outcome)
	}
	w.sb.SetFaults(sandbox.Faults{})
	mustBalance(t, w.stores.Balances, ch, 0, 1000, 0)
	w.clock.Advance(time.Minute)
	res := w.svc.Refund(ctx, in("unknown-refund", ch, `{}`))
	mustAnswer(t, res, op.Executed, 201)
	if res.Attempt != 2 || len(w.sb.Refunds()) != 1 {
		t.Fatalf("attempt %d, %d refunds at the acquirer", res.Attempt, len(w.sb.Refunds()))
	}
	w.mustHold(t, ch, 0, 0, 1000)
}

// serviceTheReconcilerReleasesWhatNeverLeft: an unknown outcome the
// acquirer never processed: the reconciler releases the entry, then the
// key, and the amount is refundable again.
func serviceTheReconcilerReleasesWhatNeverLeft(t *testing.T, w *world) {
	ch := w.charge(t, "pm_card_visa", 1000)
	w.sb.SetFaults(sandbox.Faults{ErrorRate: 1})
	if res := w.svc.Refund(ctx, in("never-left", ch, `{"amount": 400}`)); res.Outcome != op.Pending {
		t.Fatalf("%s", res.Outcome)
	}
	w.sb.SetFaults(sandbox.Faults{})
	if got, err := w.svc.Reconcile(ctx, pkOf("never-left")); err != nil || got != op.NothingToDo {
		t.Fatalf("reconcile before the wait-out: %s, %v", got, err)
	}
	w.clock.Advance(reconcilable)
	if got, err := w.svc.Reconcile(ctx, pkOf("never-left")); err != nil || got != op.ReconciledReleased {
		t.Fatalf("reconcile: %s, %v", got, err)
	}
	w.mustBeGone(t, "never-left")
	w.mustHold(t, ch, 1000, 0, 0)
}

// crashing stands for a process killed at one step: it panics there,
// and the test recovers, leaving the record as a kill would (in flight,
// its lease live).
type crashing struct {
	refund.Acquirer
	beforeSend, afterSend atomic.Bool
}

func (c *crashing) Refund(c2 context.Context, key string, req acquirer.RefundRequest) (acquirer.Refund, error) {
	if c.beforeSend.Load() {
		panic("killed between the reservation and the send")
	}
	r, err := c.Acquirer.Refund(c2, key, req)
	if c.afterSend.Load() {
		panic("killed between the send and the row")
	}
	return r, err
}

// killedAfterTheRow writes the row, then dies.
type killedAfterTheRow struct{ refund.Ledger }

func (l killedAfterTheRow) Write(c2 context.Context, r refund.Refund) (refund.Refund, error) {
	if _, err := l.Ledger.Write(c2, r); err != nil {
		return refund.Refund{}, err
	}
	panic("killed between the row and the balance")
}

// dyingCharges kills the attempt that reads a charge through them.
type dyingCharges struct{}

func (dyingCharges) Get(context.Context, string, string) charge.Result {
	panic("killed reading the charge")
}

func killed(f func()) (died bool) {
	defer func() { died = recover() != nil }()
	f()
	return false
}

// serviceKillsBetweenTheSteps: a kill between the reservation and the
// send, between the send and the row, and between the row and the
// balance, each resolved once by a retry and once by the reconciler: the
// acquirer refunds at most once per intent, and once resolved nothing
// stays reserved.
func serviceKillsBetweenTheSteps(t *testing.T, w *world) {
	for _, kill := range []string{"before the send", "after the send", "after the row"} {
		for _, by := range []string{"retry", "reconciler"} {
			ch := w.charge(t, "pm_card_visa", 1000)
			key := fmt.Sprintf("killed-%s-%s", strings.ReplaceAll(kill, " ", "-"), by)
			acq := &crashing{Acquirer: w.acq}
			acq.beforeSend.Store(kill == "before the send")
			acq.afterSend.Store(kill == "after the send")
			var ledger refund.Ledger = w.stores.Refunds
			if kill == "after the row" {
				ledger = killedAfterTheRow{w.stores.Refunds}
			}
			guard := idem.NewGuard(w.stores.Store, idem.Config{Now: w.now, DefaultLease: 30 * time.Second, Protocol: protocol})
			doomed := refund.NewService(guard, w.charges, w.stores.Balances, ledger, acq, Render, charge.Config{Now: w.now})
			if !killed(func() { doomed.Refund(ctx, in(key, ch, `{"amount": 600}`)) }) {
				t.Fatalf("%s: the attempt was not killed", kill)
			}
			mustBalance(t, w.stores.Balances, ch, 400, 600, 0)
			sent := kill != "before the send"
			switch by {
			case "retry":
				w.clock.Advance(time.Minute)
				mustAnswer(t, w.svc.Refund(ctx, in(key, ch, `{"amount": 600}`)), op.Executed, 201)
				w.mustHold(t, ch, 400, 0, 600)
			case "reconciler":
				w.clock.Advance(reconcilable)
				got, err := w.svc.Reconcile(ctx, pkOf(key))
				want := op.ReconciledReleased
				if sent {
					want = op.ReconciledCompleted
				}
				if err != nil || got != want {
					t.Fatalf("%s, %s: %s, %v; want %s", kill, by, got, err, want)
				}
				if sent {
					w.mustHold(t, ch, 400, 0, 600)
				} else {
					w.mustHold(t, ch, 1000, 0, 0)
				}
			}
		}
	}
}

// serviceAForgetfulAcquirerNeverFreesARowsKey: an attempt killed after
// its refund's row, and an acquirer whose lookup does not find the refund
// it made: the take-over, by a retry and by the reconciler, completes from
// the row instead of releasing the key, and the books keep the refund.
func serviceAForgetfulAcquirerNeverFreesARowsKey(t *testing.T, w *world) {
	for _, by := range []string{"retry", "reconciler"} {
		ch := w.charge(t, "pm_card_visa", 1000)
		key := "forgotten-by-the-" + by
		guard := idem.NewGuard(w.stores.Store, idem.Config{Now: w.now, DefaultLease: 30 * time.Second, Protocol: protocol})
		doomed := refund.NewService(guard, w.charges, w.stores.Balances, killedAfterTheRow{w.stores.Refunds}, w.acq, Render, charge.Config{Now: w.now})
		if !killed(func() { doomed.Refund(ctx, in(key, ch, `{"amount": 600}`)) }) {
			t.Fatal("the attempt was not killed")
		}
		forgetful := w.with(forgetting{w.acq})
		switch by {
		case "retry":
			w.clock.Advance(time.Minute)
			mustAnswer(t, forgetful.Refund(ctx, in(key, ch, `{"amount": 600}`)), op.Executed, 201)
		case "reconciler":
			w.clock.Advance(reconcilable)
			if got, err := forgetful.Reconcile(ctx, pkOf(key)); err != nil || got != op.ReconciledCompleted {
				t.Fatalf("reconcile: %s, %v; want completed from the row", got, err)
			}
		}
		w.mustHold(t, ch, 400, 0, 600)
		if refunds := w.sb.Refunds(); refunds[len(refunds)-1].Amount != 600 {
			t.Fatalf("the acquirer's refunds: %+v", refunds)
		}
	}
}

// forgetting is an acquirer whose lookup never finds a refund.
type forgetting struct{ refund.Acquirer }

func (forgetting) LookupRefund(context.Context, string) (acquirer.Refund, error) {
	return acquirer.Refund{}, acquirer.ErrNotFound
}

// serviceALateReservationAfterASuccessIsRefused: a refund's reservation
// whose write lands again after the refund succeeded (the SDK's try of a
// write that had landed, delivered late) is refused: its stamp is before
// the success's fold, so nothing is reserved twice and the charge's
// refundable amount stays what the refund left.
func serviceALateReservationAfterASuccessIsRefused(t *testing.T, w *world) {
	ch := w.charge(t, "pm_card_visa", 1000)
	var sent refund.Reservation
	guard := idem.NewGuard(w.stores.Store, idem.Config{Now: w.now, DefaultLease: 30 * time.Second, Protocol: protocol})
	svc := refund.NewService(guard, w.charges, recording{Balances: w.stores.Balances, last: &sent}, w.stores.Refunds, w.acq, Render, charge.Config{Now: w.now})
	mustAnswer(t, svc.Refund(ctx, in("late-write", ch, `{"amount": 600}`)), op.Executed, 201)
	w.clock.Advance(time.Second)
	if _, err := w.stores.Balances.Reserve(ctx, sent); !errors.Is(err, refund.ErrStampPassed) {
		t.Fatalf("the reservation landing again after the success: %v, want ErrStampPassed", err)
	}
	w.mustHold(t, ch, 400, 0, 600)
	mustAnswer(t, w.svc.Refund(ctx, in("after-the-late-write", ch, `{"amount": 400}`)), op.Executed, 201)
}

// serviceAReservationPassedByAFoldIsIssuedAgain: another refund of the
// charge succeeds while a reservation's write is on its way, and its fold
// passes the write's stamp: the write is refused, and the attempt issues
// it again with a new stamp, which reserves: the refund is made, not
// answered 503.
func serviceAReservationPassedByAFoldIsIssuedAgain(t *testing.T, w *world) {
	ch := w.charge(t, "pm_card_visa", 1000)
	passed := &passedOnce{Balances: w.stores.Balances, charge: ch}
	guard := idem.NewGuard(w.stores.Store, idem.Config{Now: w.now, DefaultLease: 30 * time.Second, Protocol: protocol})
	svc := refund.NewService(guard, w.charges, passed, w.stores.Refunds, w.acq, Render, charge.Config{Now: w.now})
	mustAnswer(t, svc.Refund(ctx, in("passed-by-a-fold", ch, `{"amount": 300}`)), op.Executed, 201)
	if passed.tries != 2 {
		t.Fatalf("%d reservation writes, want 2", passed.tries)
	}
	mustBalance(t, w.stores.Balances, ch, 600, 0, 400) // 100 of them planted, not made at the acquirer
}

// passedOnce is balances where, before the first reservation lands,
// another refund of 100 reserves and succeeds, its fold at the
// reservation's stamp.
type passedOnce struct {
	refund.Balances
	charge string
	tries  int
}

func (b *passedOnce) Reserve(c2 context.Context, r refund.Reservation) (refund.Entry, error) {
	if b.tries++; b.tries == 1 {
		other := refund.Intent{Key: strings.Repeat("a", 40), Claimed: r.Intent.Claimed, FoldAt: r.Stamp, First: true}
		if _, err := b.Balances.Reserve(c2, refund.Reservation{ChargeID: b.charge, ChargeAmount: 1000, Intent: other, Fence: 1,
			Stamp: r.Stamp.Add(-time.Microsecond), Amount: 100}); err != nil {
			return refund.Entry{}, err
		}
		if err := b.Balances.Succeed(c2, b.charge, other, 1); err != nil {
			return refund.Entry{}, err
		}
	}
	return b.Balances.Reserve(c2, r)
}

// recording is balances that keep the last reservation asked.
type recording struct {
	refund.Balances
	last *refund.Reservation
}

func (b recording) Reserve(c2 context.Context, r refund.Reservation) (refund.Entry, error) {
	*b.last = r
	return b.Balances.Reserve(c2, r)
}

// serviceALyingAcquirerIsHeld: a refund made for ten times the amount
// asked is held for an operator: no row, the reservation kept, and every
// retry answers pending.
func serviceALyingAcquirerIsHeld(t *testing.T, w *world) {
	ch := w.charge(t, sandbox.PaymentMethodRefundsTenfold, 1000)
	res := w.svc.Refund(ctx, in("tenfold-refund", ch, `{"amount": 100}`))
	if res.Outcome != op.Mismatch || refund.Codes.Of(res.Outcome) != op.CodeRefundOutcomePending {
		t.Fatalf("%s", res.Outcome)
	}
	rec := w.record(t, idem.Scope{Operation: refund.Operation, Account: account, Key: "tenfold-refund"})
	if !rec.Held() || rec.Hold.Reason != acquirer.ReasonAmount {
		t.Fatalf("record %+v", rec)
	}
	if _, err := w.stores.Refunds.Get(ctx, refund.ID(rec.DownstreamKey)); !errors.Is(err, refund.ErrNoRefund) {
		t.Fatalf("a held refund has a row: %v", err)
	}
	mustBalance(t, w.stores.Balances, ch, 900, 100, 0)
	w.clock.Advance(time.Hour)
	if again := w.svc.Refund(ctx, in("tenfold-refund", ch, `{"amount": 100}`)); again.Outcome != op.Held {
		t.Fatalf("retry: %s", again.Outcome)
	}
	if got, err := w.svc.Reconcile(ctx, pkOf("tenfold-refund")); err != nil || got != op.ReconciledHeld {
		t.Fatalf("reconcile: %s, %v", got, err)
	}
}

// serviceARowThatDiffersIsHeld: the row an earlier attempt wrote says
// declined, the acquirer now says refunded: the row decides the entry's
// step, so the record is held rather than the amount released.
func serviceARowThatDiffersIsHeld(t *testing.T, w *world) {
	ch := w.charge(t, "pm_card_visa", 1000)
	w.sb.SetFaults(sandbox.Faults{DropRate: 1})
	if res := w.svc.Refund(ctx, in("row-differs", ch, `{"amount": 300}`)); res.Outcome != op.Pending {
		t.Fatalf("%s", res.Outcome)
	}
	w.sb.SetFaults(sandbox.Faults{})
	rec := w.record(t, idem.Scope{Operation: refund.Operation, Account: account, Key: "row-differs"})
	if _, err := w.stores.Refunds.Write(ctx, refund.Refund{
		Origin:   op.Origin{ID: refund.ID(rec.DownstreamKey), Account: account, CreatedAt: w.now()},
		ChargeID: ch, Status: acquirer.RefundDeclined, DeclineCode: "insufficient_funds", Amount: 300, Currency: "BRL",
		AcquirerRefundID: "rf_other",
	}); err != nil {
		t.Fatal(err)
	}
	w.clock.Advance(time.Minute)
	if res := w.svc.Refund(ctx, in("row-differs", ch, `{"amount": 300}`)); res.Outcome != op.Mismatch {
		t.Fatalf("the retry: %s", res.Outcome)
	}
	if rec := w.record(t, idem.Scope{Operation: refund.Operation, Account: account, Key: "row-differs"}); !rec.Held() || rec.Hold.Reason != refund.ReasonRowDiffers {
		t.Fatalf("record %+v", rec)
	}
	mustBalance(t, w.stores.Balances, ch, 700, 300, 0)
}

// serviceARefundAfterItsReleaseIsHeld: the acquirer makes a refund after
// its entry was released (it processed a request later than T allows):
// the record is held, never answered as pending for ever.
func serviceARefundAfterItsReleaseIsHeld(t *testing.T, w *world) {
	ch := w.charge(t, "pm_card_visa", 1000)
	w.sb.SetFaults(sandbox.Faults{ErrorRate: 1})
	if res := w.svc.Refund(ctx, in("late-refund", ch, `{"amount": 300}`)); res.Outcome != op.Pending {
		t.Fatalf("%s", res.Outcome)
	}
	w.sb.SetFaults(sandbox.Faults{})
	rec := w.record(t, idem.Scope{Operation: refund.Operation, Account: account, Key: "late-refund"})
	if err := w.stores.Balances.Release(ctx, ch, intentOfRecord(rec), rec.Attempt); err != nil {
		t.Fatal(err)
	}
	row, err := w.stores.Charges.Get(ctx, ch)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.sb.Refund(ctx, rec.DownstreamKey, acquirer.RefundRequest{AuthorizationID: row.AuthorizationID, Amount: 300, Currency: "BRL"}); err != nil {
		t.Fatal(err)
	}
	w.clock.Advance(time.Minute)
	if res := w.svc.Refund(ctx, in("late-refund", ch, `{"amount": 300}`)); res.Outcome != op.Mismatch {
		t.Fatalf("the retry: %s", res.Outcome)
	}
	if rec := w.record(t, idem.Scope{Operation: refund.Operation, Account: account, Key: "late-refund"}); !rec.Held() {
		t.Fatalf("record %+v", rec)
	}
}

// serviceAGoneChargeWithAnEntryIsNotReleased: a stale refund whose charge
// no longer reads (an unreadable row reads as none) but whose balance has
// its entry is left for a person, not released.
func serviceAGoneChargeWithAnEntryIsNotReleased(t *testing.T, w *world) {
	gone := charge.ID(strings.Repeat("9", 40))
	guard := idem.NewGuard(w.stores.Store, idem.Config{Now: w.now, DefaultLease: 30 * time.Second, Protocol: protocol})
	scope := idem.Scope{Operation: refund.Operation, Account: account, Key: "gone-charge"}
	claim, err := guard.Begin(ctx, scope, refund.Request{ChargeID: gone, Amount: 100}.Canonical())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.stores.Balances.Reserve(ctx, refund.Reservation{ChargeID: gone, ChargeAmount: 1000, Intent: intentOfRecord(new(claim.Lease.Record())), Fence: 1, Amount: 100}); err != nil {
		t.Fatal(err)
	}
	w.clock.Advance(reconcilable)
	if got, err := w.svc.Reconcile(ctx, scope.PK()); err == nil || got != op.NothingToDo {
		t.Fatalf("reconcile: %s, %v; want an error and nothing done", got, err)
	}
	if rec := w.record(t, scope); rec.Status != idem.StatusInProgress {
		t.Fatalf("record %+v", rec)
	}
	mustBalance(t, w.stores.Balances, gone, 900, 100, 0)
}

// serviceAGoneChargesReleaseFoldsTheIntent: a stale refund whose charge
// no longer reads and whose balance holds no entry is released, and its
// intent folded: its first attempt's reservation, landing afterwards, is
// refused.
func serviceAGoneChargesReleaseFoldsTheIntent(t *testing.T, w *world) {
	gone := charge.ID(strings.Repeat("8", 40))
	guard := idem.NewGuard(w.stores.Store, idem.Config{Now: w.now, DefaultLease: 30 * time.Second, Protocol: protocol})
	scope := idem.Scope{Operation: refund.Operation, Account: account, Key: "gone-charge-no-entry"}
	claim, err := guard.Begin(ctx, scope, refund.Request{ChargeID: gone, Amount: 100}.Canonical())
	if err != nil {
		t.Fatal(err)
	}
	w.clock.Advance(reconcilable)
	if got, err := w.svc.Reconcile(ctx, scope.PK()); err != nil || got != op.ReconciledReleased {
		t.Fatalf("reconcile: %s, %v; want released", got, err)
	}
	w.mustBeGone(t, "gone-charge-no-entry")
	late := refund.Reservation{ChargeID: gone, ChargeAmount: 1000, Intent: intentOfRecord(new(claim.Lease.Record())), Fence: 1, Amount: 100}
	if _, err := w.stores.Balances.Reserve(ctx, late); !errors.Is(err, refund.ErrReleased) {
		t.Fatalf("the first attempt's late reservation: %v, want ErrReleased", err)
	}
}

// serviceAGoneChargesRefundWithARowCompletes: a refund killed after its
// success folded its entry, and before its record completed, whose
// charge then no longer reads (an unreadable row reads as none): the
// reconciler completes the record from the refund's row, never releasing
// the key of a refund the books hold, so the client's retry replays it.
func serviceAGoneChargesRefundWithARowCompletes(t *testing.T, w *world) {
	ch := w.charge(t, "pm_card_visa", 1000)
	guard := idem.NewGuard(w.stores.Store, idem.Config{Now: w.now, DefaultLease: 30 * time.Second, Protocol: protocol})
	doomed := refund.NewService(guard, w.charges, killedAfterTheSuccess{w.stores.Balances}, w.stores.Refunds, w.acq, Render, charge.Config{Now: w.now})
	if !killed(func() { doomed.Refund(ctx, in("gone-charge-with-a-row", ch, `{"amount": 300}`)) }) {
		t.Fatal("the attempt was not killed")
	}
	w.clock.Advance(reconcilable)
	blind := refund.NewService(guard, noCharges{}, w.stores.Balances, w.stores.Refunds, w.acq, Render, charge.Config{Now: w.now})
	if got, err := blind.Reconcile(ctx, pkOf("gone-charge-with-a-row")); err != nil || got != op.ReconciledCompleted {
		t.Fatalf("reconcile: %s, %v; want completed from the row", got, err)
	}
	mustAnswer(t, w.svc.Refund(ctx, in("gone-charge-with-a-row", ch, `{"amount": 300}`)), op.Replayed, 201)
	w.mustHold(t, ch, 700, 0, 300)
}

// killedAfterTheSuccess is balances whose Succeed lands, and then the
// worker dies.
type killedAfterTheSuccess struct{ refund.Balances }

func (b killedAfterTheSuccess) Succeed(c2 context.Context, chargeID string, in refund.Intent, fence int) error {
	if err := b.Balances.Succeed(c2, chargeID, in, fence); err != nil {
		return err
	}
	panic("killed between the balance and the completion")
}

// noCharges reads every charge as not found.
type noCharges struct{}

func (noCharges) Get(context.Context, string, string) charge.Result {
	return charge.Result{Outcome: op.NotFound}
}

// serviceTheLimitOfRefunds: a charge takes 150 refunds one after another
// (each folds its entry when it succeeds), leaving its balance with no
// entry; with MaxEntries refunds in flight at once, the next is a stored
// 422.
func serviceTheLimitOfRefunds(t *testing.T, w *world) {
	ch := w.charge(t, "pm_card_visa", 1000)
	for i := range 150 {
		mustAnswer(t, w.svc.Refund(ctx, in(fmt.Sprintf("small-refund-%d", i), ch, `{"amount": 1}`)), op.Executed, 201)
	}
	if bal, err := w.stores.Balances.Get(ctx, ch); err != nil || bal.Entries != 0 || len(bal.ByKey) != 0 {
		t.Fatalf("after 150 refunds: %d entries counted, %d held, %v; want none", bal.Entries, len(bal.ByKey), err)
	}
	// Refunds in flight, as other instances' reservations.
	if err := PlantInFlight(ctx, w.stores.Balances, ch, 1000, w.now().Add(time.Millisecond), refund.MaxEntries); err != nil {
		t.Fatal(err)
	}
	w.clock.Advance(time.Second)
	mustAnswer(t, w.svc.Refund(ctx, in("one-too-many", ch, `{"amount": 1}`)), op.Executed, 422)
	w.mustHold(t, ch, 1000-150-refund.MaxEntries, refund.MaxEntries, 150)
}

// serviceLookupsByIDAndKey: a refund is found by its id and by its key,
// by its own account only; a key whose answer is the bound's refusal has
// no refund.
func serviceLookupsByIDAndKey(t *testing.T, w *world) {
	ch := w.charge(t, "pm_card_visa", 1000)
	made := w.svc.Refund(ctx, in("looked-up", ch, `{"amount": 1000}`))
	mustAnswer(t, made, op.Executed, 201)
	mustAnswer(t, w.svc.Refund(ctx, in("refused-lookup", ch, `{"amount": 1}`)), op.Executed, 422)
	if got := w.svc.Get(ctx, account, made.ID); got.Outcome != op.Found || got.Row.Amount != 1000 || got.Row.ChargeID != ch {
		t.Fatalf("get: %s %+v", got.Outcome, got.Row)
	}
	if got := w.svc.ByKey(ctx, account, "looked-up"); got.Outcome != op.Found || got.Row.ID != made.ID {
		t.Fatalf("by key: %s", got.Outcome)
	}
	for name, got := range map[string]refund.Result{
		"another account's by id":  w.svc.Get(ctx, "acct_other", made.ID),
		"another account's by key": w.svc.ByKey(ctx, "acct_other", "looked-up"),
		"a refused key":            w.svc.ByKey(ctx, account, "refused-lookup"),
		"no such key":              w.svc.ByKey(ctx, account, "never-used"),
		"not a refund id":          w.svc.Get(ctx, account, ch),
	} {
		if got.Outcome != op.NotFound {
			t.Errorf("%s: %s", name, got.Outcome)
		}
	}
}

// Acquirer is an acquirer that authorizes and refunds, as
// *acquirerhttp.Client and *sandbox.Server do.
type Acquirer interface {
	charge.Acquirer
	refund.Acquirer
}

// Services are a charge service and a refund service on guard, with
// ledgers and balances in memory: for the handlers' tests, which give
// the renderers.
func Services(guard *idem.Guard, acq Acquirer, chargeAnswer charge.Renderer, refundAnswer refund.Renderer, cfg charge.Config) (*charge.Service, *refund.Service) {
	charges := chargetest.Service(guard, acq, chargeAnswer, cfg)
	return charges, refund.NewService(guard, charges, NewMemoryBalances(), NewLedger(), acq, refundAnswer, cfg)
}

package capturetest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
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
	"github.com/idempotent-payments/idempay/internal/refund/refundtest"
	"github.com/idempotent-payments/idempay/internal/sandbox"
)

// ServiceStores are one table's stores, fresh for one test: the engine's,
// the charges' rows, both sides of the balances, and the refunds', the
// captures' and the voids' rows.
type ServiceStores struct {
	Store                 idem.Store
	Charges               charge.Ledger
	Balances              Balances
	Refunds               refund.Ledger
	CaptureRows, VoidRows capture.Ledger
}

// NewServiceStoresFunc returns fresh stores for one test.
type NewServiceStoresFunc func(t *testing.T) ServiceStores

// RunServiceConformance runs every path of a capture's and a void's state
// machine (docs/design.md §8) over the stores, with the sandbox acquirer
// behind a real socket and its own bounds off, so only the service's
// bound decides: each row of the contract's table, the order of
// decisions, captures and a void at the same instant on two instances,
// dropped answers and kills resolved by a retry and by the reconciler,
// a lying acquirer held and settled, and refunds bounded by what was
// captured.
func RunServiceConformance(t *testing.T, newStores NewServiceStoresFunc) {
	for _, c := range []struct {
		name string
		run  func(t *testing.T, w *world)
	}{
		{"CapturesUpToTheAuthorization", serviceCapturesUpToTheAuthorization},
		{"AVoidReleasesTheRest", serviceAVoidReleasesTheRest},
		{"TheChargeDecidesFirst", serviceTheChargeDecidesFirst},
		{"ClosingWaitsForCapturesInFlight", serviceClosingWaitsForCapturesInFlight},
		{"WhatRemainsWaitsForCapturesInFlight", serviceWhatRemainsWaitsForCapturesInFlight},
		{"DeclinesGiveTheAmountBack", serviceDeclinesGiveTheAmountBack},
		{"AnExpiredAnswerClosesTheBalance", serviceAnExpiredAnswerClosesTheBalance},
		{"NothingSentReleasesBoth", serviceNothingSentReleasesBoth},
		{"ADroppedAnswerIsTakenOverOrReconciled", serviceADroppedAnswer},
		{"KillsBetweenTheSteps", serviceKillsBetweenTheSteps},
		{"ADeadAttemptOfNoChargeIsReleased", serviceADeadAttemptOfNoCharge},
		{"CapturesAndAVoidAtOnceOnTwoInstances", serviceCapturesAndAVoidAtOnce},
		{"ALyingAcquirerIsHeldThenSettled", serviceALyingAcquirerIsHeld},
		{"RefundsFollowTheCaptures", serviceRefundsFollowTheCaptures},
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
	account = "acct_c"
	// reconcilable is past a 30 s lease and T + skew.
	reconcilable = 30*time.Second + 7*time.Second
)

// world is a charge, a refund and a capture service on fresh stores, with
// a test clock and the sandbox on a socket.
type world struct {
	stores  ServiceStores
	clock   *idemtest.Clock
	began   time.Time
	sb      *sandbox.Server
	acq     *acquirerhttp.Client
	charges *charge.Service
	refunds *refund.Service
	svc     *capture.Service
	n       atomic.Int64
}

func newWorld(t *testing.T, newStores NewServiceStoresFunc) *world {
	w := &world{stores: newStores(t), clock: idemtest.NewClock(time.Now().Truncate(time.Millisecond)), began: time.Now(), sb: sandbox.New("")}
	w.sb.SetRefundBound(false)
	w.sb.SetCaptureBound(false)
	srv := httptest.NewServer(w.sb)
	t.Cleanup(srv.Close)
	w.acq, _ = acquirerhttp.NewClient(srv.URL, "", nil)
	w.svc = w.instance(w.acq, w.stores.Balances.Captures, w.stores.CaptureRows)
	return w
}

// instance is one more function instance: its own guard on the same
// stores, sending through acq, with captures on balances and rows.
func (w *world) instance(acq capture.Acquirer, balances capture.Balances, captureRows capture.Ledger) *capture.Service {
	guard := idem.NewGuard(w.stores.Store, idem.Config{Now: w.now, DefaultLease: 30 * time.Second, Protocol: protocol})
	cfg := charge.Config{Now: w.now}
	charges := charge.NewService(guard, w.stores.Charges, w.acq, chargetest.Render, cfg)
	if w.charges == nil {
		w.charges = charges
		w.refunds = refund.NewService(guard, charges, w.stores.Balances.Refunds, w.stores.Refunds, w.acq, refundtest.Render, cfg)
	}
	return capture.NewService(guard, charges, balances, captureRows, w.stores.VoidRows, acq, Render, cfg)
}

// with is the capture service of another instance sending through acq.
func (w *world) with(acq capture.Acquirer) *capture.Service {
	return w.instance(acq, w.stores.Balances.Captures, w.stores.CaptureRows)
}

// now is the world's time: the clock plus the wall time since it began.
func (w *world) now() time.Time { return w.clock.Now().Add(time.Since(w.began)) }

// authorize authorizes amount without its capture and returns the
// charge's id.
func (w *world) authorize(t *testing.T, amount int64) string {
	t.Helper()
	return w.chargeWith(t, fmt.Sprintf(`"amount": %d, "payment_method": "pm_card_visa", "capture": false`, amount))
}

// chargeWith makes a charge of members (amount, payment method, capture).
func (w *world) chargeWith(t *testing.T, members string) string {
	t.Helper()
	res := w.charges.Charge(ctx, charge.Input{Account: account, Keys: []string{fmt.Sprintf("charge-key-%d", w.n.Add(1))},
		Body: []byte(`{"currency": "BRL", "order_id": "o-1", ` + members + `}`)})
	if res.Outcome != op.Executed || res.ChargeID == "" {
		t.Fatalf("charge: %s", res.Outcome)
	}
	return res.ChargeID
}

func in(key, chargeID, body string) capture.Input {
	return capture.Input{Account: account, Keys: []string{key}, ChargeID: chargeID, Body: []byte(body)}
}

// pkOf is the record of key in operation.
func pkOf(operation, key string) string {
	return idem.Scope{Operation: operation, Account: account, Key: key}.PK()
}

// mustAnswer checks a result's outcome and its stored answer's status.
func mustAnswer(t *testing.T, res capture.Result, outcome op.Outcome, status int) capture.Result {
	t.Helper()
	if res.Outcome != outcome || (status != 0 && res.Response.StatusCode != status) {
		t.Fatalf("%s %d %s, want %s %d", res.Outcome, res.Response.StatusCode, res.Response.Body, outcome, status)
	}
	return res
}

// mustBeRefused checks that the charge's state refused a result for
// good: outcome's code, stored under the key (422, executed).
func mustBeRefused(t *testing.T, res capture.Result, outcome op.Outcome) capture.Result {
	t.Helper()
	if res.Outcome != op.Executed || res.Response.StatusCode != 422 || res.Refusal != capture.CaptureCodes.Of(outcome) {
		t.Fatalf("%s %d %s, want a stored %s", res.Outcome, res.Response.StatusCode, res.Response.Body, capture.CaptureCodes.Of(outcome))
	}
	return res
}

// mustHold checks the charge's capture side and that the sandbox captured
// exactly what the balance says was captured, with nothing reserved
// unless reserved says so.
func (w *world) mustHold(t *testing.T, chargeID string, capturable, reserved, captured int64, closed capture.Closed) {
	t.Helper()
	b, err := w.stores.Balances.Captures.Get(ctx, chargeID)
	if err != nil {
		t.Fatal(err)
	}
	if b.Capturable != capturable || b.Reserved != reserved || b.Captured != captured || b.Closed != closed ||
		b.Capturable+b.Reserved+b.Captured+b.Released != b.Authorized {
		t.Fatalf("the capture side: %+v; want %d capturable, %d reserved, %d captured, closed %q", b, capturable, reserved, captured, closed)
	}
	ch, err := w.stores.Charges.Get(ctx, chargeID)
	if err != nil {
		t.Fatal(err)
	}
	if got := w.sb.Captured(ch.AuthorizationID); got != captured {
		t.Fatalf("the acquirer captured %d, the balance says %d", got, captured)
	}
}

// mustFigures checks what the charge's GET says (charge.FiguresOf over
// the service's one read of the balance).
func (w *world) mustFigures(t *testing.T, chargeID, status string, captured, capturable, refunded int64) {
	t.Helper()
	got := w.charges.Get(ctx, account, chargeID)
	b, err := w.svc.Balance(ctx, chargeID)
	if err != nil || got.Outcome != op.Found {
		t.Fatalf("the charge: %s, %v", got.Outcome, err)
	}
	want := charge.Figures{Status: status, Captured: captured, Capturable: capturable, Refunded: refunded}
	if f := w.charges.Figures(got.Charge, b); f != want {
		t.Fatalf("the charge's figures %+v, want %+v", f, want)
	}
}

// mustBalance checks the charge's capture side alone, while the acquirer
// may hold what an intent in flight sent.
func (w *world) mustBalance(t *testing.T, chargeID string, capturable, reserved, captured int64) {
	t.Helper()
	b, err := w.stores.Balances.Captures.Get(ctx, chargeID)
	if err != nil {
		t.Fatal(err)
	}
	if b.Capturable != capturable || b.Reserved != reserved || b.Captured != captured {
		t.Fatalf("the capture side: %+v; want %d capturable, %d reserved, %d captured", b, capturable, reserved, captured)
	}
}

// mustBeGone checks that the key has no record in operation.
func (w *world) mustBeGone(t *testing.T, operation, key string) {
	t.Helper()
	if rec, err := w.stores.Store.Get(ctx, pkOf(operation, key), w.now()); !errors.Is(err, idem.ErrNotFound) {
		t.Fatalf("the key's record: %+v, %v; want none", rec, err)
	}
}

// Render is a capture.Renderer for the suites: the row as JSON, 201 or
// 402, or the bound's refusal as 422 with what remained.
func Render(a capture.Answer) idem.Response {
	switch {
	case a.Row == nil:
		return refundtest.AnswerJSON(a, http.StatusUnprocessableEntity)
	case !a.Row.Succeeded():
		return refundtest.AnswerJSON(a.Row, http.StatusPaymentRequired)
	}
	return refundtest.AnswerJSON(a.Row, http.StatusCreated)
}

// serviceCapturesUpToTheAuthorization: partial captures succeed while they
// fit and a replay is the first answer byte for byte; one over what
// remains is the stored 422 with what remained; a final capture of the
// rest closes the authorization, and after it nothing is capturable (the
// key released, nothing stored).
func serviceCapturesUpToTheAuthorization(t *testing.T, w *world) {
	ch := w.authorize(t, 1000)
	first := mustAnswer(t, w.svc.Capture(ctx, in("capture-1", ch, `{"amount": 600, "final": false}`)), op.Executed, 201)
	if !capture.ValidCaptureID(first.ID) || first.Refusal != "" {
		t.Fatalf("the capture's id %q, refusal %q", first.ID, first.Refusal)
	}
	replay := mustAnswer(t, w.svc.Capture(ctx, in("capture-1", ch, `{"amount": 600, "final": false}`)), op.Replayed, 201)
	if string(replay.Response.Body) != string(first.Response.Body) || replay.ID != first.ID {
		t.Fatalf("the replay differs: %s", replay.Response.Body)
	}
	mustAnswer(t, w.svc.Capture(ctx, in("capture-1", ch, `{"amount": 600}`)), op.KeyReused, 0)
	over := mustAnswer(t, w.svc.Capture(ctx, in("capture-2", ch, `{"amount": 500, "final": false}`)), op.Executed, 422)
	if over.Refusal != op.CodeCaptureExceedsAuthorization || !strings.Contains(string(over.Response.Body), `"Capturable":400`) {
		t.Fatalf("over what remains: %s %s", over.Refusal, over.Response.Body)
	}
	if r, ok := op.ResultOf(over.Response); !ok || r.Capturable == nil || *r.Capturable != 400 {
		t.Fatalf("the stored result: %+v", r)
	}
	if again := w.svc.Capture(ctx, in("capture-2", ch, `{"amount": 500, "final": false}`)); again.Outcome != op.Replayed || again.Refusal != op.CodeCaptureExceedsAuthorization {
		t.Fatalf("the refusal's replay: %s %s", again.Outcome, again.Refusal)
	}
	w.mustHold(t, ch, 400, 0, 600, "")
	w.mustFigures(t, ch, acquirer.StatusAuthorized, 600, 400, 0)
	final := mustAnswer(t, w.svc.Capture(ctx, in("capture-3", ch, `{}`)), op.Executed, 201)
	if row, err := w.stores.CaptureRows.Get(ctx, final.ID); err != nil || row.Amount != 400 || !row.Final() || row.ChargeID != ch {
		t.Fatalf("the final capture's row: %+v, %v", row, err)
	}
	w.mustHold(t, ch, 0, 0, 1000, capture.ClosedCaptured)
	w.mustFigures(t, ch, acquirer.StatusCaptured, 1000, 0, 0)
	mustBeRefused(t, w.svc.Capture(ctx, in("capture-4", ch, `{"amount": 1, "final": false}`)), op.NotCapturable)
	mustBeRefused(t, w.svc.Void(ctx, in("void-after", ch, `{}`)), op.NotCapturable)
	if r := w.svc.Capture(ctx, in("capture-4", ch, `{"amount": 1, "final": false}`)); r.Outcome != op.Replayed || r.Refusal != op.CodeChargeNotCapturable {
		t.Fatalf("a retry of the refused capture: %s %s", r.Outcome, r.Refusal)
	}
}

// serviceAVoidReleasesTheRest: after a partial capture, a void releases
// what remains, its row says how much, and nothing is captured after it.
func serviceAVoidReleasesTheRest(t *testing.T, w *world) {
	ch := w.authorize(t, 1000)
	mustAnswer(t, w.svc.Capture(ctx, in("before-the-void", ch, `{"amount": 300, "final": false}`)), op.Executed, 201)
	void := mustAnswer(t, w.svc.Void(ctx, in("the-void", ch, `{"reason": "abandoned"}`)), op.Executed, 201)
	row, err := w.stores.VoidRows.Get(ctx, void.ID)
	if err != nil || !capture.ValidVoidID(void.ID) || row.Amount != 700 || row.Kind != capture.Void || row.Reason != capture.ReasonAbandoned {
		t.Fatalf("the void's row: %+v, %v", row, err)
	}
	w.mustHold(t, ch, 0, 0, 300, capture.ClosedVoided)
	w.mustFigures(t, ch, acquirer.StatusCaptured, 300, 0, 0)
	mustBeRefused(t, w.svc.Capture(ctx, in("after-the-void", ch, `{"amount": 100, "final": false}`)), op.NotCapturable)
	mustAnswer(t, w.svc.Void(ctx, in("the-void", ch, `{"reason": "abandoned"}`)), op.Replayed, 201)
	if voids := w.sb.Voids(); len(voids) != 1 || voids[0].Amount != 700 {
		t.Fatalf("the acquirer's voids: %+v", voids)
	}
	whole := w.authorize(t, 500)
	mustAnswer(t, w.svc.Void(ctx, in("void-of-all", whole, `{}`)), op.Executed, 201)
	w.mustFigures(t, whole, charge.StatusVoided, 0, 0, 0)
}

// serviceTheChargeDecidesFirst: the door refuses a bad key, a bad body and
// an id that cannot be a charge's; then the charge: none, another
// account's, each with nothing stored and the key free; captured at
// creation, declined, past its expiry: each refused for good, the refusal
// stored and replayed.
func serviceTheChargeDecidesFirst(t *testing.T, w *world) {
	ch := w.authorize(t, 1000)
	captured := w.chargeWith(t, `"amount": 500, "payment_method": "pm_card_visa"`)
	declined := w.chargeWith(t, `"amount": 500, "payment_method": "pm_card_declined"`)
	mustAnswer(t, w.svc.Capture(ctx, capture.Input{Account: account, ChargeID: ch, Body: []byte(`{}`)}), op.KeyMissing, 0)
	mustAnswer(t, w.svc.Capture(ctx, in("bad-body", ch, `{"amount": -1}`)), op.RequestInvalid, 0)
	mustAnswer(t, w.svc.Void(ctx, in("bad-body", ch, `{"reason": "bored"}`)), op.RequestInvalid, 0)
	mustAnswer(t, w.svc.Capture(ctx, in("bad-charge-id", "ch_nope", `{}`)), op.NotFound, 0)
	mustAnswer(t, w.svc.Capture(ctx, in("no-charge", "ch_"+strings.Repeat("0", 40), `{}`)), op.NotFound, 0)
	other := capture.Input{Account: "acct_other", Keys: []string{"another-account"}, ChargeID: ch, Body: []byte(`{}`)}
	mustAnswer(t, w.svc.Capture(ctx, other), op.NotFound, 0)
	mustBeRefused(t, w.svc.Capture(ctx, in("captured-at-creation", captured, `{}`)), op.NotCapturable)
	mustBeRefused(t, w.svc.Void(ctx, in("declined-void", declined, `{}`)), op.NotCapturable)
	w.clock.Advance(sandbox.DefaultAuthorizationWindow + time.Second)
	mustBeRefused(t, w.svc.Capture(ctx, in("expired-authorization", ch, `{}`)), op.AuthorizationExpired)
	mustBeRefused(t, w.svc.Void(ctx, in("expired-authorization", ch, `{}`)), op.AuthorizationExpired)
	for _, k := range []string{"bad-body", "bad-charge-id", "no-charge"} {
		w.mustBeGone(t, capture.OperationCapture, k)
	}
	if r := w.svc.Capture(ctx, in("captured-at-creation", captured, `{}`)); r.Outcome != op.Replayed || r.Refusal != op.CodeChargeNotCapturable {
		t.Fatalf("a retry of a refused capture: %s %s", r.Outcome, r.Refusal)
	}
	if r := w.svc.Void(ctx, in("expired-authorization", ch, `{}`)); r.Outcome != op.Replayed || r.Refusal != op.CodeAuthorizationExpired {
		t.Fatalf("a retry of a refused void: %s %s", r.Outcome, r.Refusal)
	}
	if len(w.sb.Captures())+len(w.sb.Voids()) != 0 {
		t.Fatal("the acquirer was asked")
	}
}

// dropping sends, then loses the answer, while drop is set.
type dropping struct {
	capture.Acquirer
	drop atomic.Bool
}

func (d *dropping) Capture(c context.Context, key string, req acquirer.CaptureRequest) (acquirer.Capture, error) {
	c2, err := d.Acquirer.Capture(c, key, req)
	if d.drop.Load() {
		return acquirer.Capture{}, fmt.Errorf("%w: dropped", acquirer.ErrOutcomeUnknown)
	}
	return c2, err
}

func (d *dropping) Void(c context.Context, key string, req acquirer.VoidRequest) (acquirer.Void, error) {
	v, err := d.Acquirer.Void(c, key, req)
	if d.drop.Load() {
		return acquirer.Void{}, fmt.Errorf("%w: dropped", acquirer.ErrOutcomeUnknown)
	}
	return v, err
}

// serviceClosingWaitsForCapturesInFlight: with a capture in flight (its
// answer lost), a void and a final capture answer 409 CAPTURE_IN_FLIGHT
// and store nothing, while another partial capture goes on; with a void
// in flight, every capture answers 409 VOID_IN_FLIGHT. Once each is
// resolved, the retries decide again.
func serviceClosingWaitsForCapturesInFlight(t *testing.T, w *world) {
	ch := w.authorize(t, 1000)
	lossy := &dropping{Acquirer: w.acq}
	lossy.drop.Store(true)
	mustAnswer(t, w.with(lossy).Capture(ctx, in("in-flight", ch, `{"amount": 200, "final": false}`)), op.Pending, 0)
	if r := w.svc.Void(ctx, in("void-waits", ch, `{}`)); r.Outcome != op.CaptureInFlight || r.RetryAfter <= 0 ||
		capture.VoidCodes.Of(r.Outcome) != op.CodeCaptureInFlight {
		t.Fatalf("a void behind a capture: %s %v", r.Outcome, r.RetryAfter)
	}
	mustAnswer(t, w.svc.Capture(ctx, in("final-waits", ch, `{}`)), op.CaptureInFlight, 0)
	w.mustBeGone(t, capture.OperationVoid, "void-waits")
	w.mustBeGone(t, capture.OperationCapture, "final-waits")
	mustAnswer(t, w.svc.Capture(ctx, in("partial-goes-on", ch, `{"amount": 100, "final": false}`)), op.Executed, 201)
	w.mustBalance(t, ch, 700, 200, 100)
	w.clock.Advance(time.Minute)
	mustAnswer(t, w.svc.Capture(ctx, in("in-flight", ch, `{"amount": 200, "final": false}`)), op.Executed, 201)
	w.mustHold(t, ch, 700, 0, 300, "")
	// A void in flight stops every capture, and a void.
	mustAnswer(t, w.with(lossy).Void(ctx, in("void-in-flight", ch, `{}`)), op.Pending, 0)
	if r := w.svc.Capture(ctx, in("capture-waits", ch, `{"amount": 1, "final": false}`)); r.Outcome != op.VoidInFlight ||
		capture.CaptureCodes.Of(r.Outcome) != op.CodeVoidInFlight {
		t.Fatalf("a capture behind a void: %s", r.Outcome)
	}
	mustAnswer(t, w.svc.Void(ctx, in("second-void", ch, `{}`)), op.VoidInFlight, 0)
	w.clock.Advance(reconcilable)
	if got, err := w.svc.VoidOperation().Reconcile(ctx, pkOf(capture.OperationVoid, "void-in-flight")); err != nil || got != op.ReconciledCompleted {
		t.Fatalf("reconcile the void: %s, %v", got, err)
	}
	w.mustHold(t, ch, 0, 0, 300, capture.ClosedVoided)
	mustBeRefused(t, w.svc.Capture(ctx, in("capture-waits", ch, `{"amount": 1, "final": false}`)), op.NotCapturable)
}

// serviceWhatRemainsWaitsForCapturesInFlight: a capture of what remains
// while a capture in flight holds all of it is 409 CAPTURE_IN_FLIGHT with
// the key free, since the one in flight may yet give its amount back;
// once that one has succeeded, nothing remains, stored for the key.
func serviceWhatRemainsWaitsForCapturesInFlight(t *testing.T, w *world) {
	ch := w.authorize(t, 300)
	lossy := &dropping{Acquirer: w.acq}
	lossy.drop.Store(true)
	mustAnswer(t, w.with(lossy).Capture(ctx, in("holds-it-all", ch, `{"amount": 300, "final": false}`)), op.Pending, 0)
	mustAnswer(t, w.svc.Capture(ctx, in("what-remains", ch, `{"final": false}`)), op.CaptureInFlight, 0)
	w.mustBeGone(t, capture.OperationCapture, "what-remains")
	w.clock.Advance(time.Minute)
	mustAnswer(t, w.svc.Capture(ctx, in("holds-it-all", ch, `{"amount": 300, "final": false}`)), op.Executed, 201)
	mustBeRefused(t, w.svc.Capture(ctx, in("what-remains", ch, `{"final": false}`)), op.NotCapturable)
	w.mustHold(t, ch, 0, 0, 300, "")
}

// declining answers every capture and void declined with code, terms as
// asked.
type declining struct {
	capture.Acquirer
	code string
}

func (d declining) Capture(_ context.Context, key string, req acquirer.CaptureRequest) (acquirer.Capture, error) {
	return acquirer.Capture{ID: "cap_declined", Status: acquirer.CaptureDeclined, DeclineCode: d.code, AuthorizationID: req.AuthorizationID,
		Amount: req.Amount, Currency: req.Currency, Final: req.Final, IdempotencyKey: key}, nil
}

func (d declining) Void(_ context.Context, key string, req acquirer.VoidRequest) (acquirer.Void, error) {
	return acquirer.Void{ID: "void_declined", Status: acquirer.VoidDeclined, DeclineCode: d.code, AuthorizationID: req.AuthorizationID,
		Currency: req.Currency, IdempotencyKey: key}, nil
}

// serviceDeclinesGiveTheAmountBack: a declined capture is the stored 402
// CAPTURE_DECLINED with its row, and its amount is capturable again; a
// declined void is 402 VOID_DECLINED, and the charge stays capturable.
func serviceDeclinesGiveTheAmountBack(t *testing.T, w *world) {
	ch := w.authorize(t, 1000)
	no := w.with(declining{Acquirer: w.acq, code: "insufficient_funds"})
	declined := mustAnswer(t, no.Capture(ctx, in("declined-capture", ch, `{"amount": 400, "final": false}`)), op.Executed, 402)
	if declined.Refusal != op.CodeCaptureDeclined {
		t.Fatalf("refusal %q", declined.Refusal)
	}
	if row, err := w.stores.CaptureRows.Get(ctx, declined.ID); err != nil || row.Status != acquirer.CaptureDeclined || row.DeclineCode != "insufficient_funds" {
		t.Fatalf("the declined row: %+v, %v", row, err)
	}
	w.mustHold(t, ch, 1000, 0, 0, "")
	w.clock.Advance(time.Millisecond) // claimed after the declined intent, which the balance folded
	void := mustAnswer(t, no.Void(ctx, in("declined-void", ch, `{}`)), op.Executed, 402)
	if void.Refusal != op.CodeVoidDeclined {
		t.Fatalf("refusal %q", void.Refusal)
	}
	w.mustHold(t, ch, 1000, 0, 0, "")
	w.clock.Advance(time.Millisecond) // claimed after the declined intents, which the balance folded
	mustAnswer(t, w.svc.Capture(ctx, in("after-the-declines", ch, `{}`)), op.Executed, 201)
	w.mustHold(t, ch, 0, 0, 1000, capture.ClosedCaptured)
}

// serviceAnExpiredAnswerClosesTheBalance: the acquirer declines a capture
// because the authorization expired (its window shorter than ours): the
// answer is AUTHORIZATION_EXPIRED, and the balance closes as the
// sweeper's expiry would; a capture after it is AUTHORIZATION_EXPIRED too,
// before the row's own expiry.
func serviceAnExpiredAnswerClosesTheBalance(t *testing.T, w *world) {
	ch := w.authorize(t, 1000)
	res := mustAnswer(t, w.with(declining{Acquirer: w.acq, code: acquirer.DeclineAuthorizationExpired}).Capture(ctx, in("late-capture", ch, `{}`)), op.Executed, 402)
	if res.Refusal != op.CodeAuthorizationExpired {
		t.Fatalf("refusal %q", res.Refusal)
	}
	w.mustHold(t, ch, 0, 0, 0, capture.ClosedExpired)
	w.mustFigures(t, ch, charge.StatusExpired, 0, 0, 0)
	w.clock.Advance(time.Millisecond)
	mustBeRefused(t, w.svc.Capture(ctx, in("after-the-expiry", ch, `{}`)), op.AuthorizationExpired)
}

// serviceNothingSentReleasesBoth: an acquirer that cannot be reached on a
// first attempt: 503 with the key and the reservation released, for a
// capture and for a void; then both go through.
func serviceNothingSentReleasesBoth(t *testing.T, w *world) {
	ch := w.authorize(t, 1000)
	closed := httptest.NewServer(nil)
	closed.Close()
	unreachable, _ := acquirerhttp.NewClient(closed.URL, "", nil)
	down := w.with(unreachable)
	mustAnswer(t, down.Capture(ctx, in("unsent-action", ch, `{"amount": 100, "final": false}`)), op.Released, 0)
	w.clock.Advance(time.Millisecond) // claimed after the released intent, which the balance folded
	mustAnswer(t, down.Void(ctx, in("unsent-action", ch, `{}`)), op.Released, 0)
	w.mustBeGone(t, capture.OperationCapture, "unsent-action")
	w.mustBeGone(t, capture.OperationVoid, "unsent-action")
	w.mustHold(t, ch, 1000, 0, 0, "")
	w.clock.Advance(time.Millisecond)
	mustAnswer(t, w.svc.Capture(ctx, in("unsent-action", ch, `{"amount": 100, "final": false}`)), op.Executed, 201)
	w.clock.Advance(time.Millisecond)
	mustAnswer(t, w.svc.Void(ctx, in("unsent-action", ch, `{}`)), op.Executed, 201)
	w.mustHold(t, ch, 0, 0, 100, capture.ClosedVoided)
}

// serviceADroppedAnswer: the acquirer captures and the answer is lost:
// 503 pending with the amount reserved; a retry after the lease takes
// over, finds the capture and stores it (sent once); another lost answer
// is completed by the reconciler, and one the acquirer never processed is
// released by it.
func serviceADroppedAnswer(t *testing.T, w *world) {
	ch := w.authorize(t, 1000)
	w.sb.SetFaults(sandbox.Faults{DropRate: 1})
	res := mustAnswer(t, w.svc.Capture(ctx, in("dropped-answer", ch, `{"amount": 300, "final": false}`)), op.Pending, 0)
	if capture.CaptureCodes.Of(res.Outcome) != op.CodeCaptureOutcomePending {
		t.Fatalf("code %s", capture.CaptureCodes.Of(res.Outcome))
	}
	mustAnswer(t, w.svc.Capture(ctx, in("reconciled", ch, `{"amount": 200, "final": false}`)), op.Pending, 0)
	w.sb.SetFaults(sandbox.Faults{ErrorRate: 1})
	mustAnswer(t, w.svc.Capture(ctx, in("never-left", ch, `{"amount": 100, "final": false}`)), op.Pending, 0)
	w.sb.SetFaults(sandbox.Faults{})
	w.mustBalance(t, ch, 400, 600, 0)
	w.clock.Advance(reconcilable)
	taken := mustAnswer(t, w.svc.Capture(ctx, in("dropped-answer", ch, `{"amount": 300, "final": false}`)), op.Executed, 201)
	if taken.Attempt != 2 {
		t.Fatalf("attempt %d", taken.Attempt)
	}
	operation := w.svc.CaptureOperation()
	if got, err := operation.Reconcile(ctx, pkOf(capture.OperationCapture, "reconciled")); err != nil || got != op.ReconciledCompleted {
		t.Fatalf("reconcile: %s, %v", got, err)
	}
	if got, err := operation.Reconcile(ctx, pkOf(capture.OperationCapture, "never-left")); err != nil || got != op.ReconciledReleased {
		t.Fatalf("reconcile: %s, %v", got, err)
	}
	w.mustBeGone(t, capture.OperationCapture, "never-left")
	w.mustHold(t, ch, 500, 0, 500, "")
	if n := len(w.sb.Captures()); n != 2 {
		t.Fatalf("%d captures at the acquirer, want 2", n)
	}
}

// crashing stands for a process killed at one step: it panics there, and
// the test recovers, leaving the record as a kill would.
type crashing struct {
	capture.Acquirer
	beforeSend, afterSend bool
}

func (c *crashing) Capture(c2 context.Context, key string, req acquirer.CaptureRequest) (acquirer.Capture, error) {
	if c.beforeSend {
		panic("killed between the reservation and the send")
	}
	r, err := c.Acquirer.Capture(c2, key, req)
	if c.afterSend {
		panic("killed between the send and the row")
	}
	return r, err
}

// killedAfterTheRow writes the row, then dies.
type killedAfterTheRow struct{ capture.Ledger }

func (l killedAfterTheRow) Write(c2 context.Context, r capture.Row) (capture.Row, error) {
	if _, err := l.Ledger.Write(c2, r); err != nil {
		return capture.Row{}, err
	}
	panic("killed between the row and the balance")
}

func killed(f func()) (died bool) {
	defer func() { died = recover() != nil }()
	f()
	return false
}

// serviceKillsBetweenTheSteps: a kill between the reservation and the
// send, between the send and the row, and between the row and the
// balance, each resolved once by a retry and once by the reconciler: the
// acquirer captures at most once per intent, and once resolved nothing
// stays reserved.
func serviceKillsBetweenTheSteps(t *testing.T, w *world) {
	for _, kill := range []string{"before the send", "after the send", "after the row"} {
		for _, by := range []string{"retry", "reconciler"} {
			ch := w.authorize(t, 1000)
			key := fmt.Sprintf("killed-%s-%s", strings.ReplaceAll(kill, " ", "-"), by)
			acq := &crashing{Acquirer: w.acq, beforeSend: kill == "before the send", afterSend: kill == "after the send"}
			rows := w.stores.CaptureRows
			if kill == "after the row" {
				rows = killedAfterTheRow{rows}
			}
			doomed := w.instance(acq, w.stores.Balances.Captures, rows)
			if !killed(func() { doomed.Capture(ctx, in(key, ch, `{"amount": 600, "final": false}`)) }) {
				t.Fatalf("%s: the attempt was not killed", kill)
			}
			sent := kill != "before the send"
			switch by {
			case "retry":
				w.clock.Advance(time.Minute)
				mustAnswer(t, w.svc.Capture(ctx, in(key, ch, `{"amount": 600, "final": false}`)), op.Executed, 201)
				w.mustHold(t, ch, 400, 0, 600, "")
			case "reconciler":
				w.clock.Advance(reconcilable)
				got, err := w.svc.CaptureOperation().Reconcile(ctx, pkOf(capture.OperationCapture, key))
				want := op.ReconciledReleased
				if sent {
					want = op.ReconciledCompleted
				}
				if err != nil || got != want {
					t.Fatalf("%s, %s: %s, %v; want %s", kill, by, got, err, want)
				}
				if sent {
					w.mustHold(t, ch, 400, 0, 600, "")
				} else {
					w.mustHold(t, ch, 1000, 0, 0, "")
				}
			}
		}
	}
}

// serviceADeadAttemptOfNoCharge: an attempt that died between its claim
// and its charge's read, of a charge the account does not have: a retry
// leaves it in flight (pending), and the reconciler releases it (nothing
// was reserved; the re-fence folds the intent), after which the key is
// free.
func serviceADeadAttemptOfNoCharge(t *testing.T, w *world) {
	nowhere := charge.ID(strings.Repeat("0", 40))
	guard := idem.NewGuard(w.stores.Store, idem.Config{Now: w.now, DefaultLease: 30 * time.Second, Protocol: protocol})
	req, err := capture.ParseRequest(nowhere, []byte(`{}`), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := guard.Begin(ctx, idem.Scope{Operation: capture.OperationCapture, Account: account, Key: "died-before-its-charge"}, req.Canonical()); err != nil {
		t.Fatal(err)
	}
	w.clock.Advance(time.Minute)
	mustAnswer(t, w.svc.Capture(ctx, in("died-before-its-charge", nowhere, `{}`)), op.Pending, 0)
	w.clock.Advance(reconcilable)
	if got, err := w.svc.CaptureOperation().Reconcile(ctx, pkOf(capture.OperationCapture, "died-before-its-charge")); err != nil || got != op.ReconciledReleased {
		t.Fatalf("reconcile: %s, %v", got, err)
	}
	w.mustBeGone(t, capture.OperationCapture, "died-before-its-charge")
	mustAnswer(t, w.svc.Capture(ctx, in("died-before-its-charge", nowhere, `{}`)), op.NotFound, 0)
}

// serviceCapturesAndAVoidAtOnce: on an authorization of 1,000, 20
// partial captures of 100 under different keys, a void and a final
// capture, all at once on two instances (each answered 201, 409, 422
// over what remained, 422 not capturable once closed, or 503 when another
// action's end passed every try of its reservation): nothing is captured
// beyond the authorization, a succeeded void or final capture closed it,
// none was captured after the closing (the acquirer's captures add up to
// the balance's), and nothing is left reserved.
func serviceCapturesAndAVoidAtOnce(t *testing.T, w *world) {
	ch := w.authorize(t, 1000)
	other := w.with(w.acq)
	var wg sync.WaitGroup
	results := make([]capture.Result, 22)
	for i := range results {
		svc := w.svc
		if i%2 == 1 {
			svc = other
		}
		wg.Go(func() {
			switch i {
			case 20:
				results[i] = svc.Void(ctx, in("race-the-void", ch, `{}`))
			case 21:
				results[i] = svc.Capture(ctx, in("race-the-final", ch, `{"amount": 100}`))
			default:
				results[i] = svc.Capture(ctx, in(fmt.Sprintf("race-capture-%d", i), ch, `{"amount": 100, "final": false}`))
			}
		})
	}
	wg.Wait()
	var captured int64
	for i, r := range results {
		switch r.Outcome {
		case op.Executed:
			switch {
			case r.Refusal == op.CodeCaptureExceedsAuthorization, r.Refusal == op.CodeChargeNotCapturable: // the others held all that remained, or closed it
			case r.Response.StatusCode != 201:
				t.Fatalf("%d: %d %s", i, r.Response.StatusCode, r.Response.Body)
			case i != 20:
				captured += 100
			}
		case op.CaptureInFlight, op.VoidInFlight, op.Unavailable: // Unavailable: a stamp passed on every try
		default:
			t.Fatalf("%d: %s", i, r.Outcome)
		}
	}
	b, err := w.stores.Balances.Captures.Get(ctx, ch)
	if err != nil {
		t.Fatal(err)
	}
	if b.Captured != captured || b.Captured > 1000 || b.Reserved != 0 || b.Capturable+b.Captured+b.Released != 1000 {
		t.Fatalf("the balance %+v; %d captured by the answers", b, captured)
	}
	auth, _ := w.stores.Charges.Get(ctx, ch)
	if got := w.sb.Captured(auth.AuthorizationID); got != b.Captured {
		t.Fatalf("the acquirer captured %d, the balance %d", got, b.Captured)
	}
	if void := results[20]; void.Outcome == op.Executed && void.Response.StatusCode == 201 && (b.Closed != capture.ClosedVoided || b.Released != 1000-b.Captured) {
		t.Fatalf("a succeeded void, and the balance %+v", b)
	}
	if final := results[21]; final.Outcome == op.Executed && final.Response.StatusCode == 201 && (b.Closed != capture.ClosedCaptured || b.Released != 1000-b.Captured) {
		t.Fatalf("a succeeded final capture, and the balance %+v", b)
	}
	// Nothing was captured after the closing: every capture the acquirer
	// made is one the balance counts.
	var atAcquirer int64
	for _, c := range w.sb.Captures() {
		if c.AuthorizationID == auth.AuthorizationID && c.Status == acquirer.CaptureSucceeded {
			atAcquirer += c.Amount
		}
	}
	if atAcquirer != b.Captured {
		t.Fatalf("the acquirer's captures add up to %d, the balance's %d", atAcquirer, b.Captured)
	}
}

// tenfold captures ten times what it is asked, and says so.
type tenfold struct{ capture.Acquirer }

func (l tenfold) Capture(c context.Context, key string, req acquirer.CaptureRequest) (acquirer.Capture, error) {
	req.Amount *= 10
	return l.Acquirer.Capture(c, key, req)
}

// serviceALyingAcquirerIsHeld: the acquirer captures another amount than
// asked: the record is held with the reservation kept and no row; a
// retry answers Held, the reconciler leaves it; an operator's accept of
// the terms shown is refused (the reservation does not hold them), and a
// void-confirmed gives the reservation back.
func serviceALyingAcquirerIsHeld(t *testing.T, w *world) {
	ch := w.authorize(t, 1000)
	liar := w.with(tenfold{w.acq})
	res := mustAnswer(t, liar.Capture(ctx, in("lied-to-capture", ch, `{"amount": 50, "final": false}`)), op.Mismatch, 0)
	if capture.CaptureCodes.Of(res.Outcome) != op.CodeCaptureOutcomePending {
		t.Fatalf("code %s", capture.CaptureCodes.Of(res.Outcome))
	}
	pk := pkOf(capture.OperationCapture, "lied-to-capture")
	rec, err := w.stores.Store.Get(ctx, pk, w.now())
	if err != nil || !rec.Held() || rec.Hold.Reason != acquirer.ReasonAmount {
		t.Fatalf("record %+v, %v", rec, err)
	}
	if _, err := w.stores.CaptureRows.Get(ctx, capture.CaptureID(rec.DownstreamKey)); !errors.Is(err, capture.ErrNoRow) {
		t.Fatalf("a held capture has a row: %v", err)
	}
	b, _ := w.stores.Balances.Captures.Get(ctx, ch)
	if b.Reserved != 50 || b.Held != 1 {
		t.Fatalf("the balance %+v; want 50 reserved, by one held entry", b)
	}
	mustAnswer(t, w.svc.Capture(ctx, in("lied-to-capture", ch, `{"amount": 50, "final": false}`)), op.Held, 0)
	// A void or a final capture behind it waits for the operator: told so,
	// with a held record's delay, nothing stored; a partial capture goes on.
	for _, r := range []capture.Result{w.svc.Void(ctx, in("void-behind-held", ch, `{}`)), w.svc.Capture(ctx, in("final-behind-held", ch, `{}`))} {
		if r.Outcome != op.CaptureHeld || r.RetryAfter != charge.DefaultHeldRetryAfter || capture.VoidCodes.Of(r.Outcome) != op.CodeCaptureInFlight {
			t.Fatalf("behind the held capture: %s after %s", r.Outcome, r.RetryAfter)
		}
	}
	if _, err := w.stores.Store.Get(ctx, pkOf(capture.OperationVoid, "void-behind-held"), w.now()); !errors.Is(err, idem.ErrNotFound) {
		t.Fatalf("the void behind the held capture kept its key: %v", err)
	}
	mustAnswer(t, w.svc.Capture(ctx, in("partial-beside-held", ch, `{"amount": 10, "final": false}`)), op.Executed, 201)
	// Once captures take the rest, a capture of what remains finds only
	// the held one's reservation: told it waits for the operator, from
	// the refused write alone, its key released.
	mustAnswer(t, w.svc.Capture(ctx, in("the-rest-beside-held", ch, `{"amount": 940, "final": false}`)), op.Executed, 201)
	if r := w.svc.Capture(ctx, in("what-remains-behind-held", ch, `{"final": false}`)); r.Outcome != op.CaptureHeld || r.RetryAfter != charge.DefaultHeldRetryAfter {
		t.Fatalf("a capture of what remains behind the held capture: %s after %s", r.Outcome, r.RetryAfter)
	}
	operation := w.svc.CaptureOperation()
	terms, err := operation.Peek(ctx, pk)
	if !errors.Is(err, acquirer.ErrMismatch) || terms.Amount != 500 {
		t.Fatalf("peek: %+v, %v", terms, err)
	}
	w.clock.Advance(time.Hour)
	if got, err := operation.Reconcile(ctx, pk); err != nil || got != op.ReconciledHeld {
		t.Fatalf("reconcile: %s, %v", got, err)
	}
	d := op.Decision{PK: pk, Instance: rec.DownstreamKey, Action: idem.SettleAccept, By: "ops@example.com", ID: "decision-1", Terms: terms}
	if st, err := operation.Settle(ctx, d); err == nil || st.TookEffect() {
		t.Fatalf("an accept of what the reservation does not hold: %+v, %v", st, err)
	}
	d.Action, d.ID = idem.SettleVoidConfirmed, "decision-2"
	w.clock.Advance(reconcilable) // the accept's take-over ended a lease
	if st, err := operation.Settle(ctx, d); err != nil || !st.TookEffect() {
		t.Fatalf("void-confirmed: %+v, %v", st, err)
	}
	b, _ = w.stores.Balances.Captures.Get(ctx, ch)
	if b.Reserved != 0 || b.Capturable != 50 || b.Held != 0 {
		t.Fatalf("the balance after the void-confirmed: %+v", b)
	}
}

// serviceRefundsFollowTheCaptures: an authorization's refunds are bounded
// by what its captures took, and refunds and later partial captures
// interleave.
func serviceRefundsFollowTheCaptures(t *testing.T, w *world) {
	ch := w.authorize(t, 1000)
	refundIn := func(key, body string) refund.Input {
		return refund.Input{Account: account, Keys: []string{key}, ChargeID: ch, Body: []byte(body)}
	}
	if r := w.refunds.Refund(ctx, refundIn("refund-early", `{"amount": 100}`)); r.Outcome != op.Executed || r.Refusal != op.CodeRefundExceedsCharge {
		t.Fatalf("a refund before any capture: %s %s", r.Outcome, r.Refusal)
	}
	mustAnswer(t, w.svc.Capture(ctx, in("capture-a", ch, `{"amount": 400, "final": false}`)), op.Executed, 201)
	if r := w.refunds.Refund(ctx, refundIn("refund-a", `{"amount": 300}`)); r.Outcome != op.Executed || r.Response.StatusCode != 201 {
		t.Fatalf("a refund of the capture: %s %d", r.Outcome, r.Response.StatusCode)
	}
	mustAnswer(t, w.svc.Capture(ctx, in("capture-b", ch, `{"amount": 200, "final": false}`)), op.Executed, 201)
	if r := w.refunds.Refund(ctx, refundIn("refund-b", `{"amount": 400}`)); r.Outcome != op.Executed || r.Refusal != op.CodeRefundExceedsCharge {
		t.Fatalf("a refund over what was captured: %s %s", r.Outcome, r.Refusal)
	}
	if r := w.refunds.Refund(ctx, refundIn("refund-c", `{}`)); r.Outcome != op.Executed || r.Response.StatusCode != 201 {
		t.Fatalf("the rest: %s %d", r.Outcome, r.Response.StatusCode)
	}
	rb, _ := w.stores.Balances.Refunds.Get(ctx, ch)
	if rb.Captured != 600 || rb.Refunded != 600 || rb.Remaining != 0 {
		t.Fatalf("the refund side %+v", rb)
	}
	w.mustFigures(t, ch, acquirer.StatusAuthorized, 600, 400, 600)
	w.mustHold(t, ch, 400, 0, 600, "")
}

// serviceLookupsByIDAndKey: a capture and a void are found by their ids
// and keys, by their account only; a refused capture's key has no row.
func serviceLookupsByIDAndKey(t *testing.T, w *world) {
	ch := w.authorize(t, 1000)
	c := mustAnswer(t, w.svc.Capture(ctx, in("look-capture", ch, `{"amount": 100, "final": false}`)), op.Executed, 201)
	v := mustAnswer(t, w.svc.Void(ctx, in("look-void", ch, `{}`)), op.Executed, 201)
	if got := w.svc.GetCapture(ctx, account, c.ID); got.Outcome != op.Found || got.Row.ID != c.ID || got.Row.Amount != 100 {
		t.Fatalf("get capture: %s %+v", got.Outcome, got.Row)
	}
	if got := w.svc.GetVoid(ctx, account, v.ID); got.Outcome != op.Found || got.Row.Amount != 900 {
		t.Fatalf("get void: %s %+v", got.Outcome, got.Row)
	}
	if got := w.svc.CaptureByKey(ctx, account, "look-capture"); got.Outcome != op.Found || got.Row.ID != c.ID {
		t.Fatalf("capture by key: %s", got.Outcome)
	}
	if got := w.svc.VoidByKey(ctx, account, "look-void"); got.Outcome != op.Found || got.Row.ID != v.ID {
		t.Fatalf("void by key: %s", got.Outcome)
	}
	for _, got := range []capture.Result{
		w.svc.GetCapture(ctx, "acct_other", c.ID), w.svc.GetVoid(ctx, "acct_other", v.ID),
		w.svc.GetCapture(ctx, account, v.ID), w.svc.GetVoid(ctx, account, c.ID),
		w.svc.CaptureByKey(ctx, "acct_other", "look-capture"), w.svc.CaptureByKey(ctx, account, "look-void"),
	} {
		if got.Outcome != op.NotFound {
			t.Fatalf("another account's, or the other operation's: %s", got.Outcome)
		}
	}
}

// Acquirer is what the three services send to: charges, refunds, captures
// and voids.
type Acquirer interface {
	refundtest.Acquirer
	capture.Acquirer
}

// Services are a charge, a refund and a capture service on guard, with
// ledgers and one set of balances in memory (so refunds follow captures):
// for the handlers' tests, which give the renderers.
func Services(guard *idem.Guard, acq Acquirer, chargeAnswer charge.Renderer, refundAnswer refund.Renderer, captureAnswer capture.Renderer,
	cfg charge.Config) (*charge.Service, *refund.Service, *capture.Service) {
	charges := chargetest.Service(guard, acq, chargeAnswer, cfg)
	balances := refundtest.NewMemoryBalances()
	return charges, refund.NewService(guard, charges, balances, refundtest.NewLedger(), acq, refundAnswer, cfg),
		capture.NewService(guard, charges, balances.Captures(), NewLedger(), NewLedger(), acq, captureAnswer, cfg)
}

package operator_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/acquirer/acquirerhttp"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/charge/chargetest"
	"github.com/idempotent-payments/idempay/internal/httpapi"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/idem/idemtest"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/operator"
	"github.com/idempotent-payments/idempay/internal/refund"
	"github.com/idempotent-payments/idempay/internal/refund/refundtest"
	"github.com/idempotent-payments/idempay/internal/sandbox"
)

// ana is the caller testdata/function-url.json names: the operator role's
// session that Lambda authenticated.
const ana = "arn:aws:sts::123456789012:assumed-role/idempay-prod-operator/ana"

// world is a handler on a memory store, the sandbox acquirer in process
// and a clock of the test's.
type world struct {
	h      *operator.Handler
	guard  *idem.Guard
	clock  *idemtest.Clock
	acq    *acquirerhttp.Client
	sb     *sandbox.Server
	ledger charge.Ledger
}

func newWorld(t *testing.T) world {
	t.Helper()
	clock := idemtest.NewClock(time.Now().Truncate(time.Millisecond))
	guard := idem.NewGuard(idemtest.NewMemoryStore(), idem.Config{Now: clock.Now, DefaultLease: time.Minute, Protocol: idem.Protocol{Downstream: "sandbox"}})
	sb := sandbox.New("")
	acq, err := acquirerhttp.NewClient("http://sandbox.invalid", "", sandbox.InProcess(sb))
	if err != nil {
		t.Fatal(err)
	}
	ledger := chargetest.NewLedger()
	svc := chargetest.ServiceWith(guard, ledger, acq, httpapi.Render, charge.Config{Now: clock.Now})
	refunds := refund.NewService(guard, svc, refundtest.NewMemoryBalances(), refundtest.NewLedger(), acq, httpapi.RenderRefund, charge.Config{Now: clock.Now})
	h := &operator.Handler{Operations: op.NewRegistry(svc.Operation(), refunds.Operation()), Lookup: guard.Lookup, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	return world{h: h, guard: guard, clock: clock, acq: acq, sb: sb, ledger: ledger}
}

var scope = idem.Scope{Operation: charge.Operation, Account: "acct_ops", Key: "order-123-attempt-1"}

// held makes scope's record held after the acquirer authorized ten times
// the amount asked under its downstream key, and returns that key.
func (w world) held(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	req, err := charge.ParseRequest([]byte(`{"amount": 100, "currency": "BRL", "order_id": "1", "payment_method": "pm_card_visa"}`), 0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := w.guard.Begin(ctx, scope, req.Canonical())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.acq.Authorize(ctx, c.Lease.DownstreamKey(), acquirer.Request{Amount: 1000, Currency: "BRL", PaymentMethod: "pm_card_visa", OrderID: "1"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Lease.HoldForOperator(ctx, acquirer.ReasonAmount, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	return c.Lease.DownstreamKey()
}

// call is the testdata event with body, and the handler's answer.
func (w world) call(t *testing.T, body string) (int, operator.Answer) {
	t.Helper()
	b, err := os.ReadFile("testdata/function-url.json")
	if err != nil {
		t.Fatal(err)
	}
	var ev events.LambdaFunctionURLRequest
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	ev.Body = body
	return w.answer(t, ev)
}

func (w world) answer(t *testing.T, ev events.LambdaFunctionURLRequest) (int, operator.Answer) {
	t.Helper()
	resp, err := w.h.Handle(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	a, err := operator.DecodeAnswer([]byte(resp.Body))
	if err != nil || resp.Headers["Content-Type"] != "application/json" {
		t.Fatalf("answer %d %q: %v", resp.StatusCode, resp.Body, err)
	}
	return resp.StatusCode, a
}

func request(t *testing.T, r operator.Request) string {
	t.Helper()
	b, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestLookThenAccept: the look of testdata's event shows what the acquirer
// says and writes nothing; an accept of those terms completes the record
// with them, records the caller Lambda authenticated as who decided, and
// a retry of the same decision reads back that it took effect.
func TestLookThenAccept(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	intent := w.held(t)
	b, _ := os.ReadFile("testdata/function-url.json")
	var ev events.LambdaFunctionURLRequest
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	ev.Body = strings.Replace(ev.Body, "INTENT", intent, 1)
	status, look := w.answer(t, ev)
	if status != 200 || look.Outcome != operator.OutcomeLooked || look.By != ana || look.Terms == nil || look.Terms.Amount != 1000 || look.TookEffect {
		t.Fatalf("look: %d %+v", status, look)
	}
	if rec, _ := w.guard.Lookup(context.Background(), scope.PK()); rec == nil || !rec.Held() || rec.Attempt != 1 {
		t.Fatal("the look wrote")
	}
	w.clock.Advance(time.Second)
	accept := operator.Request{Action: operator.Accept, Record: scope.PK(), Intent: intent, Decision: "dec-accept-0001", Terms: look.Terms}
	status, a := w.call(t, request(t, accept))
	if status != 200 || a.Outcome != operator.OutcomeCompletedByThis || !a.TookEffect || a.Settlement == nil || a.Settlement.By != ana ||
		a.Settlement.Decision != "dec-accept-0001" || a.Terms == nil || a.Terms.Amount != 1000 {
		t.Fatalf("accept: %d %+v", status, a)
	}
	if status, again := w.call(t, request(t, accept)); status != 200 || again.Outcome != operator.OutcomeCompletedByThis || !again.TookEffect {
		t.Fatalf("the same accept retried: %d %+v", status, again)
	}
	other := accept
	other.Decision = "dec-accept-0002"
	if _, a := w.call(t, request(t, other)); a.Outcome != operator.OutcomeCompletedByAnother || a.TookEffect {
		t.Fatalf("another accept: %+v", a)
	}
}

// TestVoidConfirmed: a void waits out T + skew on the function's clock,
// then releases the record, and the release marker names the caller and
// the decision.
func TestVoidConfirmed(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	intent := w.held(t)
	void := operator.Request{Action: operator.VoidConfirmed, Record: scope.PK(), Intent: intent, Decision: "dec-void-0001"}
	if _, a := w.call(t, request(t, void)); a.Outcome != operator.OutcomeStillHeld || a.TookEffect || !strings.Contains(a.Detail, "too early") {
		t.Fatalf("a void before the wait-out: %+v", a)
	}
	w.clock.Advance(7 * time.Second)
	_, a := w.call(t, request(t, void))
	if a.Outcome != operator.OutcomeReleasedByThis || !a.TookEffect || a.Settlement == nil || a.Settlement.By != ana {
		t.Fatalf("void: %+v", a)
	}
	m, err := w.guard.ReleaseMarker(context.Background(), intent)
	if err != nil || m.Decision.By != ana || m.Decision.Decision != "dec-void-0001" {
		t.Fatalf("the release marker: %+v, %v", m, err)
	}
	if _, a := w.call(t, request(t, void)); a.Outcome != operator.OutcomeReleasedByThis || !a.TookEffect {
		t.Fatalf("the same void retried: %+v", a)
	}
}

// TestReconcileAndRelease: a record left in flight, its lease ended more
// than T + skew ago, is released when the acquirer has nothing; one whose
// charge the acquirer has is completed, and release says it did not
// release.
func TestReconcileAndRelease(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	req, _ := charge.ParseRequest([]byte(`{"amount": 100, "currency": "BRL", "order_id": "1", "payment_method": "pm_card_visa"}`), 0)
	for i, tc := range []struct {
		action, want  string
		charged, took bool
	}{
		{operator.Release, operator.OutcomeReleased, false, true},
		{operator.Release, operator.OutcomeCompleted, true, false},
		{operator.Reconcile, operator.OutcomeCompleted, true, true},
	} {
		s := idem.Scope{Operation: charge.Operation, Account: "acct_ops", Key: "stuck-key-" + string(rune('a'+i))}
		c, err := w.guard.Begin(ctx, s, req.Canonical())
		if err != nil {
			t.Fatal(err)
		}
		if tc.charged {
			if _, err := w.acq.Authorize(ctx, c.Lease.DownstreamKey(), acquirer.Request{Amount: 100, Currency: "BRL", PaymentMethod: "pm_card_visa", OrderID: "1"}); err != nil {
				t.Fatal(err)
			}
		}
		r := operator.Request{Action: tc.action, Record: s.PK(), Intent: c.Lease.DownstreamKey(), Decision: "dec-stuck-000" + string(rune('a'+i))}
		if _, a := w.call(t, request(t, r)); a.Outcome != operator.OutcomeNothingToDo || a.TookEffect {
			t.Fatalf("%s of a live lease: %+v", tc.action, a)
		}
		w.clock.Advance(2 * time.Minute)
		_, a := w.call(t, request(t, r))
		if a.Outcome != tc.want || a.TookEffect != tc.took || (tc.charged && (a.Terms == nil || a.Terms.Amount != 100)) {
			t.Fatalf("%s, charged %v: %+v", tc.action, tc.charged, a)
		}
		if _, again := w.call(t, request(t, r)); tc.want == operator.OutcomeReleased && again.Outcome != operator.OutcomeGone {
			t.Fatalf("%s again, of a released record: %+v", tc.action, again)
		}
	}
}

// TestRefusals: an invocation with no IAM caller (a URL without AWS_IAM
// auth) is 403, a request that is not a POST of one valid request is 400,
// and neither writes anything.
func TestRefusals(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	intent := w.held(t)
	w.clock.Advance(time.Minute)
	b, _ := os.ReadFile("testdata/function-url.json")
	var anonymous events.LambdaFunctionURLRequest
	_ = json.Unmarshal(b, &anonymous)
	anonymous.RequestContext.Authorizer = nil
	anonymous.Body = request(t, operator.Request{Action: operator.VoidConfirmed, Record: scope.PK(), Intent: intent, Decision: "dec-anon-0001"})
	if status, a := w.answer(t, anonymous); status != 403 || a.Outcome != operator.OutcomeInvalid {
		t.Fatalf("no IAM caller: %d %+v", status, a)
	}
	get := anonymous
	get.RequestContext.Authorizer = &events.LambdaFunctionURLRequestContextAuthorizerDescription{IAM: &events.LambdaFunctionURLRequestContextAuthorizerIAMDescription{UserARN: ana}}
	get.RequestContext.HTTP.Method = "GET"
	if status, _ := w.answer(t, get); status != 400 {
		t.Fatalf("a GET: %d", status)
	}
	for _, body := range []string{
		``, `{}`, `[]`, `{"action":"void_confirmed"}`,
		`{"action":"void_confirmed","record":"` + scope.PK() + `","intent":"` + intent + `"}`, // no decision
		`{"action":"void_confirmed","record":"` + scope.PK() + `","intent":"` + intent + `","decision":"dec-dup-0001","decision":"dec-dup-0002"}`,
		`{"action":"void_confirmed","record":"` + scope.PK() + `","intent":"` + intent + `","decision":"dec-case-0001","By":"someone"}`,
		`{"action":"void_confirmed","record":"` + scope.PK() + `","intent":"` + intent + `","decision":"dec-by-0001","by":"arn:aws:iam::1:role/x"}`,
		`{"action":"accept","record":"` + scope.PK() + `","intent":"` + intent + `","decision":"dec-noterms-01"}`,
		`{"action":"look","record":"` + scope.PK() + `","intent":"` + intent + `","decision":"dec-look-0001"}`,
		`{"action":"purge","record":"` + scope.PK() + `","intent":"` + intent + `","decision":"dec-purge-001"}`,
		`{"action":"look","record":"CHARGE#ch_1","intent":"` + intent + `"}`,
	} {
		if status, a := w.call(t, body); status != 400 || a.Outcome != operator.OutcomeInvalid || a.By != ana {
			t.Errorf("%s: %d %+v, want 400 invalid", body, status, a)
		}
	}
	if rec, _ := w.guard.Lookup(context.Background(), scope.PK()); rec == nil || !rec.Held() || rec.Attempt != 1 {
		t.Fatal("a refused request wrote")
	}
	gone := operator.Request{Action: operator.VoidConfirmed, Record: scope.PK(), Intent: "another-intent", Decision: "dec-gone-0001"}
	if _, a := w.call(t, request(t, gone)); a.Outcome != operator.OutcomeGone || a.TookEffect {
		t.Fatalf("a void of another intent of the key: %+v", a)
	}
}

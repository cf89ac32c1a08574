package consumer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/acquirer/acquirerhttp"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/charge/chargetest"
	"github.com/idempotent-payments/idempay/internal/command"
	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/event"
	"github.com/idempotent-payments/idempay/internal/event/eventtest"
	"github.com/idempotent-payments/idempay/internal/httpapi"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/idem/idemtest"
	"github.com/idempotent-payments/idempay/internal/obs"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/refund"
	"github.com/idempotent-payments/idempay/internal/refund/refundtest"
	"github.com/idempotent-payments/idempay/internal/sandbox"
)

// deadLetters records what was dead-lettered; the SQS path proper is tested
// against the emulator in internal/systemtest.
type deadLetters struct {
	mu    sync.Mutex
	codes []string
}

func (d *deadLetters) Send(_ context.Context, _ string, attrs map[string]string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.codes = append(d.codes, attrs["reject_code"])
	return nil
}

// testQueue is the eventSourceARN of testdata/batch.json.
const testQueue = "arn:aws:sqs:sa-east-1:123456789012:charge-commands"

type noDelay struct{}

func (noDelay) Delay(context.Context, string, time.Duration) error { return nil }

func TestHandleSQSEvent(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("testdata/batch.json")
	if err != nil {
		t.Fatal(err)
	}
	var ev events.SQSEvent
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	sb := sandbox.New("")
	store := idemtest.NewMemoryStore()
	guard := idem.NewGuard(store, idem.Config{})
	dl := &deadLetters{}
	ledger := chargetest.NewLedger()
	h := &Handler{Service: chargetest.ServiceWith(guard, ledger, sb, httpapi.Render, charge.Config{}), DeadLetters: dl,
		Inboxes:     map[string]Inbox{testQueue: {Inbox: command.Inbox{ARN: testQueue, URL: "u", Producer: "orders", Accounts: []string{"acct_7Hq2"}}, Queue: noDelay{}}},
		Concurrency: 2, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	resp, err := h.Handle(context.Background(), ev)
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("resp %+v, %v; want every message settled", resp, err)
	}
	if len(sb.Authorizations()) != 1 {
		t.Fatalf("%d authorizations", len(sb.Authorizations()))
	}
	if len(dl.codes) != 2 {
		t.Fatalf("dead letters %v; want the keyless command and the malformed one", dl.codes)
	}
	if rows := ledger.Rows(); len(rows) != 1 || rows[0].Source != event.SourceQueue("orders") || rows[0].IdempotencyKey != "order-123-attempt" {
		t.Fatalf("ledger rows %+v; want the command's, from the orders queue, with its key", rows)
	}
	// Redelivery of the same batch: a replay, nothing new.
	if resp, _ := h.Handle(context.Background(), ev); len(resp.BatchItemFailures) != 0 || len(sb.Authorizations()) != 1 {
		t.Fatalf("redelivery: %+v, %d authorizations", resp, len(sb.Authorizations()))
	}
}

// TestEveryOutcomeHasAVerdict: the table knows every outcome of a door
// (a lookup's Found is not a door's), and refuses exactly the final
// refusals of the input and of what it acts on, each with the outcome's
// code in its operation, which HTTP answers too; a held call is deleted
// with its verdict.
func TestEveryOutcomeHasAVerdict(t *testing.T) {
	t.Parallel()
	for _, o := range op.Outcomes() {
		if _, ok := verdicts[o]; !ok && o != op.Found {
			t.Errorf("no verdict for %s", o)
		}
		for _, codes := range []op.Codes{charge.Codes, refund.Codes} {
			v := verdictOf(call{codes: codes, outcome: o})
			final := o.Refused() || o == op.NotFound || o == op.NotRefundable || o == op.NotCapturable || o == op.AuthorizationExpired
			if final && v.rejectCode != string(codes.Of(o)) || !final && v.rejectCode != "" {
				t.Errorf("%s: reject code %q, its code %q", o, v.rejectCode, codes.Of(o))
			}
		}
	}
	for _, o := range []op.Outcome{op.Mismatch, op.Held, op.ChargeHeld} {
		if v := verdictOf(call{codes: refund.Codes, outcome: o}); v.retry || v.rejectCode != "" {
			t.Errorf("%s: %+v; a held refund or charge is deleted with its verdict", o, v)
		}
	}
}

// TestProducerBinding: a command is taken only from a queue the consumer
// reads, only of the type that queue carries, and only for an account its
// producer may charge. Every refusal is dead-lettered
// with PRODUCER_NOT_ALLOWED and charges nothing; the permitted command
// charges.
func TestProducerBinding(t *testing.T) {
	t.Parallel()
	const orders, billing, reconcile = "arn:q:orders", "arn:q:billing", "arn:q:reconcile"
	inboxes := map[string]Inbox{
		orders:    {Inbox: command.Inbox{ARN: orders, URL: "u1", Producer: "orders", Accounts: []string{"acct_orders"}}, Queue: noDelay{}},
		billing:   {Inbox: command.Inbox{ARN: billing, URL: "u2", Producer: "billing", Accounts: []string{"acct_billing", "acct_shared"}}, Queue: noDelay{}},
		reconcile: {Inbox: command.Inbox{ARN: reconcile, URL: "u3", Reconcile: true}, Queue: noDelay{}},
	}
	body := func(account, key string) string {
		b, err := command.Charge(account, key, []byte(`{"amount": 100, "currency": "BRL", "order_id": "1", "payment_method": "pm_card_visa"}`)).Encode()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	pk := idem.Scope{Operation: charge.Operation, Account: "acct_orders", Key: "binding-key-1"}.PK()
	reconcileBody, _ := command.Reconcile(pk).Encode()
	for _, tc := range []struct {
		name, queue, body string
		charged           bool
	}{
		{"own account", orders, body("acct_orders", "binding-key-1"), true},
		{"foreign account", orders, body("acct_billing", "binding-key-2"), false},
		{"second producer's own account", billing, body("acct_shared", "binding-key-3"), true},
		{"unknown queue", "arn:q:elsewhere", body("acct_orders", "binding-key-4"), false},
		{"no source at all", "", body("acct_orders", "binding-key-5"), false},
		{"a charge on the reconcile queue", reconcile, body("acct_orders", "binding-key-6"), false},
		{"a reconcile from a producer", orders, reconcileBody, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sb := sandbox.New("")
			store := idemtest.NewMemoryStore()
			dl := &deadLetters{}
			h := &Handler{Service: chargetest.Service(idem.NewGuard(store, idem.Config{}), sb, httpapi.Render, charge.Config{}),
				Inboxes: inboxes, DeadLetters: dl, Concurrency: 1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
			resp, _ := h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m1", Body: tc.body, EventSourceARN: tc.queue}}})
			if len(resp.BatchItemFailures) != 0 {
				t.Fatalf("failures %+v", resp.BatchItemFailures)
			}
			if got := len(sb.Authorizations()) == 1; got != tc.charged {
				t.Fatalf("charged %v, want %v", got, tc.charged)
			}
			if tc.charged {
				if len(dl.codes) != 0 {
					t.Fatalf("dead letters %v", dl.codes)
				}
				return
			}
			if len(dl.codes) != 1 || dl.codes[0] != "PRODUCER_NOT_ALLOWED" {
				t.Fatalf("dead letters %v; want PRODUCER_NOT_ALLOWED", dl.codes)
			}
			for _, account := range []string{"acct_orders", "acct_billing", "acct_shared"} {
				for i := 1; i <= 6; i++ {
					pk := idem.Scope{Operation: charge.Operation, Account: account, Key: fmt.Sprintf("binding-key-%d", i)}.PK()
					if _, err := store.Get(context.Background(), pk, time.Now()); err == nil {
						t.Fatalf("a record was written for a refused command (%s)", idem.Ref(pk))
					}
				}
			}
		})
	}
}

// delays records each delay asked for.
type delays struct {
	mu  sync.Mutex
	got []time.Duration
}

func (d *delays) Delay(_ context.Context, _ string, by time.Duration) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.got = append(d.got, by)
	return nil
}

// TestInFlightHiddenUntilTheLeaseIsOver: a command whose key another
// attempt holds is kept, and hidden for the lease's time left plus T and
// the skew, not for the client's Retry-After.
func TestInFlightHiddenUntilTheLeaseIsOver(t *testing.T) {
	t.Parallel()
	clock := idemtest.NewClock(time.Unix(1_800_000_000, 0))
	store := idemtest.NewMemoryStore()
	guard := idem.NewGuard(store, idem.Config{Now: clock.Now, DefaultLease: 40 * time.Second})
	body := []byte(`{"amount": 100, "currency": "BRL", "order_id": "1", "payment_method": "pm_card_visa"}`)
	req, _ := charge.ParseRequest(body, 0)
	if _, err := guard.Begin(context.Background(), idem.Scope{Operation: charge.Operation, Account: "acct_7Hq2", Key: "held-elsewhere"}, req.Canonical()); err != nil {
		t.Fatal(err)
	}
	clock.Advance(15 * time.Second)
	d := &delays{}
	h := &Handler{Service: chargetest.Service(guard, sandbox.New(""), httpapi.Render, charge.Config{Now: clock.Now}),
		Inboxes:     map[string]Inbox{testQueue: {Inbox: command.Inbox{ARN: testQueue, URL: "u", Producer: "orders", Accounts: []string{"acct_7Hq2"}}, Queue: d}},
		DeadLetters: &deadLetters{}, Concurrency: 1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	msg, _ := command.Charge("acct_7Hq2", "held-elsewhere", body).Encode()
	resp, _ := h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m1", Body: msg, EventSourceARN: testQueue}}})
	if len(resp.BatchItemFailures) != 1 || len(d.got) != 1 || d.got[0] != 31*time.Second {
		t.Fatalf("failures %+v, delays %v; want the message kept and hidden 25 s left + 5 s + 1 s", resp.BatchItemFailures, d.got)
	}
}

// TestReconcileWithoutARecordIsMalformed: a reconcile command without a pk,
// or with one that is not an idempotency record's, is dead-lettered at once
// as MALFORMED, never retried.
func TestReconcileWithoutARecordIsMalformed(t *testing.T) {
	t.Parallel()
	const reconcile = "arn:q:reconcile"
	dl := &deadLetters{}
	store := idemtest.NewMemoryStore()
	charges := chargetest.Service(idem.NewGuard(store, idem.Config{}), sandbox.New(""), httpapi.Render, charge.Config{})
	h := &Handler{Service: charges, Operations: op.NewRegistry(charges.Operation()),
		Inboxes:     map[string]Inbox{reconcile: {Inbox: command.Inbox{ARN: reconcile, URL: "u", Reconcile: true}, Queue: noDelay{}}},
		DeadLetters: dl, Concurrency: 1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	var ev events.SQSEvent
	for i, body := range []string{
		`{"type":"reconcile"}`,
		`{"type":"reconcile","pk":""}`,
		`{"type":"reconcile","pk":"` + dynamo.Key("ch_0123456789abcdef0123456789abcdef01234567") + `"}`,
		`{"type":"reconcile","pk":"` + idem.Scope{Operation: "payout", Account: "acct_1", Key: "payout-key-1"}.PK() + `"}`,
	} {
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: fmt.Sprintf("m%d", i), Body: body, EventSourceARN: reconcile})
	}
	resp, _ := h.Handle(context.Background(), ev)
	if len(resp.BatchItemFailures) != 0 {
		t.Fatalf("retried: %+v", resp.BatchItemFailures)
	}
	if len(dl.codes) != 4 || slices.ContainsFunc(dl.codes, func(c string) bool { return c != "MALFORMED" }) {
		t.Fatalf("dead letters %v; want 4 MALFORMED", dl.codes)
	}
}

// TestReconcileARefund: a reconcile command for a refund's record goes to
// the refund service: a refund whose outcome was unknown, and which the
// acquirer never processed, is released with its reservation.
func TestReconcileARefund(t *testing.T) {
	t.Parallel()
	const reconcile = "arn:q:reconcile"
	ctx := context.Background()
	clock := idemtest.NewClock(time.Unix(1_800_000_000, 0))
	guard := idem.NewGuard(idemtest.NewMemoryStore(), idem.Config{Now: clock.Now, DefaultLease: 30 * time.Second})
	sb := sandbox.New("")
	acq, _ := acquirerhttp.NewClient("http://sandbox.invalid", "", sandbox.InProcess(sb))
	cfg := charge.Config{Now: clock.Now}
	charges := chargetest.Service(guard, acq, httpapi.Render, cfg)
	balances := refundtest.NewMemoryBalances()
	refunds := refund.NewService(guard, charges, balances, refundtest.NewLedger(), acq, httpapi.RenderRefund, cfg)
	made := charges.Charge(ctx, charge.Input{Account: "acct_1", Keys: []string{"charge-key-1"},
		Body: []byte(`{"amount": 100, "currency": "BRL", "order_id": "1", "payment_method": "pm_card_visa"}`)})
	sb.SetFaults(sandbox.Faults{ErrorRate: 1})
	if res := refunds.Refund(ctx, refund.Input{Account: "acct_1", Keys: []string{"refund-key-1"}, ChargeID: made.ChargeID, Body: []byte(`{}`)}); res.Outcome != op.Pending {
		t.Fatalf("refund: %s", res.Outcome)
	}
	sb.SetFaults(sandbox.Faults{})
	clock.Advance(time.Minute)
	dl := &deadLetters{}
	var logs bytes.Buffer
	h := &Handler{Service: charges, Refunds: refunds, Operations: op.NewRegistry(charges.Operation(), refunds.Operation()),
		Inboxes:     map[string]Inbox{reconcile: {Inbox: command.Inbox{ARN: reconcile, URL: "u", Reconcile: true}, Queue: noDelay{}}},
		DeadLetters: dl, Concurrency: 1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: obs.NewMetrics(&logs, obs.FunctionSQSConsumer, "test")}
	pk := idem.Scope{Operation: refund.Operation, Account: "acct_1", Key: "refund-key-1"}.PK()
	msg, _ := command.Reconcile(pk).Encode()
	resp, _ := h.Handle(ctx, events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m1", Body: msg, EventSourceARN: reconcile}}})
	if len(resp.BatchItemFailures) != 0 || len(dl.codes) != 0 || !strings.Contains(logs.String(), string(obs.OutcomeReconciledReleased)) {
		t.Fatalf("failures %v, dead letters %v, metrics %s", resp.BatchItemFailures, dl.codes, logs.String())
	}
	if b, _ := balances.Get(ctx, made.ChargeID); b.Remaining != 100 || b.Reserved != 0 {
		t.Fatalf("balance %+v after the reconciler", b)
	}
}

// answers is an acquirer whose answers a test sets.
type answers struct {
	authorize func() (acquirer.Authorization, error)
	lookup    func() (acquirer.Authorization, error)
}

func (a answers) Authorize(context.Context, string, acquirer.Request) (acquirer.Authorization, error) {
	return a.authorize()
}
func (a answers) Lookup(context.Context, string) (acquirer.Authorization, error) { return a.lookup() }

// TestVerdicts: the table from the service's outcomes to what happens to a
// message, on the memory store: done, in flight (kept and delayed),
// transient (kept, no delay), reused (dead-lettered with its code), and the
// reconcile outcomes (done) or failure (kept).
func TestVerdicts(t *testing.T) {
	t.Parallel()
	const orders, reconcile = "arn:q:orders", "arn:q:reconcile"
	captured := func() (acquirer.Authorization, error) {
		return acquirer.Authorization{ID: "auth_1", Status: acquirer.StatusCaptured, Amount: 100, Currency: "BRL"}, nil
	}
	absent := func() (acquirer.Authorization, error) { return acquirer.Authorization{}, acquirer.ErrNotFound }
	unknown := func() (acquirer.Authorization, error) {
		return acquirer.Authorization{}, fmt.Errorf("%w: timeout", acquirer.ErrOutcomeUnknown)
	}
	body := []byte(`{"amount": 100, "currency": "BRL", "order_id": "1", "payment_method": "pm_card_visa"}`)
	other := []byte(`{"amount": 200, "currency": "BRL", "order_id": "2", "payment_method": "pm_card_visa"}`)
	req, _ := charge.ParseRequest(body, 0)
	for _, tc := range []struct {
		name      string
		acq       answers
		setup     func(g *idem.Guard, clock *idemtest.Clock)
		queue     string
		msg       string
		retry     bool
		delayed   bool
		rejection string
		outcome   string
	}{
		{name: "executed", acq: answers{captured, absent}, queue: orders, msg: chargeMsg("verdict-key-1", body), outcome: "executed"},
		{name: "replayed", acq: answers{captured, absent}, queue: orders, msg: chargeMsg("verdict-key-2", body),
			setup: func(g *idem.Guard, _ *idemtest.Clock) { complete(t, g, "verdict-key-2", req) }, outcome: "replayed"},
		{name: "in flight", acq: answers{captured, absent}, queue: orders, msg: chargeMsg("verdict-key-3", body),
			setup: func(g *idem.Guard, _ *idemtest.Clock) { claim(t, g, "verdict-key-3", req) }, retry: true, delayed: true, outcome: "in_flight"},
		{name: "outcome unknown", acq: answers{unknown, absent}, queue: orders, msg: chargeMsg("verdict-key-4", body), retry: true, outcome: "pending"},
		{name: "reused", acq: answers{captured, absent}, queue: orders, msg: chargeMsg("verdict-key-5", other),
			setup: func(g *idem.Guard, _ *idemtest.Clock) { complete(t, g, "verdict-key-5", req) }, rejection: "IDEMPOTENCY_KEY_REUSED", outcome: "key_reused"},
		{name: "reconciled, completed", acq: answers{captured, captured}, queue: reconcile, msg: reconcileMsg("verdict-key-6"),
			setup: func(g *idem.Guard, c *idemtest.Clock) { claim(t, g, "verdict-key-6", req); c.Advance(time.Hour) }, outcome: "reconciled_completed"},
		{name: "reconciled, released", acq: answers{captured, absent}, queue: reconcile, msg: reconcileMsg("verdict-key-7"),
			setup: func(g *idem.Guard, c *idemtest.Clock) { claim(t, g, "verdict-key-7", req); c.Advance(time.Hour) }, outcome: "reconciled_released"},
		{name: "reconcile, nothing to do", acq: answers{captured, absent}, queue: reconcile, msg: reconcileMsg("verdict-key-8"), outcome: "reconciled_nothing_to_do"},
		{name: "reconcile failed", acq: answers{captured, unknown}, queue: reconcile, msg: reconcileMsg("verdict-key-9"),
			setup: func(g *idem.Guard, c *idemtest.Clock) { claim(t, g, "verdict-key-9", req); c.Advance(time.Hour) }, retry: true, outcome: "reconcile_failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := idemtest.NewClock(time.Unix(1_800_000_000, 0))
			store := idemtest.NewMemoryStore()
			guard := idem.NewGuard(store, idem.Config{Now: clock.Now, DefaultLease: time.Minute})
			if tc.setup != nil {
				tc.setup(guard, clock)
			}
			d, dl := &delays{}, &deadLetters{}
			var logs bytes.Buffer
			charges := chargetest.Service(guard, tc.acq, httpapi.Render, charge.Config{Now: clock.Now})
			h := &Handler{Service: charges, Operations: op.NewRegistry(charges.Operation()), DeadLetters: dl, Concurrency: 1,
				Inboxes: map[string]Inbox{
					orders:    {Inbox: command.Inbox{ARN: orders, URL: "u1", Producer: "orders", Accounts: []string{"acct_7Hq2"}}, Queue: d},
					reconcile: {Inbox: command.Inbox{ARN: reconcile, URL: "u2", Reconcile: true}, Queue: d},
				},
				Logger: slog.New(slog.NewJSONHandler(&logs, nil))}
			resp, _ := h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m1", Body: tc.msg, EventSourceARN: tc.queue}}})
			if got := len(resp.BatchItemFailures) == 1; got != tc.retry {
				t.Errorf("retry %v, want %v", got, tc.retry)
			}
			if got := len(d.got) == 1 && d.got[0] > 0; got != tc.delayed {
				t.Errorf("delays %v, want delayed %v", d.got, tc.delayed)
			}
			if want := map[bool][]string{true: {tc.rejection}, false: nil}[tc.rejection != ""]; !slices.Equal(dl.codes, want) {
				t.Errorf("dead letters %v, want %v", dl.codes, want)
			}
			if !strings.Contains(logs.String(), `"outcome":"`+tc.outcome+`"`) {
				t.Errorf("log %s, want outcome %s", logs.String(), tc.outcome)
			}
		})
	}
}

func chargeMsg(key string, request []byte) string {
	b, _ := command.Charge("acct_7Hq2", key, request).Encode()
	return b
}

func reconcileMsg(key string) string {
	b, _ := command.Reconcile(idem.Scope{Operation: charge.Operation, Account: "acct_7Hq2", Key: key}.PK()).Encode()
	return b
}

// claim leaves key in flight, as a worker that holds it (or died holding it).
func claim(t *testing.T, g *idem.Guard, key string, req charge.Request) *idem.Lease {
	t.Helper()
	c, err := g.Begin(context.Background(), idem.Scope{Operation: charge.Operation, Account: "acct_7Hq2", Key: key}, req.Canonical())
	if err != nil {
		t.Fatal(err)
	}
	return c.Lease
}

// complete leaves key completed for req.
func complete(t *testing.T, g *idem.Guard, key string, req charge.Request) {
	t.Helper()
	if err := claim(t, g, key, req).Complete(context.Background(), idem.Response{StatusCode: 201, Body: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
}

// refundWorld is a consumer on one producer's queue with a captured
// charge of 1000, on memory stores, publishing to a topic it keeps.
type refundWorld struct {
	h        *Handler
	charges  *charge.Service
	refunds  *refund.Service
	sb       *sandbox.Server
	dl       *deadLetters
	topic    *eventtest.Topic
	chargeID string
}

const ordersQueue = "arn:q:orders"

func newRefundWorld(t *testing.T) *refundWorld {
	t.Helper()
	ctx := context.Background()
	guard := idem.NewGuard(idemtest.NewMemoryStore(), idem.Config{DefaultLease: 30 * time.Second})
	sb := sandbox.New("")
	acq, _ := acquirerhttp.NewClient("http://sandbox.invalid", "", sandbox.InProcess(sb))
	charges, refunds := refundtest.Services(guard, acq, httpapi.Render, httpapi.RenderRefund, charge.Config{})
	made := charges.Charge(ctx, charge.Input{Account: "acct_1", Keys: []string{"charge-key-1"},
		Body: []byte(`{"amount": 1000, "currency": "BRL", "order_id": "1", "payment_method": "pm_card_visa"}`)})
	if made.Outcome != op.Executed {
		t.Fatalf("charge: %s", made.Outcome)
	}
	w := &refundWorld{charges: charges, refunds: refunds, sb: sb, dl: &deadLetters{}, topic: &eventtest.Topic{}, chargeID: made.ChargeID}
	w.h = &Handler{Service: charges, Refunds: refunds,
		Inboxes:     map[string]Inbox{ordersQueue: {Inbox: command.Inbox{ARN: ordersQueue, URL: "u", Producer: "orders", Accounts: []string{"acct_1"}}, Queue: noDelay{}}},
		DeadLetters: w.dl, Outcomes: w.topic, Concurrency: 1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	return w
}

// send hands the consumer one refund command and reports whether it was
// kept for a retry.
func (w *refundWorld) send(t *testing.T, messageID, key, chargeID, request string) bool {
	t.Helper()
	body, err := command.Refund("acct_1", chargeID, key, []byte(request)).Encode()
	if err != nil { // a request Encode refuses (not JSON): written by hand, the type first, as Encode writes it
		body = `{"type":"refund","account":"acct_1","charge_id":"` + chargeID + `","idempotency_key":"` + key + `","request":` + request + `}`
	}
	resp, err := w.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{{MessageId: messageID, Body: body,
		EventSourceARN: ordersQueue, Attributes: map[string]string{"SentTimestamp": "1800000000123"}}}})
	if err != nil {
		t.Fatal(err)
	}
	return len(resp.BatchItemFailures) > 0
}

func encoded(t *testing.T, events []event.Event) []string {
	t.Helper()
	var out []string
	for _, e := range events {
		b, err := e.Encode()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	return out
}

// TestRefundCommands: a refund command shares the HTTP route's door and
// key space. It refunds once; its replay republishes the refund's event;
// an HTTP request with its key replays it, and the reverse; the bound's
// refusal is told as refund.rejected, the same body on every replay; a
// refusal at the door is dead-lettered with its code and told.
func TestRefundCommands(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newRefundWorld(t)
	if w.send(t, "m1", "refund-key-1", w.chargeID, `{"amount": 300}`) || len(w.dl.codes) != 0 {
		t.Fatalf("a refund command: kept or dead-lettered %v", w.dl.codes)
	}
	if got := w.topic.TakeEvents(); len(got) != 0 {
		t.Fatalf("an executed refund told %v: its row's change publishes it", got)
	}
	if w.send(t, "m2", "refund-key-1", w.chargeID, `{"amount": 300}`) {
		t.Fatal("the replay was kept")
	}
	replayed := w.topic.TakeEvents()
	if len(replayed) != 1 || replayed[0].Type != event.RefundSucceeded || replayed[0].Refund.Amount != 300 || replayed[0].Source != event.SourceQueue("orders") {
		t.Fatalf("the replay told %+v", replayed)
	}
	httpRetry := w.refunds.Refund(ctx, refund.Input{Account: "acct_1", Keys: []string{"refund-key-1"}, ChargeID: w.chargeID, Body: []byte(`{"amount": 300}`), Source: event.SourceHTTP})
	if httpRetry.Outcome != op.Replayed || httpRetry.ID != replayed[0].Refund.ID {
		t.Fatalf("an HTTP retry of the queued refund: %s %s", httpRetry.Outcome, httpRetry.ID)
	}

	first := w.refunds.Refund(ctx, refund.Input{Account: "acct_1", Keys: []string{"refund-key-2"}, ChargeID: w.chargeID, Body: []byte(`{"amount": 200}`), Source: event.SourceHTTP})
	if first.Outcome != op.Executed || w.send(t, "m3", "refund-key-2", w.chargeID, `{"amount": 200}`) {
		t.Fatalf("an HTTP refund then its command: %s", first.Outcome)
	}
	if got := w.topic.TakeEvents(); len(got) != 1 || got[0].Refund.ID != first.ID || got[0].Source != event.SourceHTTP {
		t.Fatalf("the command replaying an HTTP refund told %+v; want its event, to its first asker", got)
	}
	if n := len(w.sb.Refunds()); n != 2 {
		t.Fatalf("%d acquirer refunds, want 2", n)
	}

	// 500 remain: 600 is the bound's refusal, told the same every time.
	if w.send(t, "m4", "refund-key-3", w.chargeID, `{"amount": 600}`) || w.send(t, "m5", "refund-key-3", w.chargeID, `{"amount": 600}`) {
		t.Fatal("the bound's refusal was kept")
	}
	told := encoded(t, w.topic.TakeEvents())
	if len(told) != 2 || told[0] != told[1] || !strings.Contains(told[0], `"type":"refund.rejected"`) ||
		!strings.Contains(told[0], `"reason":"REFUND_EXCEEDS_CHARGE"`) || !strings.Contains(told[0], `"status":"rejected"`) {
		t.Fatalf("the bound's refusal and its replay told %q", told)
	}
	if len(w.dl.codes) != 0 {
		t.Fatalf("the bound's refusal was dead-lettered: %v", w.dl.codes)
	}

	for _, tc := range []struct{ key, chargeID, request, code string }{
		{"refund-key-4", w.chargeID, `{"amount": -1}`, "VALIDATION_FAILED"},
		// A request that is not JSON, or is with a name twice: the envelope
		// is not read past it, yet its type came first, so the producer is
		// told of a refund's refusal, never a charge's.
		{"refund-key-6", w.chargeID, `{not json}`, "VALIDATION_FAILED"},
		{"refund-key-7", w.chargeID, `{"amount": 1, "amount": 2}`, "VALIDATION_FAILED"},
		{"", w.chargeID, `{}`, "IDEMPOTENCY_KEY_MISSING"},
		{"refund-key-5", "ch_0123456789abcdef0123456789abcdef01234567", `{}`, "NOT_FOUND"},
		{"refund-key-1", w.chargeID, `{"amount": 301}`, "IDEMPOTENCY_KEY_REUSED"},
	} {
		w.dl.codes = nil
		if w.send(t, "m-"+tc.key+tc.code, tc.key, tc.chargeID, tc.request) || len(w.dl.codes) != 1 || w.dl.codes[0] != tc.code {
			t.Fatalf("%s: dead-lettered %v", tc.code, w.dl.codes)
		}
		got := w.topic.TakeEvents()
		if len(got) != 1 || got[0].Type != event.RefundRejected || got[0].Reason != tc.code || got[0].Refund != nil ||
			!got[0].CreatedAt.Equal(time.UnixMilli(1800000000123)) {
			t.Fatalf("%s: told %+v", tc.code, got)
		}
	}
	if n := len(w.sb.Refunds()); n != 2 {
		t.Fatalf("%d acquirer refunds after the refusals, want 2", n)
	}
}

// TestRefundMetrics: a refund command counts on Refunds, and one held on
// the acquirer's answer on RefundMismatches too, for the refund alarms.
func TestRefundMetrics(t *testing.T) {
	t.Parallel()
	w := newRefundWorld(t)
	var lines bytes.Buffer
	w.h.Metrics = obs.NewMetrics(&lines, obs.FunctionSQSConsumer, "test")
	tenfold := w.charges.Charge(context.Background(), charge.Input{Account: "acct_1", Keys: []string{"charge-key-2"},
		Body: []byte(`{"amount": 1000, "currency": "BRL", "order_id": "2", "payment_method": "` + sandbox.PaymentMethodRefundsTenfold + `"}`)})
	if w.send(t, "m1", "refund-key-1", w.chargeID, `{"amount": 100}`) || w.send(t, "m2", "refund-key-2", tenfold.ChargeID, `{"amount": 100}`) {
		t.Fatal("a refund command was kept")
	}
	var got []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(lines.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		got = append(got, m)
	}
	if len(got) != 2 || got[0][obs.MetricRefunds] != 1.0 || got[0][obs.MetricRefundMismatches] != nil ||
		got[1][obs.MetricRefunds] != 1.0 || got[1][obs.MetricRefundMismatches] != 1.0 || got[1][obs.DimensionOutcome] != string(obs.OutcomeAcquirerMismatch) {
		t.Fatalf("metrics %v", got)
	}
}

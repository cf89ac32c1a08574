package consumer

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/acquirer/acquirerhttp"
	"github.com/idempotent-payments/idempay/internal/capture"
	"github.com/idempotent-payments/idempay/internal/capture/capturetest"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/command"
	"github.com/idempotent-payments/idempay/internal/event"
	"github.com/idempotent-payments/idempay/internal/event/eventtest"
	"github.com/idempotent-payments/idempay/internal/httpapi"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/idem/idemtest"
	"github.com/idempotent-payments/idempay/internal/obs"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/sandbox"
)

// captureWorld is a consumer on one producer's queue (account acct_1),
// with the capture service on memory stores, publishing to a topic it
// keeps, hiding messages through delays.
type captureWorld struct {
	h        *Handler
	charges  *charge.Service
	captures *capture.Service
	sb       *sandbox.Server
	dl       *deadLetters
	topic    *eventtest.Topic
	delays   *delays
	metrics  *bytes.Buffer
	clock    *idemtest.Clock
	// lie makes the acquirer answer every void and capture for twice its
	// amount
	lie *atomic.Bool
}

// lying answers voids and captures for twice what they moved while lie
// is set: a mismatch, which holds the action for an operator.
type lying struct {
	capturetest.Acquirer
	lie *atomic.Bool
}

func (l lying) Void(ctx context.Context, key string, req acquirer.VoidRequest) (acquirer.Void, error) {
	v, err := l.Acquirer.Void(ctx, key, req)
	if l.lie.Load() {
		v.Amount *= 2
	}
	return v, err
}

func (l lying) Capture(ctx context.Context, key string, req acquirer.CaptureRequest) (acquirer.Capture, error) {
	c, err := l.Acquirer.Capture(ctx, key, req)
	if l.lie.Load() {
		c.Amount *= 2
	}
	return c, err
}

func newCaptureWorld(t *testing.T) *captureWorld {
	t.Helper()
	// the clock runs, as the balance's watermarks need, and a test moves
	// it on past a lease
	clock, began := idemtest.NewClock(time.Unix(1_800_000_000, 0)), time.Now()
	now := func() time.Time { return clock.Now().Add(time.Since(began)) }
	guard := idem.NewGuard(idemtest.NewMemoryStore(), idem.Config{Now: now, DefaultLease: 30 * time.Second})
	sb := sandbox.New("")
	sb.Now = now
	acq, _ := acquirerhttp.NewClient("http://sandbox.invalid", "", sandbox.InProcess(sb))
	lie := &atomic.Bool{}
	charges, _, captures := capturetest.Services(guard, lying{acq, lie}, httpapi.Render, httpapi.RenderRefund, httpapi.RenderCapture,
		charge.Config{Now: now, RetryAfter: 2 * time.Second})
	w := &captureWorld{charges: charges, captures: captures, sb: sb, dl: &deadLetters{}, topic: &eventtest.Topic{}, delays: &delays{},
		metrics: &bytes.Buffer{}, clock: clock, lie: lie}
	w.h = &Handler{Service: charges, Captures: captures,
		Inboxes:     map[string]Inbox{ordersQueue: {Inbox: command.Inbox{ARN: ordersQueue, URL: "u", Producer: "orders", Accounts: []string{"acct_1"}}, Queue: w.delays}},
		DeadLetters: w.dl, Outcomes: w.topic, Concurrency: 1, Logger: slog.New(slog.DiscardHandler),
		Metrics: obs.NewMetrics(w.metrics, obs.FunctionSQSConsumer, "test")}
	return w
}

// authorize is the id of an authorization of acct_1 for 1000.
func (w *captureWorld) authorize(t *testing.T, key string) string {
	t.Helper()
	made := w.charges.Charge(context.Background(), charge.Input{Account: "acct_1", Keys: []string{key},
		Body: []byte(`{"amount": 1000, "currency": "BRL", "order_id": "1", "payment_method": "pm_card_visa", "capture": false}`)})
	if made.Outcome != op.Executed {
		t.Fatalf("authorize: %s", made.Outcome)
	}
	return made.ChargeID
}

// send hands the consumer one command c and reports whether it was kept
// for a retry.
func (w *captureWorld) send(t *testing.T, messageID string, c command.Command) bool {
	t.Helper()
	body, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := w.h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{{MessageId: messageID, Body: body,
		EventSourceARN: ordersQueue, Attributes: map[string]string{"SentTimestamp": "1800000000123"}}}})
	if err != nil {
		t.Fatal(err)
	}
	return len(resp.BatchItemFailures) > 0
}

// TestCaptureCommands: capture and void commands share the HTTP routes'
// doors and key spaces. A capture captures once; its replay republishes
// capture.succeeded; an HTTP retry with its key replays it; the bound's
// refusal is told as capture.rejected, the same body every time; a void
// releases the rest and its replay republishes void.succeeded; a capture
// after it, and a producer acting on another account, are dead-lettered
// with their codes and told; each counts on its own metric.
func TestCaptureCommands(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newCaptureWorld(t)
	id := w.authorize(t, "charge-key-1")
	capture300 := command.Capture("acct_1", id, "capture-key-1", []byte(`{"amount": 300, "final": false}`))
	if w.send(t, "m1", capture300) || len(w.dl.codes) != 0 || len(w.topic.TakeEvents()) != 0 {
		t.Fatalf("a capture command: kept, dead-lettered %v, or told (its row's change publishes it)", w.dl.codes)
	}
	if w.send(t, "m2", capture300) {
		t.Fatal("the replay was kept")
	}
	replayed := w.topic.TakeEvents()
	if len(replayed) != 1 || replayed[0].Type != event.CaptureSucceeded || replayed[0].Capture.Amount != 300 || replayed[0].Source != event.SourceQueue("orders") {
		t.Fatalf("the replay told %+v", replayed)
	}
	httpRetry := w.captures.Capture(ctx, capture.Input{Account: "acct_1", Keys: []string{"capture-key-1"}, ChargeID: id, Body: []byte(`{"amount": 300, "final": false}`), Source: event.SourceHTTP})
	if httpRetry.Outcome != op.Replayed || httpRetry.ID != replayed[0].Capture.ID {
		t.Fatalf("an HTTP retry of the queued capture: %s %s", httpRetry.Outcome, httpRetry.ID)
	}

	// 700 remain: 800 is the bound's refusal, told the same every time.
	over := command.Capture("acct_1", id, "capture-key-2", []byte(`{"amount": 800, "final": false}`))
	if w.send(t, "m3", over) || w.send(t, "m4", over) || len(w.dl.codes) != 0 {
		t.Fatalf("the bound's refusal was kept or dead-lettered %v", w.dl.codes)
	}
	told := encoded(t, w.topic.TakeEvents())
	if len(told) != 2 || told[0] != told[1] || !strings.Contains(told[0], `"type":"capture.rejected"`) ||
		!strings.Contains(told[0], `"reason":"CAPTURE_EXCEEDS_AUTHORIZATION"`) || !strings.Contains(told[0], `"status":"rejected"`) {
		t.Fatalf("the bound's refusal and its replay told %q", told)
	}

	void := command.Void("acct_1", id, "void-key-1", []byte(`{"reason": "abandoned"}`))
	if w.send(t, "m5", void) || w.send(t, "m6", void) {
		t.Fatal("a void or its replay was kept")
	}
	if got := w.topic.TakeEvents(); len(got) != 1 || got[0].Type != event.VoidSucceeded || got[0].Void.Amount != 700 {
		t.Fatalf("the void's replay told %+v", got)
	}

	// The voided authorization refuses a capture and a void for good: each
	// refusal is stored, told, and told the same again on a replay.
	for _, c := range []command.Command{
		command.Capture("acct_1", id, "capture-key-3", []byte(`{"amount": 1}`)),
		command.Void("acct_1", id, "void-key-2", []byte(`{}`)),
	} {
		if w.send(t, "m-"+c.IdempotencyKey, c) || w.send(t, "m-again-"+c.IdempotencyKey, c) || len(w.dl.codes) != 0 {
			t.Fatalf("%s after the void: kept, or dead-lettered %v", c.Type, w.dl.codes)
		}
		told := encoded(t, w.topic.TakeEvents())
		if len(told) != 2 || told[0] != told[1] || !strings.Contains(told[0], `"type":"`+string(c.Type)+`.rejected"`) ||
			!strings.Contains(told[0], `"reason":"CHARGE_NOT_CAPTURABLE"`) {
			t.Fatalf("%s after the void, and its replay, told %q", c.Type, told)
		}
	}
	for _, tc := range []struct {
		c    command.Command
		code string
		kind event.Type
	}{
		{command.Capture("acct_2", id, "capture-key-4", []byte(`{}`)), command.RejectProducerNotAllowed, event.CaptureRejected},
		{command.Capture("acct_1", id, "capture-key-5", []byte(`{"amount": -1}`)), "VALIDATION_FAILED", event.CaptureRejected},
		{command.Void("acct_1", id, "void-key-1", []byte(`{"reason": "duplicate"}`)), "IDEMPOTENCY_KEY_REUSED", event.VoidRejected},
	} {
		w.dl.codes = nil
		if w.send(t, "m-"+tc.c.IdempotencyKey, tc.c) || len(w.dl.codes) != 1 || w.dl.codes[0] != tc.code {
			t.Fatalf("%s %s: dead-lettered %v", tc.c.Type, tc.code, w.dl.codes)
		}
		if got := w.topic.TakeEvents(); len(got) != 1 || got[0].Type != tc.kind || got[0].Reason != tc.code || got[0].Capture != nil || got[0].Void != nil {
			t.Fatalf("%s %s: told %+v", tc.c.Type, tc.code, got)
		}
	}
	if n := len(w.sb.Captures()); n != 1 {
		t.Fatalf("%d acquirer captures, want 1", n)
	}
	lines := w.metrics.String()
	if strings.Count(lines, `"`+obs.MetricCaptures+`":1`) != 8 || strings.Count(lines, `"`+obs.MetricVoids+`":1`) != 5 {
		t.Fatalf("metrics:\n%s", lines)
	}
}

// TestCaptureBehindAVoidInFlight: a capture command that meets a void in
// flight (its answer lost) is kept and hidden until the void's lease has
// surely ended (a lease of 30 s from now, plus T and the skew); once the
// void is resolved it is refused, never captured.
func TestCaptureBehindAVoidInFlight(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newCaptureWorld(t)
	id := w.authorize(t, "charge-key-1")
	w.sb.SetFaults(sandbox.Faults{ErrorRate: 1})
	if res := w.captures.Void(ctx, capture.Input{Account: "acct_1", Keys: []string{"void-key-1"}, ChargeID: id, Body: []byte(`{}`)}); res.Outcome != op.Pending {
		t.Fatalf("the void: %s", res.Outcome)
	}
	w.sb.SetFaults(sandbox.Faults{})
	w.clock.Advance(time.Second)
	capture100 := command.Capture("acct_1", id, "capture-key-1", []byte(`{"amount": 100}`))
	if !w.send(t, "m1", capture100) || len(w.delays.got) != 1 || w.delays.got[0] < 35*time.Second || w.delays.got[0] > 36*time.Second {
		t.Fatalf("the capture behind the void: delays %v", w.delays.got)
	}
	w.clock.Advance(time.Minute) // the void's lease is over: its retry takes it over
	if res := w.captures.Void(ctx, capture.Input{Account: "acct_1", Keys: []string{"void-key-1"}, ChargeID: id, Body: []byte(`{}`)}); res.Outcome != op.Executed {
		t.Fatalf("the void's retry: %s", res.Outcome)
	}
	if w.send(t, "m2", capture100) || len(w.dl.codes) != 0 || len(w.sb.Captures()) != 0 {
		t.Fatalf("the capture after the void: kept, dead-lettered %v, or %d captures", w.dl.codes, len(w.sb.Captures()))
	}
	if told := w.topic.TakeEvents(); len(told) != 1 || told[0].Type != event.CaptureRejected || told[0].Reason != "CHARGE_NOT_CAPTURABLE" {
		t.Fatalf("the capture after the void told %+v", told)
	}
}

// TestCaptureBehindAHeldVoid: a capture command that meets a void held
// for an operator is deleted, neither hidden nor dead-lettered, and told
// as capture.rejected with VOID_IN_FLIGHT (nothing was stored: the
// producer sends it again once the void is settled); it captures nothing.
func TestCaptureBehindAHeldVoid(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newCaptureWorld(t)
	id := w.authorize(t, "charge-key-1")
	w.lie.Store(true)
	if res := w.captures.Void(ctx, capture.Input{Account: "acct_1", Keys: []string{"void-key-1"}, ChargeID: id, Body: []byte(`{}`)}); res.Outcome != op.Mismatch {
		t.Fatalf("the lied-to void: %s", res.Outcome)
	}
	capture100 := command.Capture("acct_1", id, "capture-key-1", []byte(`{"amount": 100}`))
	if w.send(t, "m1", capture100) || len(w.delays.got) != 0 || len(w.dl.codes) != 0 || len(w.sb.Captures()) != 0 {
		t.Fatalf("the capture behind the held void: kept, delays %v, dead-lettered %v, or %d captures", w.delays.got, w.dl.codes, len(w.sb.Captures()))
	}
	told := w.topic.TakeEvents()
	if len(told) != 1 || told[0].Type != event.CaptureRejected || told[0].Reason != string(op.CodeVoidInFlight) {
		t.Fatalf("the capture behind the held void told %+v", told)
	}
	if !strings.Contains(w.metrics.String(), `"Outcome":"void_held"`) {
		t.Fatalf("no void_held metric line:\n%s", w.metrics)
	}
}

// TestVoidBehindAHeldCapture: a void command that meets a capture held
// for an operator is deleted and told as void.rejected with
// CAPTURE_IN_FLIGHT (capture_held), nothing voided.
func TestVoidBehindAHeldCapture(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newCaptureWorld(t)
	id := w.authorize(t, "charge-key-1")
	w.lie.Store(true)
	held := capture.Input{Account: "acct_1", Keys: []string{"capture-key-1"}, ChargeID: id, Body: []byte(`{"amount": 100, "final": false}`)}
	if res := w.captures.Capture(ctx, held); res.Outcome != op.Mismatch {
		t.Fatalf("the lied-to capture: %s", res.Outcome)
	}
	w.lie.Store(false)
	if w.send(t, "m1", command.Void("acct_1", id, "void-key-1", []byte(`{}`))) || len(w.delays.got) != 0 || len(w.dl.codes) != 0 || len(w.sb.Voids()) != 0 {
		t.Fatalf("the void behind the held capture: kept, delays %v, dead-lettered %v, or %d voids", w.delays.got, w.dl.codes, len(w.sb.Voids()))
	}
	told := w.topic.TakeEvents()
	if len(told) != 1 || told[0].Type != event.VoidRejected || told[0].Reason != string(op.CodeCaptureInFlight) {
		t.Fatalf("the void behind the held capture told %+v", told)
	}
	if !strings.Contains(w.metrics.String(), `"Outcome":"capture_held"`) {
		t.Fatalf("no capture_held metric line:\n%s", w.metrics)
	}
}

// Package matrix holds the matrix test: every registered operation
// (package operations) is served by every trigger it declares, each
// driven through its adapter from a fixture in Lambda's own JSON form
// (testdata/<trigger>/<operation>.json), on the memory stores with the
// sandbox acquirer in process.
package matrix

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/acquirer/acquirerhttp"
	"github.com/idempotent-payments/idempay/internal/backstop"
	"github.com/idempotent-payments/idempay/internal/capture"
	"github.com/idempotent-payments/idempay/internal/capture/capturetest"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/charge/chargetest"
	"github.com/idempotent-payments/idempay/internal/command"
	"github.com/idempotent-payments/idempay/internal/consumer"
	"github.com/idempotent-payments/idempay/internal/event/eventtest"
	"github.com/idempotent-payments/idempay/internal/httpapi"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/idem/idemtest"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/operations"
	"github.com/idempotent-payments/idempay/internal/operator"
	"github.com/idempotent-payments/idempay/internal/outbox"
	"github.com/idempotent-payments/idempay/internal/publish"
	"github.com/idempotent-payments/idempay/internal/refund"
	"github.com/idempotent-payments/idempay/internal/refund/refundtest"
	"github.com/idempotent-payments/idempay/internal/sandbox"
)

// The fixtures' names: the account their tokens and commands name, and
// the queues' ARNs.
const (
	account        = "acct_matrix"
	ordersQueue    = "arn:aws:sqs:sa-east-1:123456789012:orders-commands"
	reconcileQueue = "arn:aws:sqs:sa-east-1:123456789012:reconcile"
	// region writes the rows; the backstop runs in another, and region
	// never beat, so it has stopped.
	region = "b"
)

// drivers serve one operation's fixture through one trigger's adapter:
// nil when the adapter served it, else why not.
var drivers = map[operations.Trigger]func(w *world, reg operations.Registration, fixtures string) error{
	operations.HTTP:       (*world).http,
	operations.Queue:      (*world).queue,
	operations.Operator:   (*world).operator,
	operations.Stream:     (*world).stream,
	operations.Reconciler: (*world).reconciler,
	operations.Backstop:   (*world).backstop,
}

// TestMatrix: for each registered operation, each trigger it declares
// serves it.
func TestMatrix(t *testing.T) {
	regs := operations.All()
	if len(regs) < 2 {
		t.Fatalf("%d operations registered", len(regs))
	}
	for _, reg := range regs {
		for _, trigger := range reg.Triggers {
			t.Run(reg.Name+"/"+string(trigger), func(t *testing.T) {
				if err := newWorld(t).serve(reg, trigger, "testdata"); err != nil {
					t.Error(err)
				}
			})
		}
	}
}

// TestMatrixBites: an operation planted in the test's registrations,
// declaring the queue, with a command fixture of its own but no queue
// adapter for it (no queued operation, no command shape, no service),
// fails the matrix: the consumer dead-letters its command as malformed.
func TestMatrixBites(t *testing.T) {
	planted := operations.Registration{Name: "payout", RowIDPrefix: "po_", RowKeyPrefix: "PAYOUT#", Triggers: []operations.Trigger{operations.Queue}}
	dir := t.TempDir()
	writeFixture(t, dir, operations.Queue, planted.Name, sqsEvent(ordersQueue,
		`{"type":"payout","account":"`+account+`","idempotency_key":"matrix-payout-queue","request":{"amount":100}}`))
	err := newWorld(t).serve(planted, operations.Queue, dir)
	if err == nil || !strings.Contains(err.Error(), "payout") {
		t.Fatalf("the planted operation: %v; want the queue not to serve it", err)
	}
	t.Logf("the planted operation fails the matrix: %v", err)
}

// serve drives reg's fixture through trigger.
func (w *world) serve(reg operations.Registration, trigger operations.Trigger, fixtures string) error {
	drive, ok := drivers[trigger]
	if !ok {
		return fmt.Errorf("%s declares %s, which no driver of this test knows", reg.Name, trigger)
	}
	return drive(w, reg, fixtures)
}

// world is every trigger's adapter on one deployment's memory stores, with
// a captured charge of account to refund, and a clock of the test's.
type world struct {
	t        *testing.T
	clock    *idemtest.Clock
	guard    *idem.Guard
	sb       *sandbox.Server
	acq      *acquirerhttp.Client
	ledger   *chargetest.Ledger
	refunds  *refundtest.Ledger
	balances *refundtest.MemoryBalances
	captures *capturetest.Ledger
	voids    *capturetest.Ledger
	cfg      charge.Config
	charges  *charge.Service
	refundSv *refund.Service
	capture  *capture.Service
	registry *op.Registry
	logs     *syncBuffer
	topic    *eventtest.Topic
	chargeID string
	// authorizationID is an authorization of account, to capture or
	// void.
	authorizationID string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	clock := idemtest.NewClock(time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC))
	ledger := chargetest.NewLedger()
	w := &world{t: t, clock: clock, sb: sandbox.New(""), ledger: ledger, refunds: refundtest.NewLedgerListedIn(ledger),
		balances: refundtest.NewMemoryBalances(), captures: capturetest.NewLedgerListedIn(ledger), voids: capturetest.NewLedgerListedIn(ledger),
		logs: &syncBuffer{}, topic: &eventtest.Topic{},
		cfg: charge.Config{Now: clock.Now, Region: region, Logger: slog.New(slog.DiscardHandler)}}
	w.guard = idem.NewGuard(idemtest.NewMemoryStore(), idem.Config{Now: clock.Now, DefaultLease: time.Minute, Protocol: idem.Protocol{Downstream: "sandbox"}})
	w.sb.Now = clock.Now
	var err error
	if w.acq, err = acquirerhttp.NewClient("http://sandbox.invalid", "", sandbox.InProcess(w.sb)); err != nil {
		t.Fatal(err)
	}
	w.charges, w.refundSv, w.capture = w.services(w.acq)
	w.registry = op.NewRegistry(w.charges.Operation(), w.refundSv.Operation(), w.capture.CaptureOperation(), w.capture.VoidOperation())
	w.chargeID = w.charge("to-refund", `"capture": true`)
	w.authorizationID = w.charge("to-capture", `"capture": false`)
	return w
}

// charge is the id of a charge of account made under the key ending in
// key, with the member capture.
func (w *world) charge(key, capture string) string {
	made := w.charges.Charge(context.Background(), charge.Input{Account: account, Keys: []string{"matrix-charge-" + key},
		Body: []byte(`{"amount": 100000, "currency": "BRL", "order_id": "m-0", "payment_method": "pm_card_visa", ` + capture + `}`)})
	if made.Outcome != op.Executed {
		w.t.Fatalf("the charge with %s: %s", capture, made.Outcome)
	}
	return made.ChargeID
}

// services are the deployment's services on w's stores, calling acq.
func (w *world) services(acq capturetest.Acquirer) (*charge.Service, *refund.Service, *capture.Service) {
	charges := chargetest.ServiceWith(w.guard, w.ledger, acq, httpapi.Render, w.cfg)
	return charges, refund.NewService(w.guard, charges, w.balances, w.refunds, acq, httpapi.RenderRefund, w.cfg),
		capture.NewService(w.guard, charges, w.balances.Captures(), w.captures, w.voids, acq, httpapi.RenderCapture, w.cfg)
}

// fixture reads trigger's fixture of reg into v, its placeholders
// replaced by vars.
func (w *world) fixture(dir string, trigger operations.Trigger, reg operations.Registration, v any, vars map[string]string) error {
	b, err := os.ReadFile(filepath.Join(dir, string(trigger), reg.Name+".json"))
	if err != nil {
		return fmt.Errorf("%s through %s: no fixture: %w", reg.Name, trigger, err)
	}
	s := strings.ReplaceAll(string(b), "{{charge_id}}", w.chargeID)
	s = strings.ReplaceAll(s, "{{authorization_id}}", w.authorizationID)
	for k, val := range vars {
		s = strings.ReplaceAll(s, "{{"+k+"}}", val)
	}
	return json.Unmarshal([]byte(s), v)
}

func (w *world) api() *httpapi.Handler {
	return &httpapi.Handler{Service: w.charges, Refunds: w.refundSv, Captures: w.capture, AccountClaim: "sub"}
}

// http: the POST fixture answers 201 with an object of the operation.
func (w *world) http(reg operations.Registration, dir string) error {
	_, err := w.post(reg, dir)
	return err
}

// post serves the operation's HTTP fixture and returns the id of the row
// its 201 answers with.
func (w *world) post(reg operations.Registration, dir string) (string, error) {
	var ev events.APIGatewayV2HTTPRequest
	if err := w.fixture(dir, operations.HTTP, reg, &ev, nil); err != nil {
		return "", err
	}
	resp, err := w.api().Handle(context.Background(), ev)
	var body struct{ ID, Object string }
	if err != nil || resp.StatusCode != 201 || json.Unmarshal([]byte(resp.Body), &body) != nil || body.Object != reg.Name {
		return "", fmt.Errorf("%s through HTTP: %d %s, %v", reg.Name, resp.StatusCode, resp.Body, err)
	}
	return body.ID, nil
}

// consumer is the queue adapter reading the orders queue and the
// reconcile queue, logging to w.logs.
func (w *world) consumer() *consumer.Handler {
	return &consumer.Handler{Service: w.charges, Refunds: w.refundSv, Captures: w.capture, Operations: w.registry,
		Inboxes: map[string]consumer.Inbox{
			ordersQueue:    {Inbox: command.Inbox{ARN: ordersQueue, URL: "orders", Producer: "orders", Accounts: []string{account}}},
			reconcileQueue: {Inbox: command.Inbox{ARN: reconcileQueue, URL: "reconcile", Reconcile: true}},
		},
		DeadLetters: deadLetters{}, Concurrency: 1, Logger: slog.New(slog.NewJSONHandler(w.logs, nil))}
}

// queue: the command fixture executes, as the consumer's line for it
// says, and is deleted.
func (w *world) queue(reg operations.Registration, dir string) error {
	return w.consume(reg, operations.Queue, dir, nil, "executed")
}

// reconciler: the reconcile command of a record of the operation left in
// flight, its lease over, completes it.
func (w *world) reconciler(reg operations.Registration, dir string) error {
	pk, _, err := w.inFlight(reg, dir, "reconciler")
	if err != nil {
		return err
	}
	w.clock.Advance(time.Minute + idem.DefaultInTransitBound + idem.DefaultClockSkew + time.Second)
	return w.consume(reg, operations.Reconciler, dir, map[string]string{"record": pk}, "reconciled_completed")
}

// consume hands the consumer trigger's fixture and wants the message
// deleted with outcome, and its line naming the operation.
func (w *world) consume(reg operations.Registration, trigger operations.Trigger, dir string, vars map[string]string, outcome string) error {
	var ev events.SQSEvent
	if err := w.fixture(dir, trigger, reg, &ev, vars); err != nil {
		return err
	}
	resp, err := w.consumer().Handle(context.Background(), ev)
	if err != nil || len(resp.BatchItemFailures) > 0 {
		return fmt.Errorf("%s through %s: kept for a retry (%v)", reg.Name, trigger, err)
	}
	for line := range w.logs.lines() {
		var l struct{ Msg, Operation, Outcome string }
		if json.Unmarshal(line, &l) == nil && l.Msg == "message" {
			if l.Operation != reg.Name || l.Outcome != outcome {
				return fmt.Errorf("%s through %s: came to %s of %s, want %s", reg.Name, trigger, l.Outcome, l.Operation, outcome)
			}
			return nil
		}
	}
	return fmt.Errorf("%s through %s: no line of the message", reg.Name, trigger)
}

// operator: a look at a record of the operation left in flight shows
// what the acquirer has under its intent.
func (w *world) operator(reg operations.Registration, dir string) error {
	pk, intent, err := w.inFlight(reg, dir, "operator")
	if err != nil {
		return err
	}
	var ev events.LambdaFunctionURLRequest
	if err := w.fixture(dir, operations.Operator, reg, &ev, map[string]string{"record": pk, "intent": intent}); err != nil {
		return err
	}
	h := &operator.Handler{Operations: w.registry, Lookup: w.guard.Lookup, Logger: slog.New(slog.NewJSONHandler(w.logs, nil))}
	resp, err := h.Handle(context.Background(), ev)
	var a operator.Answer
	o, _ := w.registry.Of(pk)
	if err != nil || json.Unmarshal([]byte(resp.Body), &a) != nil || a.Outcome != operator.OutcomeLooked || a.Terms == nil || o == nil || a.Detail != o.Shown() {
		return fmt.Errorf("%s through the operator's channel: %d %s, %v", reg.Name, resp.StatusCode, resp.Body, err)
	}
	return nil
}

// inFlight leaves a record of the operation in flight, its outcome
// unknown (the acquirer took the call and its answer was lost), by its
// own HTTP fixture under the key suffixed with why; its key and intent.
func (w *world) inFlight(reg operations.Registration, dir, why string) (pk, intent string, err error) {
	var ev events.APIGatewayV2HTTPRequest
	if err := w.fixture(dir, operations.HTTP, reg, &ev, nil); err != nil {
		return "", "", err
	}
	key := ev.Headers["idempotency-key"] + "-" + why
	ev.Headers["idempotency-key"] = key
	charges, refunds, captures := w.services(lostAnswers{w.acq})
	resp, err := (&httpapi.Handler{Service: charges, Refunds: refunds, Captures: captures, AccountClaim: "sub"}).Handle(context.Background(), ev)
	if err != nil || resp.StatusCode != 503 {
		return "", "", fmt.Errorf("%s left in flight: %d %s, %v", reg.Name, resp.StatusCode, resp.Body, err)
	}
	pk = idem.Scope{Operation: reg.Name, Account: account, Key: key}.PK()
	rec, err := w.guard.Lookup(context.Background(), pk)
	if err != nil || rec.Status != idem.StatusInProgress {
		return "", "", fmt.Errorf("%s left in flight: %v", reg.Name, err)
	}
	return pk, rec.DownstreamKey, nil
}

// stream: the stream record of the operation's row inserted publishes one
// event the operation makes.
func (w *world) stream(reg operations.Registration, dir string) error {
	var ev events.DynamoDBEvent
	if err := w.fixture(dir, operations.Stream, reg, &ev, nil); err != nil {
		return err
	}
	h := &publish.Handler{Topic: w.topic, Logger: slog.New(slog.NewJSONHandler(w.logs, nil))}
	resp, err := h.Handle(context.Background(), ev)
	if err != nil || len(resp.BatchItemFailures) > 0 {
		return fmt.Errorf("%s through the stream: %+v, %v", reg.Name, resp, err)
	}
	return w.published(reg, "the stream")
}

// backstop: a row of the operation its region left unpublished, the
// region stopped, is published by another region's run on the schedule.
func (w *world) backstop(reg operations.Registration, dir string) error {
	var ev events.EventBridgeEvent
	if err := w.fixture(dir, operations.Backstop, reg, &ev, nil); err != nil {
		return err
	}
	ctx := context.Background()
	for u, err := range w.ledger.Unpublished(ctx, w.clock.Now().Add(time.Hour)) { // the books hold only the row below
		if err != nil || w.ledger.MarkPublished(ctx, u.ID) != nil {
			return fmt.Errorf("the books before %s's row: %v", reg.Name, err)
		}
	}
	if _, err := w.post(reg, dir); err != nil { // its row, written in region
		return err
	}
	p := &backstop.Publisher{Region: "a", Books: w.ledger, Rows: rows{w}, Topic: w.topic, StaleAfter: time.Minute,
		Now: func() time.Time { return w.clock.Now().Add(time.Hour) }}
	report, err := p.Run(ctx)
	if err != nil || report.TakenOver != 1 {
		return fmt.Errorf("%s through the backstop (%s): %+v, %v", reg.Name, ev.DetailType, report, err)
	}
	return w.published(reg, "the backstop")
}

// published wants one event on the topic, of those reg makes.
func (w *world) published(reg operations.Registration, by string) error {
	got := w.topic.TakeEvents()
	if len(got) != 1 || !slices.Contains(reg.Events, got[0].Type) {
		return fmt.Errorf("%s through %s: published %+v, want one of %v", reg.Name, by, got, reg.Events)
	}
	return nil
}

// rows read a row of any operation from the memory ledgers, by its
// operation's id (operations.ByRowID), as dynamo.Rows does on the table.
type rows struct{ w *world }

// memoryRows are the memory ledgers' rows by operation.
var memoryRows = map[string]func(ctx context.Context, w *world, id string) (outbox.Row, error){
	charge.Operation: func(ctx context.Context, w *world, id string) (outbox.Row, error) {
		c, err := w.ledger.Get(ctx, id)
		return operations.ChargeRow{Charge: c}, err
	},
	refund.Operation: func(ctx context.Context, w *world, id string) (outbox.Row, error) {
		f, err := w.refunds.Get(ctx, id)
		return operations.RefundRow{Refund: f}, err
	},
	capture.OperationCapture: func(ctx context.Context, w *world, id string) (outbox.Row, error) {
		r, err := w.captures.Get(ctx, id)
		return operations.ActionRow{Row: r}, err
	},
	capture.OperationVoid: func(ctx context.Context, w *world, id string) (outbox.Row, error) {
		r, err := w.voids.Get(ctx, id)
		return operations.ActionRow{Row: r}, err
	},
}

func (r rows) Row(ctx context.Context, id string) (outbox.Row, error) {
	reg, _ := operations.ByRowID(id)
	get, ok := memoryRows[reg.Name]
	if !ok {
		return nil, fmt.Errorf("row %s: no memory ledger of its operation", id)
	}
	return get(ctx, r.w, id)
}

// lostAnswers is the acquirer whose answers are lost after it acted: the
// outcome is unknown to the service.
type lostAnswers struct{ *acquirerhttp.Client }

func (l lostAnswers) Authorize(ctx context.Context, key string, req acquirer.Request) (acquirer.Authorization, error) {
	if _, err := l.Client.Authorize(ctx, key, req); err != nil {
		return acquirer.Authorization{}, err
	}
	return acquirer.Authorization{}, fmt.Errorf("%w: the answer was lost", acquirer.ErrOutcomeUnknown)
}

func (l lostAnswers) Refund(ctx context.Context, key string, req acquirer.RefundRequest) (acquirer.Refund, error) {
	if _, err := l.Client.Refund(ctx, key, req); err != nil {
		return acquirer.Refund{}, err
	}
	return acquirer.Refund{}, fmt.Errorf("%w: the answer was lost", acquirer.ErrOutcomeUnknown)
}

func (l lostAnswers) Capture(ctx context.Context, key string, req acquirer.CaptureRequest) (acquirer.Capture, error) {
	if _, err := l.Client.Capture(ctx, key, req); err != nil {
		return acquirer.Capture{}, err
	}
	return acquirer.Capture{}, fmt.Errorf("%w: the answer was lost", acquirer.ErrOutcomeUnknown)
}

func (l lostAnswers) Void(ctx context.Context, key string, req acquirer.VoidRequest) (acquirer.Void, error) {
	if _, err := l.Client.Void(ctx, key, req); err != nil {
		return acquirer.Void{}, err
	}
	return acquirer.Void{}, fmt.Errorf("%w: the answer was lost", acquirer.ErrOutcomeUnknown)
}

// deadLetters takes what the consumer dead-letters, and forgets it.
type deadLetters struct{}

func (deadLetters) Send(context.Context, string, map[string]string) error { return nil }

// syncBuffer is a log the handlers write to from their goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// lines are the lines written so far, and forgets them.
func (b *syncBuffer) lines() iter.Seq[[]byte] {
	b.mu.Lock()
	all := bytes.Clone(b.buf.Bytes())
	b.buf.Reset()
	b.mu.Unlock()
	return func(yield func([]byte) bool) {
		for line := range bytes.Lines(all) {
			if !yield(line) {
				return
			}
		}
	}
}

func sqsEvent(arn, body string) events.SQSEvent {
	return events.SQSEvent{Records: []events.SQSMessage{{MessageId: "matrix-1", Body: body, EventSourceARN: arn, EventSource: "aws:sqs"}}}
}

func writeFixture(t *testing.T, dir string, trigger operations.Trigger, name string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err == nil {
		err = os.MkdirAll(filepath.Join(dir, string(trigger)), 0o755)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, string(trigger), name+".json"), b, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
}

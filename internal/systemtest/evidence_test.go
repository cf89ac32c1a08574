package systemtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/command"
	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/event"
	"github.com/idempotent-payments/idempay/internal/event/eventtest"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/localapi"
	"github.com/idempotent-payments/idempay/internal/obs"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/sandbox"
	"github.com/idempotent-payments/idempay/internal/tabledef"
)

// script is what the lying acquirer does to one key's traffic: it may
// change the request before the sandbox sees it (what the acquirer
// records), the answer after (what it claims), or drop the answer.
type script struct {
	request    func(map[string]any)
	answer     func(status int, body map[string]any) int
	lookup     func(body map[string]any)
	dropAnswer bool
}

// liar is a scripted acquirer in front of a sandbox: by order_id, it
// rewrites what the sandbox records or answers. It counts what reaches it.
type liar struct {
	sb      *sandbox.Server
	mu      sync.Mutex
	scripts map[string]script // by order_id
	byKey   map[string]string // the order_id of each downstream key
	calls   atomic.Int64
}

func (l *liar) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	l.calls.Add(1)
	body, _ := io.ReadAll(r.Body)
	var sc script
	if r.Method == http.MethodPost {
		var req map[string]any
		_ = json.Unmarshal(body, &req)
		order, _ := req["order_id"].(string)
		l.mu.Lock()
		sc = l.scripts[order]
		l.byKey[r.Header.Get("Idempotency-Key")] = order
		l.mu.Unlock()
		if sc.request != nil {
			sc.request(req)
			body, _ = json.Marshal(req)
		}
	} else {
		l.mu.Lock()
		if key, ok := strings.CutPrefix(r.URL.Path, "/v1/authorizations/"); ok {
			sc = l.scripts[l.byKey[key]]
		}
		l.mu.Unlock()
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	rec := httptest.NewRecorder()
	l.sb.ServeHTTP(rec, r)
	status, answer := rec.Code, rec.Body.Bytes()
	if sc.dropAnswer && r.Method == http.MethodPost {
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
			return
		}
	}
	var doc map[string]any
	if json.Unmarshal(answer, &doc) == nil {
		switch {
		case r.Method == http.MethodPost && sc.answer != nil:
			status = sc.answer(status, doc)
		case r.Method == http.MethodGet && sc.lookup != nil && status == 200:
			sc.lookup(doc)
		}
		answer, _ = json.Marshal(doc)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(answer)
}

// TestAcquirerAnswersAreEvidence: an answer that disagrees with the
// request, in each way the acquirer can disagree, is never stored as an
// outcome. The record is held: the client gets 503 CHARGE_OUTCOME_PENDING
// now and on every retry, no ledger row states terms the acquirer did not
// give, the alarm's metric is emitted, and neither a client's retry, a
// queue command nor a reconcile command reaches the acquirer again.
func TestAcquirerAnswersAreEvidence(t *testing.T) {
	t.Parallel()
	acq := &liar{sb: sandbox.New(""), byKey: map[string]string{}, scripts: map[string]script{
		"recorded-10x": {request: func(r map[string]any) { r["amount"] = r["amount"].(float64) * 10 }},
		"recorded-jpy": {request: func(r map[string]any) { r["currency"] = "JPY" }},
		"claims-10x":   {answer: func(s int, b map[string]any) int { b["amount"] = b["amount"].(float64) * 10; return s }},
		"201-declined": {answer: func(s int, b map[string]any) int {
			b["status"], b["decline_code"] = "declined", "card_declined"
			return s
		}},
		"402-captured": {answer: func(s int, b map[string]any) int { b["status"] = "captured"; delete(b, "decline_code"); return s }},
		"other-auth":   {answer: func(s int, b map[string]any) int { b["idempotency_key"] = "someone-elses"; return s }},
		"lookup-10x":   {dropAnswer: true, lookup: func(b map[string]any) { b["amount"] = b["amount"].(float64) * 10 }},
	}}
	srv := httptest.NewServer(acq)
	t.Cleanup(srv.Close)
	logs, err := os.CreateTemp(t.TempDir(), "functions-")
	if err != nil {
		t.Fatal(err)
	}
	s := newStackWith(t, localapi.StackConfig{AcquirerURL: srv.URL, Output: logs, NoEventSourceMapping: true})
	t.Cleanup(func() { appendLogs(t, logs) })

	body := func(order, method string) string {
		return fmt.Sprintf(`{"amount": 1000, "currency": "BRL", "order_id": %q, "payment_method": %q}`, order, method)
	}
	cases := []struct{ order, method, reason string }{
		{"recorded-10x", "pm_card_visa", "amount_differs"},
		{"recorded-jpy", "pm_card_visa", "currency_differs"},
		{"claims-10x", "pm_card_visa", "amount_differs"},
		{"201-declined", "pm_card_visa", "http_status_disagrees_with_body"},
		{"402-captured", "pm_card_declined", "http_status_disagrees_with_body"},
		{"other-auth", "pm_card_visa", "idempotency_key_differs"},
		{"lookup-10x", "pm_card_visa", "amount_differs"},
	}
	for _, c := range cases {
		key := "evidence-" + c.order
		r := postCharge(t, s, "acct_q", key, body(c.order, c.method))
		if c.order == "lookup-10x" { // the answer was lost: pending; the retry's lookup is the lie
			expect(t, r, 503, "CHARGE_OUTCOME_PENDING")
			r = postCharge(t, s, "acct_q", key, body(c.order, c.method))
		}
		expect(t, r, 503, "CHARGE_OUTCOME_PENDING")
		if r.header.Get("Retry-After") == "" {
			t.Errorf("%s: a 503 without Retry-After", c.order)
		}
		rec := heldRecord(t, s, "acct_q", key)
		if rec.Hold.Reason != c.reason {
			t.Errorf("%s: held for %q, want %q", c.order, rec.Hold.Reason, c.reason)
		}
	}
	if n := ledgerRows(t, s); n != 0 {
		t.Fatalf("%d ledger rows after answers that all disagree, want 0", n)
	}

	// Nothing reaches the acquirer again: retries, a charge command for the
	// same key, a reconcile command.
	calls := acq.calls.Load()
	var batch events.SQSEvent
	for i, c := range cases {
		key := "evidence-" + c.order
		expect(t, postCharge(t, s, "acct_q", key, body(c.order, c.method)), 503, "CHARGE_OUTCOME_PENDING")
		msg, err := command.Charge("acct_q", key, []byte(body(c.order, c.method))).Encode()
		if err != nil {
			t.Fatal(err)
		}
		batch.Records = append(batch.Records, events.SQSMessage{MessageId: fmt.Sprintf("held-%d", i), Body: msg, EventSource: "aws:sqs", EventSourceARN: s.QueueARN})
		reconcileNow(t, s, idem.Scope{Operation: charge.Operation, Account: "acct_q", Key: key}.PK())
	}
	deliverAllDone(t, s, batch, "a command on a held record is done, never retried into the DLQ")
	if n := acq.calls.Load() - calls; n != 0 {
		t.Fatalf("held records reached the acquirer %d more times", n)
	}
	for _, q := range []string{s.DLQURL, s.RejectedURL} {
		if !queueEmpty(t, s, q) {
			t.Fatalf("a command on a held record was dead-lettered or rejected (%s)", q)
		}
	}
	for _, c := range cases {
		if rec := heldRecord(t, s, "acct_q", "evidence-"+c.order); rec.Attempt > 2 {
			t.Errorf("%s: attempt %d after the refusals", c.order, rec.Attempt)
		}
	}
	if n := ledgerRows(t, s); n != 0 {
		t.Fatalf("%d ledger rows", n)
	}

	// The alarm's metric, once per mismatch; the sweeper counts the held.
	r, err := s.Sweep(context.Background())
	if err != nil || r.Held != len(cases) || r.Flagged != 0 {
		t.Fatalf("sweep: %+v, %v; want %d held, none flagged", r, err, len(cases))
	}
	if n := requestOutcomes(t, logs.Name(), op.Mismatch.String()); n != len(cases) {
		t.Fatalf("%d request lines with outcome %s, want %d", n, op.Mismatch, len(cases))
	}

	// Each hold is one held event, to the HTTP subscriber, once.
	held := distinctEvents(t, s, eventtest.Schema(t), event.ProducerHTTP, len(cases), 30*time.Second)
	for _, e := range held {
		if e.Type != event.Held || e.Reason == "" {
			t.Fatalf("held events %+v", held)
		}
	}
	if len(held) != len(cases) {
		t.Fatalf("%d distinct held events, want %d: %+v", len(held), len(cases), held)
	}
}

// heldRecord reads the record of (account, key) and fails unless held.
func heldRecord(t *testing.T, s *localapi.Stack, account, key string) *idem.Record {
	t.Helper()
	pk := idem.Scope{Operation: charge.Operation, Account: account, Key: key}.PK()
	rec, err := dynamo.Open(s.DynamoDB, s.TableName).Store().Get(context.Background(), pk, time.Now())
	if err != nil || !rec.Held() {
		t.Fatalf("record of %s: %+v, %v; want held", key, rec, err)
	}
	return rec
}

// ledgerRows counts the table's ledger rows (not the markers at a row's
// key).
func ledgerRows(t *testing.T, s *localapi.Stack) int {
	t.Helper()
	out, err := s.DynamoDB.Scan(context.Background(), &dynamodb.ScanInput{
		TableName: aws.String(s.TableName), Select: "COUNT", ConsistentRead: aws.Bool(true),
		FilterExpression:         aws.String("begins_with(pk, :ledger) AND #type = :row"),
		ExpressionAttributeNames: map[string]string{"#type": tabledef.TypeAttribute},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":ledger": &types.AttributeValueMemberS{Value: tabledef.LedgerPrefix},
			":row":    &types.AttributeValueMemberS{Value: tabledef.ChargeRowType},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return int(out.Count)
}

// requestOutcomes counts the request lines in path whose outcome is
// outcome: each is one count of the Requests metric by that outcome
// (obs.LineMetrics).
func requestOutcomes(t *testing.T, path, outcome string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		var doc map[string]any
		if json.Unmarshal([]byte(line), &doc) == nil && doc[obs.KeyMessage] == obs.MessageRequest && doc[obs.KeyOutcome] == outcome {
			n++
		}
	}
	return n
}

// appendLogs adds a stack's own log file to the suite's, so the suite's
// scan reads it too.
func appendLogs(t *testing.T, f *os.File) {
	b, err := os.ReadFile(f.Name())
	if err != nil {
		t.Error(err)
		return
	}
	_, _ = functionLogs.Write(b)
	f.Close()
}

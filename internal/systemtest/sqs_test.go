package systemtest_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/idempotent-payments/idempay/internal/command"
	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/localapi"
)

func chargeCommand(account, key, request string) string {
	b, err := command.Charge(account, key, []byte(request)).Encode()
	if err != nil {
		panic(err)
	}
	return b
}

func send(t *testing.T, s *localapi.Stack, body string) {
	t.Helper()
	if _, err := s.SQS.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(s.QueueURL), MessageBody: aws.String(body)}); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: still waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// deliverAllDone hands batch to the stack's consumer and fails the test
// unless every message is done (no batch item failure); why says what that
// means for the test.
func deliverAllDone(t *testing.T, s *localapi.Stack, batch events.SQSEvent, why string) {
	t.Helper()
	payload, _ := json.Marshal(batch)
	out, err := s.Consumer.Invoke(context.Background(), payload)
	if err != nil {
		t.Fatal(err)
	}
	var resp events.SQSEventResponse
	if err := json.Unmarshal(out, &resp); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("the consumer answered %s: %s", out, why)
	}
}

func queueEmpty(t *testing.T, s *localapi.Stack, url string) bool {
	t.Helper()
	out, err := s.SQS.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll},
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.Attributes["ApproximateNumberOfMessages"] == "0" && out.Attributes["ApproximateNumberOfMessagesNotVisible"] == "0" &&
		out.Attributes["ApproximateNumberOfMessagesDelayed"] == "0"
}

// deliver invokes pool with msgs as the event source mapping of the queue
// arn would, and returns its answer.
func deliver(t *testing.T, pool *localapi.Pool, arn string, msgs []types.Message) events.SQSEventResponse {
	t.Helper()
	ev := events.SQSEvent{}
	for _, m := range msgs {
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: *m.MessageId, ReceiptHandle: *m.ReceiptHandle, Body: *m.Body, EventSource: "aws:sqs", EventSourceARN: arn})
	}
	payload, _ := json.Marshal(ev)
	out, err := pool.Invoke(context.Background(), payload)
	if err != nil {
		t.Fatal(err)
	}
	var resp events.SQSEventResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatalf("the function answered %s", out)
	}
	return resp
}

func receiveAll(t testing.TB, s *localapi.Stack, url string, want int, within time.Duration) []types.Message {
	t.Helper()
	var got []types.Message
	deadline := time.Now().Add(within)
	for len(got) < want && time.Now().Before(deadline) {
		out, err := s.SQS.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1, MessageAttributeNames: []string{"All"},
		})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, out.Messages...)
	}
	return got
}

// TestQueueAndHTTPShareOneKey: the same charge 5 times on the queue and once
// over HTTP, one key: one authorization, one ledger row.
func TestQueueAndHTTPShareOneKey(t *testing.T) {
	t.Parallel()
	s := newStackWith(t, localapi.StackConfig{VisibilityTimeout: 5 * time.Second})
	s.Commands.Record()
	for range 5 {
		send(t, s, chargeCommand("acct_q", "queue-and-http-1", visa))
	}
	r := postCharge(t, s, "acct_q", "queue-and-http-1", visa)
	if r.status != 201 && r.status != 409 {
		t.Fatalf("HTTP: %d %s", r.status, r.body)
	}
	waitFor(t, 30*time.Second, "the queue to drain", func() bool { return queueEmpty(t, s, s.QueueURL) })
	if st, _ := recordStatus(t, s, "acct_q", "queue-and-http-1"); st != "COMPLETED" {
		t.Fatalf("record %q", st)
	}
	if n := authorizations(s); n != 1 {
		t.Fatalf("%d authorizations, want 1", n)
	}
	if n := items(t, s); n != 2 {
		t.Fatalf("%d items, want the record and one ledger row", n)
	}
	if !queueEmpty(t, s, s.DLQURL) || !queueEmpty(t, s, s.RejectedURL) {
		t.Fatal("a duplicate was dead-lettered; duplicates are replays")
	}
	// The stack timed each command from its send to its handling.
	times := s.Commands.Take()
	if len(times) != 5 {
		t.Fatalf("%d commands timed, 5 handled", len(times))
	}
	for _, d := range times {
		if d < 0 || d > 30*time.Second {
			t.Fatalf("a command's time %s", d)
		}
	}
}

// TestMixedBatch delivers one batch by hand: a good command, one in flight,
// a reused key and a transient failure.
func TestMixedBatch(t *testing.T) {
	t.Parallel()
	s := newStackWith(t, localapi.StackConfig{NoEventSourceMapping: true})
	ctx := context.Background()
	if r := postCharge(t, s, "acct_m", "mixed-reused-1", visa); r.status != 201 {
		t.Fatalf("setup: %d", r.status)
	}
	guard := idem.NewGuard(dynamo.Open(s.DynamoDB, s.TableName).Store(), idem.Config{})
	busy := `{"amount": 300, "currency": "BRL", "order_id": "busy", "payment_method": "pm_card_visa"}`
	if _, err := guard.Begin(ctx, idem.Scope{Operation: "charge", Account: "acct_m", Key: "mixed-busy-1"}, canonicalOf(t, busy)); err != nil {
		t.Fatal(err) // a live lease: another worker is on it
	}
	bodies := map[string]string{
		"good":      chargeCommand("acct_m", "mixed-good-1", visa),
		"in-flight": chargeCommand("acct_m", "mixed-busy-1", busy),
		"reused":    chargeCommand("acct_m", "mixed-reused-1", `{"amount": 1, "currency": "BRL", "order_id": "x", "payment_method": "pm_card_visa"}`),
		"transient": chargeCommand("acct_m", "mixed-transient-1", `{"amount": 5, "currency": "BRL", "order_id": "t", "payment_method": "pm_card_processing_error"}`),
	}
	for _, b := range bodies {
		send(t, s, b)
	}
	msgs := receiveAll(t, s, s.QueueURL, 4, 10*time.Second)
	if len(msgs) != 4 {
		t.Fatalf("received %d of 4", len(msgs))
	}
	names := map[string]string{}
	for _, m := range msgs {
		for name, b := range bodies {
			if b == *m.Body {
				names[*m.MessageId] = name
			}
		}
	}
	resp := deliver(t, s.Consumer, s.QueueARN, msgs)
	var failed []string
	for _, f := range resp.BatchItemFailures {
		failed = append(failed, names[f.ItemIdentifier])
	}
	slices.Sort(failed)
	if !slices.Equal(failed, []string{"in-flight", "transient"}) {
		t.Fatalf("batchItemFailures = %v, want in-flight and transient", failed)
	}
	dead := receiveAll(t, s, s.RejectedURL, 1, 5*time.Second)
	if len(dead) != 1 || *dead[0].Body != bodies["reused"] ||
		aws.ToString(dead[0].MessageAttributes["reject_code"].StringValue) != "IDEMPOTENCY_KEY_REUSED" ||
		aws.ToString(dead[0].MessageAttributes["reject_reason"].StringValue) == "" {
		t.Fatalf("DLQ: %+v", dead)
	}
	// The in-flight message is hidden until the owner's lease (60 s) has
	// ended plus T + skew, not for the short Retry-After; the transient one
	// comes back with the queue's visibility timeout (30 s).
	if back := receiveAll(t, s, s.QueueURL, 1, 3*time.Second); len(back) != 0 {
		t.Fatalf("a message came back within 3 s: %v", back)
	}
	if st, _ := recordStatus(t, s, "acct_m", "mixed-good-1"); st != "COMPLETED" {
		t.Fatalf("good command: record %q", st)
	}
}

// TestTransientFailureEndsInTheDLQ: a command that keeps failing
// transiently is retried by SQS, then redriven to the DLQ by the queue's
// policy, never charged.
func TestTransientFailureEndsInTheDLQ(t *testing.T) {
	t.Parallel()
	s := newStackWith(t, localapi.StackConfig{VisibilityTimeout: time.Second, MaxReceives: 2})
	body := chargeCommand("acct_t", "always-transient-1", `{"amount": 5, "currency": "BRL", "order_id": "t", "payment_method": "pm_card_processing_error"}`)
	send(t, s, body)
	dead := receiveAll(t, s, s.DLQURL, 1, 20*time.Second)
	if len(dead) != 1 || *dead[0].Body != body {
		t.Fatalf("DLQ: %v", dead)
	}
	if n := authorizations(s); n != 0 {
		t.Fatalf("%d authorizations", n)
	}
}

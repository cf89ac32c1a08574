package systemtest_test

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/idempotent-payments/idempay/internal/command"
	"github.com/idempotent-payments/idempay/internal/event"
	"github.com/idempotent-payments/idempay/internal/localapi"
)

// eventSchema is docs/events.schema.json, compiled.
func eventSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	b, err := os.ReadFile("../../docs/events.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("events.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("events.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// distinctEvents reads subscriber's outcome queue until it has want
// distinct events (by id: delivery is at least once, and a repeat is the
// same event), then for 2 s more, and returns them in order of first
// arrival; every message is checked against the schema, and a repeat must
// equal its first.
func distinctEvents(t *testing.T, s *localapi.Stack, schema *jsonschema.Schema, subscriber string, want int, within time.Duration) []event.Event {
	t.Helper()
	var got []event.Event
	byID := map[string]event.Event{}
	deadline := time.Now().Add(within)
	var settle time.Time
	for {
		if len(got) >= want && settle.IsZero() {
			settle = time.Now().Add(2 * time.Second)
		}
		if (!settle.IsZero() && time.Now().After(settle)) || time.Now().After(deadline) {
			return got
		}
		for _, e := range receiveEvents(t, s, schema, subscriber, 1, time.Second) {
			if first, ok := byID[e.ID]; ok {
				if !first.CreatedAt.Equal(e.CreatedAt) || first.Type != e.Type {
					t.Fatalf("%s: two events with the id %s: %+v and %+v", subscriber, e.ID, first, e)
				}
				continue
			}
			byID[e.ID] = e
			got = append(got, e)
		}
	}
}

// receiveEvents reads subscriber's outcome queue until it holds want
// events (or within passes), checking each against the schema, and
// deletes what it read.
func receiveEvents(t *testing.T, s *localapi.Stack, schema *jsonschema.Schema, subscriber string, want int, within time.Duration) []event.Event {
	t.Helper()
	var got []event.Event
	for _, m := range receiveAll(t, s, s.OutcomeQueues[subscriber], want, within) {
		_, _ = s.SQS.DeleteMessage(t.Context(), &sqs.DeleteMessageInput{QueueUrl: aws.String(s.OutcomeQueues[subscriber]), ReceiptHandle: m.ReceiptHandle})
		body := aws.ToString(m.Body)
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(body)))
		if err != nil {
			t.Fatalf("%s received %q: %v", subscriber, body, err)
		}
		if err := schema.Validate(doc); err != nil {
			t.Fatalf("%s received an event its schema refuses: %s\n%v", subscriber, body, err)
		}
		var e event.Event
		if err := json.Unmarshal([]byte(body), &e); err != nil {
			t.Fatal(err)
		}
		got = append(got, e)
	}
	return got
}

// TestOutcomeEvents: each charge path publishes exactly one event per
// event, to its producer's outcome queue and nobody else's: a first
// execution over HTTP and a decline (for http), a queue command (for its
// producer). Every event matches docs/events.schema.json.
func TestOutcomeEvents(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	schema := eventSchema(t)
	expect(t, postCharge(t, s, "acct_e", "events-http-key", visa), 201, "")
	r := postCharge(t, s, "acct_e", "events-decline-key", `{"amount": 100, "currency": "BRL", "order_id": "2", "payment_method": "pm_card_declined"}`)
	expect(t, r, 402, "CHARGE_DECLINED")
	body, err := command.Charge("acct_q", "events-queue-key", []byte(visa)).Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SQS.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: aws.String(s.QueueURL), MessageBody: aws.String(body)}); err != nil {
		t.Fatal(err)
	}
	foreign, err := command.Charge("acct_victim", "events-foreign-key", []byte(visa)).Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SQS.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: aws.String(s.QueueURL), MessageBody: aws.String(foreign)}); err != nil {
		t.Fatal(err)
	}
	httpEvents := distinctEvents(t, s, schema, event.ProducerHTTP, 2, 20*time.Second)
	queueEvents := distinctEvents(t, s, schema, testProducer.Name, 2, 20*time.Second)
	types := map[string]event.Type{}
	for _, e := range append(httpEvents, queueEvents...) {
		types[e.IdempotencyKey] = e.Type
	}
	if len(httpEvents) != 2 || len(queueEvents) != 2 || types["events-http-key"] != event.Captured || types["events-decline-key"] != event.Declined ||
		types["events-queue-key"] != event.Captured || types["events-foreign-key"] != event.Rejected ||
		queueEvents[0].Producer != testProducer.Name || httpEvents[0].Producer != event.ProducerHTTP {
		t.Fatalf("http %+v, queue %+v", httpEvents, queueEvents)
	}
	for subscriber := range s.OutcomeQueues { // anything more would have arrived by now
		if more := distinctEvents(t, s, schema, subscriber, 0, 2*time.Second); len(more) != 0 {
			t.Fatalf("%s's outcome queue holds an event more: %+v", subscriber, more)
		}
	}
}

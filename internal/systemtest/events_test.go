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

// receiveEvents reads subscriber's outcome queue until it holds want
// events (or within passes), checking each against the schema.
func receiveEvents(t *testing.T, s *localapi.Stack, schema *jsonschema.Schema, subscriber string, want int, within time.Duration) []event.Event {
	t.Helper()
	var got []event.Event
	for _, m := range receiveAll(t, s, s.OutcomeQueues[subscriber], want, within) {
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
	httpEvents := receiveEvents(t, s, schema, event.ProducerHTTP, 2, 20*time.Second)
	queueEvents := receiveEvents(t, s, schema, testProducer.Name, 1, 20*time.Second)
	types := map[string]event.Type{}
	for _, e := range append(httpEvents, queueEvents...) {
		types[e.IdempotencyKey] = e.Type
	}
	if len(httpEvents) != 2 || len(queueEvents) != 1 || types["events-http-key"] != event.Captured || types["events-decline-key"] != event.Declined ||
		types["events-queue-key"] != event.Captured || queueEvents[0].Producer != testProducer.Name || httpEvents[0].Producer != event.ProducerHTTP {
		t.Fatalf("http %+v, queue %+v", httpEvents, queueEvents)
	}
	for subscriber, url := range s.OutcomeQueues { // anything more would have arrived by now
		if more := receiveAll(t, s, url, 1, 2*time.Second); len(more) != 0 {
			t.Fatalf("%s's outcome queue holds an event more: %s", subscriber, aws.ToString(more[0].Body))
		}
	}
}

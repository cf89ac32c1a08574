package systemtest_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/idempotent-payments/idempay/internal/command"
	"github.com/idempotent-payments/idempay/internal/event"
	"github.com/idempotent-payments/idempay/internal/event/eventtest"
	"github.com/idempotent-payments/idempay/internal/localapi"
)

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
				if !reflect.DeepEqual(first, e) { // one id, one body
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
// execution over HTTP, an authorization and a decline (for http), a queue command (for its
// producer). Every event matches docs/events.schema.json.
func TestOutcomeEvents(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	schema := eventtest.Schema(t)
	expect(t, postCharge(t, s, "acct_e", "events-http-key", visa), 201, "")
	r := postCharge(t, s, "acct_e", "events-decline-key", `{"amount": 100, "currency": "BRL", "order_id": "2", "payment_method": "pm_card_declined"}`)
	expect(t, r, 402, "CHARGE_DECLINED")
	expect(t, postCharge(t, s, "acct_e", "events-authorize-key", `{"amount": 300, "currency": "BRL", "order_id": "3", "payment_method": "pm_card_visa", "capture": false}`), 201, "")
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
	httpEvents := distinctEvents(t, s, schema, event.ProducerHTTP, 3, 20*time.Second)
	queueEvents := distinctEvents(t, s, schema, testProducer.Name, 2, 20*time.Second)
	types := map[string]event.Type{}
	for _, e := range append(httpEvents, queueEvents...) {
		types[e.IdempotencyKey] = e.Type
		if (e.Type == event.Authorized) != (e.Charge != nil && e.Charge.AuthorizationExpiresAt != nil) {
			t.Fatalf("%s: an authorization's event carries its expiry, and no other: %+v", e.Type, e.Charge)
		}
	}
	if len(httpEvents) != 3 || types["events-authorize-key"] != event.Authorized || len(queueEvents) != 2 || types["events-http-key"] != event.Captured || types["events-decline-key"] != event.Declined ||
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

// TestResentCommandRepublishes: the queue path's lookup by key. A
// producer that missed its event sends the same command again: the replay
// charges nothing, its message is deleted, nothing is dead-lettered, and
// its outcome queue receives the same event again, the same id and
// content, read from the ledger. The key sent quoted (the sf-string form
// the header allows) is the bare key: the service parses it once and the
// consumer's lookup takes the parsed key.
func TestResentCommandRepublishes(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	schema := eventtest.Schema(t)
	for _, tc := range []struct{ name, account, key string }{
		{"bare key", "acct_q", "events-resent-key"},
		{"quoted key", "acct_q", `"events-resent-quoted"`},
	} {
		body, err := command.Charge(tc.account, tc.key, []byte(visa)).Encode()
		if err != nil {
			t.Fatal(err)
		}
		send := func() {
			if _, err := s.SQS.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: aws.String(s.QueueURL), MessageBody: aws.String(body)}); err != nil {
				t.Fatal(err)
			}
		}
		send()
		first := receiveEvents(t, s, schema, testProducer.Name, 1, 20*time.Second)
		if len(first) != 1 || first[0].Type != event.Captured {
			t.Fatalf("%s: the first event: %+v", tc.name, first)
		}
		send()
		again := receiveEvents(t, s, schema, testProducer.Name, 1, 20*time.Second)
		if len(again) != 1 || again[0].ID != first[0].ID || *again[0].Charge != *first[0].Charge || !again[0].CreatedAt.Equal(first[0].CreatedAt) {
			t.Fatalf("%s: the resent command's event %+v, want the first again %+v", tc.name, again, first)
		}
		waitFor(t, 10*time.Second, tc.name+": the resent command deleted as replayed", func() bool { return queueEmpty(t, s, s.QueueURL) })
		if !queueEmpty(t, s, s.DLQURL) || !queueEmpty(t, s, s.RejectedURL) {
			t.Fatalf("%s: a replayed command was dead-lettered", tc.name)
		}
	}
	if n := authorizations(s); n != 2 {
		t.Fatalf("%d authorizations, want 2 (one per intent)", n)
	}
}

// TestOutcomeFilters: with two producers, each outcome queue gets its own
// producer's events and no other's, whatever the accounts.
func TestOutcomeFilters(t *testing.T) {
	t.Parallel()
	billing := localapi.Producer{Name: "billing", Accounts: []string{"acct_b"}}
	s := newStackWith(t, localapi.StackConfig{Producers: []localapi.Producer{testProducer, billing}})
	schema := eventtest.Schema(t)
	for producer, account := range map[string]string{testProducer.Name: "acct_q", billing.Name: "acct_b"} {
		for i := range 2 {
			body, err := command.Charge(account, fmt.Sprintf("filter-%s-%d-key", producer, i), []byte(visa)).Encode()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.SQS.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: aws.String(s.Queues[producer].URL), MessageBody: aws.String(body)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, producer := range []string{testProducer.Name, billing.Name} {
		got := distinctEvents(t, s, schema, producer, 2, 20*time.Second)
		if len(got) != 2 {
			t.Fatalf("%s got %d events, want its 2", producer, len(got))
		}
		for _, e := range got {
			if e.Producer != producer || e.Type != event.Captured {
				t.Fatalf("%s's outcome queue got %+v", producer, e)
			}
		}
	}
	if got := distinctEvents(t, s, schema, event.ProducerHTTP, 0, 2*time.Second); len(got) != 0 {
		t.Fatalf("the HTTP subscriber got the producers' events: %+v", got)
	}
}

// snsProxy stands between the functions and the SNS emulator: up, down
// (every request answered 503, as an outage), or slow.
type snsProxy struct {
	target   *url.URL
	mode     atomic.Int32 // 0 up, 1 down, 2 slow
	inFlight atomic.Int32
}

func (p *snsProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch p.mode.Load() {
	case 1:
		http.Error(w, "outage", http.StatusServiceUnavailable)
		return
	case 2:
		p.inFlight.Add(1)
		defer p.inFlight.Add(-1)
		time.Sleep(2 * time.Second)
	}
	httputil.NewSingleHostReverseProxy(p.target).ServeHTTP(w, r)
}

// TestEventsSurviveAnOutageAndACrash: the topic is down while charges
// complete, then the publisher is killed in the middle of a batch; every
// event still arrives, a repeat carries the same id, and none is missing.
func TestEventsSurviveAnOutageAndACrash(t *testing.T) {
	t.Parallel()
	target, err := url.Parse(os.Getenv("AWS_ENDPOINT_URL_SNS"))
	if err != nil || target.Host == "" {
		t.Fatalf("AWS_ENDPOINT_URL_SNS=%q: run `make test`", os.Getenv("AWS_ENDPOINT_URL_SNS"))
	}
	proxy := &snsProxy{target: target}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	s := newStackWith(t, localapi.StackConfig{Env: []string{"AWS_ENDPOINT_URL_SNS=" + srv.URL}})
	schema := eventtest.Schema(t)

	proxy.mode.Store(1) // the topic is down
	for i := range 3 {
		expect(t, postCharge(t, s, "acct_e", fmt.Sprintf("outage-key-%d", i), visa), 201, "")
	}
	if got := distinctEvents(t, s, schema, event.ProducerHTTP, 0, 3*time.Second); len(got) != 0 {
		t.Fatalf("events published through an outage: %+v", got)
	}
	proxy.mode.Store(2) // back, slowly: the publisher is killed mid-batch
	waitFor(t, 20*time.Second, "a publish in flight", func() bool { return proxy.inFlight.Load() > 0 })
	if killed := s.Publisher.KillBusy(); killed != 1 {
		t.Fatalf("killed %d publishers, want 1", killed)
	}
	proxy.mode.Store(0)
	got := distinctEvents(t, s, schema, event.ProducerHTTP, 3, 40*time.Second)
	keys := map[string]bool{}
	for _, e := range got {
		keys[e.IdempotencyKey] = e.Type == event.Captured
	}
	if len(got) != 3 || !keys["outage-key-0"] || !keys["outage-key-1"] || !keys["outage-key-2"] {
		t.Fatalf("after the outage and the crash: %+v", got)
	}
}

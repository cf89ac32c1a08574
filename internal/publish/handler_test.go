package publish

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"maps"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/dynamo/dynamotest"
	"github.com/idempotent-payments/idempay/internal/event"
	"github.com/idempotent-payments/idempay/internal/outbox"
	"github.com/idempotent-payments/idempay/internal/streamfilter"
	"github.com/idempotent-payments/idempay/internal/tabledef"
)

// topicFunc is a Topic that the test scripts.
type topicFunc func(event.Event) error

func (f topicFunc) Publish(_ context.Context, e event.Event) error { return f(e) }

// streamOf is the stream of a fresh DynamoDB Local table with one change
// of every kind (dynamotest.WriteEveryKind), as Lambda delivers it.
func streamOf(t *testing.T) events.DynamoDBEvent {
	t.Helper()
	ddb := dynamotest.Client(t)
	table := dynamotest.NewTable(t, ddb)
	dynamotest.WriteEveryKind(t, ddb, table)
	return dynamotest.Stream(t, ddb, table)
}

// TestFiltersPassWhatMakesAnEvent: of the real stream records of a row's
// insert, a claim, a hold, the operator's take-over, a release, a
// refund row's insert, an authorization's row's insert and its expired
// mark, the trigger's filters (streamfilter.For, deployed and applied
// locally), in one region and in a region of several (whose own rows and
// rows of no region pass, as these are), pass exactly those that make an
// event.
func TestFiltersPassWhatMakesAnEvent(t *testing.T) {
	t.Parallel()
	passed := 0
	for _, r := range streamOf(t).Records {
		c, err := dynamo.Change(r)
		if err != nil {
			t.Fatal(err)
		}
		evs, err := outbox.Events(c)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(r)
		ok, err := streamfilter.For("").Match(b)
		if err != nil {
			t.Fatal(err)
		}
		if inRegion, err := streamfilter.For("us-east-2").Match(b); err != nil || inRegion != ok {
			t.Errorf("%s of %s: filter %v in one region, %v (%v) in us-east-2", r.EventName, r.Change.Keys["pk"].String(), ok, inRegion, err)
		}
		if ok != (len(evs) > 0) {
			t.Errorf("%s of %s: filter %v, events %d", r.EventName, r.Change.Keys["pk"].String(), ok, len(evs))
		}
		if ok {
			passed++
		}
	}
	if passed != 6 {
		t.Fatalf("%d records passed, want the row, the hold, the release, the refund row, the authorization's row and its expiry", passed)
	}
}

// TestMarkersMakeNoEvent: of the real stream records of the markers at a
// row's key (dynamotest.WriteMarkers: a held marker put, then deleted
// for its row; a held marker replaced by a voided one; voided markers put
// on a charge's and a refund's key), every one decodes, the filters of
// one region and of a region of several pass only the row's insert, and
// only it makes an event, the row's.
func TestMarkersMakeNoEvent(t *testing.T) {
	t.Parallel()
	ddb := dynamotest.Client(t)
	table := dynamotest.NewTable(t, ddb)
	dynamotest.WriteMarkers(t, ddb, table)
	records := dynamotest.Stream(t, ddb, table).Records
	if len(records) != 7 {
		t.Fatalf("%d stream records, want 7", len(records))
	}
	var made []event.Type
	for _, r := range records {
		c, err := dynamo.Change(r)
		if err != nil {
			t.Fatalf("%s of %s: %v", r.EventName, r.Change.Keys["pk"].String(), err)
		}
		evs, err := outbox.Events(c)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			made = append(made, e.Type)
		}
		b, _ := json.Marshal(r)
		for _, region := range []string{"", "region-a"} {
			ok, err := streamfilter.For(region).Match(b)
			if err != nil || ok != (len(evs) > 0) {
				t.Errorf("%q: %s of %s: filter %v (%v), events %d", region, r.EventName, r.Change.Keys["pk"].String(), ok, err, len(evs))
			}
		}
	}
	if len(made) != 1 || made[0] != event.Captured {
		t.Fatalf("events %v, want the row's captured alone", made)
	}
}

// TestReleaseReadsTheSameInEveryRegion: every region publishes a held
// record's release, each from its own replica's stream record, and the
// replicas stamp their records with times of their own. The event is byte
// for byte the same from each, since every field comes from the record the
// void deleted (the release's time is its settling take-over's), never
// from the stream.
func TestReleaseReadsTheSameInEveryRegion(t *testing.T) {
	t.Parallel()
	var here events.DynamoDBEventRecord
	for _, r := range streamOf(t).Records {
		if r.EventName == string(events.DynamoDBOperationTypeRemove) {
			here = r
		}
	}
	if here.EventName == "" {
		t.Fatal("the stream has no release")
	}
	there := here
	there.AWSRegion, there.Change.SequenceNumber = "eu-west-1", "999"
	there.Change.ApproximateCreationDateTime = events.SecondsEpochTime{Time: here.Change.ApproximateCreationDateTime.Add(3 * time.Second)}
	var bodies [][]byte
	h := &Handler{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Topic: topicFunc(func(e event.Event) error {
		b, err := e.Encode()
		bodies = append(bodies, b)
		return err
	})}
	for _, r := range []events.DynamoDBEventRecord{here, there} {
		if resp, err := h.Handle(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{r}}); err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("Handle: %+v, %v", resp, err)
		}
	}
	if len(bodies) != 2 || string(bodies[0]) != string(bodies[1]) {
		t.Fatalf("one release, two bodies:\n%s\n%s", bodies[0], bodies[1])
	}
	c, err := dynamo.Change(here)
	if err != nil {
		t.Fatal(err)
	}
	var e event.Event
	if err := json.Unmarshal(bodies[0], &e); err != nil || e.Type != event.Released || !e.CreatedAt.Equal(c.OldRecord.Hold.Settling.At.UTC()) {
		t.Fatalf("the release %s (%v), want created_at the void's settling take-over's %s", bodies[0], err, c.OldRecord.Hold.Settling.At)
	}
}

// TestPublishesTheStreamsEvents: of a row's insert, a claim, a hold, the
// operator's take-over, a release, a refund row, an authorization's row
// and its expired mark, the publisher publishes captured, held,
// released, refund succeeded, authorized and expired, in order; a failed publish reports its record, and a
// record that does not decode is skipped.
func TestPublishesTheStreamsEvents(t *testing.T) {
	t.Parallel()
	ev := streamOf(t)
	var got []event.Event
	h := &Handler{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Topic: topicFunc(func(e event.Event) error { got = append(got, e); return nil })}
	resp, err := h.Handle(context.Background(), ev)
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("Handle: %+v, %v", resp, err)
	}
	want := []event.Type{event.Captured, event.Held, event.Released, event.RefundSucceeded, event.Authorized, event.Expired}
	if len(got) != len(want) {
		t.Fatalf("published %+v from %d records, want %v", got, len(ev.Records), want)
	}
	for i, e := range got {
		if e.Type != want[i] {
			t.Fatalf("event %d is %s, want %s", i, e.Type, want[i])
		}
	}
	if got[0].Producer != "orders" || got[0].IdempotencyKey != "publish-key-1" || got[1].Producer != event.ProducerHTTP || got[1].Reason != "amount_differs" ||
		got[1].Charge.ID != got[2].Charge.ID || got[1].ID == got[2].ID || got[3].Refund == nil || got[3].Refund.Amount != 40 || got[3].Producer != event.ProducerHTTP {
		t.Fatalf("events %+v", got)
	}
	// The expiry: the authorization's charge, expired at its expiry, for
	// the producer whose command made it.
	if a, x := got[4], got[5]; x.Charge.ID != a.Charge.ID || x.Charge.Status != event.StatusExpired || x.Producer != "orders" ||
		x.IdempotencyKey != "publish-key-4" || !x.CreatedAt.Equal(*a.Charge.AuthorizationExpiresAt) || x.ID == a.ID {
		t.Fatalf("the expiry %+v of %+v", x.Charge, a.Charge)
	}

	// The topic fails on the hold: the batch's failure is the hold's record.
	published := 0
	h.Topic = topicFunc(func(e event.Event) error {
		if e.Type == event.Held {
			return errors.New("topic down")
		}
		published++
		return nil
	})
	resp, _ = h.Handle(context.Background(), ev)
	var holdSeq string
	for _, r := range ev.Records {
		if c, _ := dynamo.Change(r); c.NewRecord != nil && c.NewRecord.Held() && (c.OldRecord == nil || !c.OldRecord.Held()) {
			holdSeq = r.Change.SequenceNumber
		}
	}
	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != holdSeq || published != 1 {
		t.Fatalf("with the topic failing on the hold: %+v (hold %s), %d published before", resp, holdSeq, published)
	}

	// A record that does not decode is skipped; the rest is published.
	bad := ev
	bad.Records = append([]events.DynamoDBEventRecord{{EventName: "INSERT", Change: events.DynamoDBStreamRecord{
		Keys:           map[string]events.DynamoDBAttributeValue{"pk": events.NewStringAttribute(tabledef.LedgerPrefix + "ch_x")},
		NewImage:       map[string]events.DynamoDBAttributeValue{"pk": events.NewStringAttribute(tabledef.LedgerPrefix + "ch_x"), "type": events.NewStringAttribute("other")},
		SequenceNumber: "0"}}}, ev.Records...)
	got = nil
	h.Topic = topicFunc(func(e event.Event) error { got = append(got, e); return nil })
	if resp, _ := h.Handle(context.Background(), bad); len(resp.BatchItemFailures) != 0 || len(got) != len(want) {
		t.Fatalf("with an undecodable record first: %+v, %d published", resp, len(got))
	}

	// A row that decodes but whose status is no outcome makes no event:
	// skipped as undecodable, never a failure the stream would redeliver
	// for ever.
	pending := ev
	row := ev.Records[0] // the ledger row's insert
	image := maps.Clone(row.Change.NewImage)
	image["status"] = events.NewStringAttribute("pending")
	row.Change.NewImage = image
	pending.Records = append([]events.DynamoDBEventRecord{row}, ev.Records...)
	got = nil
	if resp, _ := h.Handle(context.Background(), pending); len(resp.BatchItemFailures) != 0 || len(got) != len(want) {
		t.Fatalf("with a row of no outcome first: %+v, %d published", resp, len(got))
	}
}

// Package publish turns the table's stream records into the outcome
// events of every operation (package outbox decides which) and publishes them: the publisher
// function's handler, and the operator's republish of a stream range,
// which runs the same handler.
package publish

import (
	"context"
	"errors"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/event"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/obs"
	"github.com/idempotent-payments/idempay/internal/outbox"
	"github.com/idempotent-payments/idempay/internal/tabledef"
)

// Topic is where the events go.
type Topic interface {
	Publish(ctx context.Context, e event.Event) error
}

// Handler publishes the events of a batch of the table's stream records
// (outbox.Events), in order, and reports the first record it could not
// publish as the batch's failure, so the stream redelivers from there:
// what was published before it is published again, and the events' ids
// make that the same events. A record that cannot be decoded would fail
// on every redelivery: it is logged (ERROR) and skipped, and its charge
// can be republished from the ledger.
type Handler struct {
	Topic  Topic
	Logger *slog.Logger
	// Metrics gets one EMF line per invocation that skipped a record or
	// failed its batch, the counts the alarms read; an invocation that
	// published every record writes none (the topic's own
	// NumberOfMessagesPublished counts the events). Nil skips it.
	Metrics *obs.Metrics
	// Books, in the multi-region mode, records each ledger row, of any
	// operation, published once its event is (Row), so no other region
	// takes it over; a row whose mark fails is reported as the batch's failure, as a failed
	// publish is. Nil in one region, where nothing takes over.
	Books charge.Books
}

// Handle publishes ev's records' events.
func (h *Handler) Handle(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	published, undecodable := 0, 0
	resp := events.DynamoDBEventResponse{}
	for _, r := range ev.Records {
		change, err := dynamo.Change(r)
		if err != nil {
			undecodable++
			h.Logger.ErrorContext(obs.WithAttrs(ctx, slog.String("record", refOf(r)), slog.String("messageId", r.Change.SequenceNumber)),
				"a stream record does not decode; skipped: republish its charge or refund from its row", "error", err)
			continue
		}
		if change.Inserted != nil {
			err = Row(ctx, h.Topic, h.Books, change.Inserted)
			if err == nil {
				published++
			}
		} else {
			var n int
			n, err = publishChange(ctx, h.Topic, change)
			published += n
		}
		if errors.Is(err, outbox.ErrUnreadable) {
			undecodable++
			h.Logger.ErrorContext(obs.WithAttrs(ctx, slog.String("record", refOf(r)), slog.String("messageId", r.Change.SequenceNumber)),
				"a stream record's data makes no event; skipped: a person must look at it", "error", err)
			continue
		}
		if err != nil {
			h.Logger.WarnContext(obs.WithAttrs(ctx, slog.String("record", refOf(r)), slog.String("messageId", r.Change.SequenceNumber)),
				"publish failed; the stream redelivers from this record", "error", err)
			resp.BatchItemFailures = []events.DynamoDBBatchItemFailure{{ItemIdentifier: r.Change.SequenceNumber}}
			break
		}
	}
	if h.Metrics != nil && (undecodable > 0 || len(resp.BatchItemFailures) > 0) {
		outcome := obs.OutcomePublished
		if len(resp.BatchItemFailures) > 0 {
			outcome = obs.OutcomePublishFailed
		}
		h.Metrics.Record(outcome, map[string]float64{obs.MetricEventsPublished: float64(published), obs.MetricStreamUndecodable: float64(undecodable)})
	}
	return resp, nil
}

// Row publishes the event of the ledger row r, of any operation
// (outbox.Row.RowEvent), and then, with books, marks a row written with a
// region (the multi-region mode) published, retrying a conflict with
// another region's write (idem.RetryConflicts); a row of no region is
// listed nowhere and is not marked. An error leaves the row unpublished in
// the books; publishing it again is the same event.
func Row(ctx context.Context, topic Topic, books charge.Books, r outbox.Row) error {
	if _, err := publishChange(ctx, topic, outbox.Change{Inserted: r}); err != nil {
		return err
	}
	if books == nil || r.RowRegion() == "" {
		return nil
	}
	return idem.RetryConflicts(ctx, func() error { return books.MarkPublished(ctx, r.RowID()) })
}

// publishChange publishes the events of c (outbox.Events), in order, and
// returns how many it published.
func publishChange(ctx context.Context, topic Topic, c outbox.Change) (int, error) {
	evs, err := outbox.Events(c)
	if err != nil {
		return 0, err
	}
	for i, e := range evs {
		if err := topic.Publish(ctx, e); err != nil {
			return i, err
		}
	}
	return len(evs), nil
}

// refOf names the record a stream record is about, never by its key.
func refOf(r events.DynamoDBEventRecord) string {
	if pk := r.Change.Keys[tabledef.KeyAttribute]; pk.DataType() == events.DataTypeString {
		return idem.Ref(pk.String())
	}
	return ""
}

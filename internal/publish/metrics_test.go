package publish

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idempotent-payments/idempay/internal/event"
	"github.com/idempotent-payments/idempay/internal/obs"
)

// TestMetricsLineOnlyWhenARecordIsSkipped: an invocation whose records
// all published writes no EMF line (the topic counts its events); one
// that skips a record that does not decode writes one, with
// StreamUndecodable, which its alarm reads.
func TestMetricsLineOnlyWhenARecordIsSkipped(t *testing.T) {
	t.Parallel()
	var lines bytes.Buffer
	h := &Handler{Topic: topicFunc(func(event.Event) error { return nil }), Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Metrics: obs.NewMetrics(&lines, obs.FunctionPublisher, "test")}
	if _, err := h.Handle(context.Background(), events.DynamoDBEvent{}); err != nil || lines.Len() != 0 {
		t.Fatalf("a batch with nothing to skip: %v, wrote %q", err, lines.String())
	}
	bad := events.DynamoDBEventRecord{EventName: "INSERT", Change: events.DynamoDBStreamRecord{SequenceNumber: "1"}}
	if _, err := h.Handle(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{bad}}); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if n := strings.Count(lines.String(), "\n"); n != 1 || json.Unmarshal(lines.Bytes(), &doc) != nil || doc[obs.MetricStreamUndecodable] != 1.0 {
		t.Fatalf("a batch with an undecodable record wrote %d lines: %q", n, lines.String())
	}
}

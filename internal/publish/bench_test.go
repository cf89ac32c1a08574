package publish

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/dynamo/dynamotest"
	"github.com/idempotent-payments/idempay/internal/event"
	"github.com/idempotent-payments/idempay/internal/op"
)

// BenchmarkPublishStreamRecords is the publisher's own work per event, in
// process: a batch of 100 real stream records of ledger rows (as Lambda
// delivers them) decoded, turned into events and handed to a topic that
// keeps nothing. It reports CPU time and heap allocations per record; the
// function's process CPU per event, with the SDK's publish, is
// BenchmarkOutcomeEventLatency's publisher_cpu_ms/event.
func BenchmarkPublishStreamRecords(b *testing.B) {
	ctx := context.Background()
	ddb := dynamotest.Client(b)
	table := dynamotest.NewTable(b, ddb)
	ledger := dynamo.Open(ddb, table).Ledger()
	const batch = 100
	for i := range batch {
		row := charge.Charge{
			Origin: op.Origin{ID: charge.ID(fmt.Sprintf("%040x", i)), Account: "acct_bench",
				IdempotencyKey: fmt.Sprintf("bench-key-%d", i), Source: event.SourceHTTP,
				CreatedAt: time.Now().UTC()},
			Status: "captured", Amount: 25000, Currency: "BRL", OrderID: "123", AuthorizationID: "auth_bench",
		}
		if _, err := ledger.Write(ctx, row); err != nil {
			b.Fatal(err)
		}
	}
	ev := dynamotest.Stream(b, ddb, table)
	if len(ev.Records) != batch {
		b.Fatalf("%d stream records, want %d", len(ev.Records), batch)
	}
	published := 0
	h := &Handler{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Topic: topicFunc(func(event.Event) error { published++; return nil })}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for b.Loop() {
		if resp, err := h.Handle(ctx, events.DynamoDBEvent{Records: ev.Records}); err != nil || len(resp.BatchItemFailures) != 0 {
			b.Fatalf("Handle: %+v, %v", resp, err)
		}
	}
	runtime.ReadMemStats(&after)
	records := float64(b.N * batch)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/records, "ns/record")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/records, "allocs/record")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/records, "B/record")
	if published != b.N*batch {
		b.Fatalf("%d events published, want %d", published, b.N*batch)
	}
}

package publish_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/backstop"
	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/dynamo/dynamotest"
	"github.com/idempotent-payments/idempay/internal/event"
	"github.com/idempotent-payments/idempay/internal/event/eventtest"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/operations"
	"github.com/idempotent-payments/idempay/internal/publish"
	"github.com/idempotent-payments/idempay/internal/refund"
)

// refundIn is a succeeded refund row written by region at at.
func refundIn(region string, at time.Time, n int) refund.Refund {
	return refund.Refund{
		Origin: op.Origin{ID: refund.ID(fmt.Sprintf("%040x", n+1)), Account: "acct_t",
			IdempotencyKey: "refund-key", Source: event.SourceHTTP, AcquirerID: "sandbox",
			CreatedAt: at.UTC().Truncate(time.Millisecond), Region: region},
		ChargeID: fmt.Sprintf("ch_%040x", n+1), Status: "succeeded", Amount: 100, Currency: "BRL",
		AcquirerRefundID: "rf_1",
	}
}

// TestRefundRowsArePublishedOnce (beside the publisher's tests, which run
// on DynamoDB Local; the backstop's own run on memory): a refund row written
// with a region is listed unpublished beside the ledger rows until its
// event is published: by its own region's publisher (publish.Row,
// which marks it), or, its region stopped, by another's backstop. A row
// of no region is listed nowhere.
func TestRefundRowsArePublishedOnce(t *testing.T) {
	ctx := context.Background()
	client := dynamotest.Client(t)
	table := dynamo.Open(client, dynamotest.NewTableFor(t, client, false))
	books, refunds, topic := table.Books(), table.Refunds(), &eventtest.Topic{}
	now := time.Now().UTC().Truncate(time.Millisecond)
	own, stopped, none := refundIn("a", now.Add(-time.Minute), 0), refundIn("c", now.Add(-10*time.Minute), 1), refundIn("", now.Add(-10*time.Minute), 2)
	for _, r := range []refund.Refund{own, stopped, none} {
		if _, err := refunds.Write(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	listed := func() map[string]string {
		out := map[string]string{}
		for u, err := range books.Unpublished(ctx, now.Add(time.Hour)) {
			if err != nil {
				t.Fatal(err)
			}
			out[u.ID] = u.Region
		}
		return out
	}
	if got := listed(); len(got) != 2 || got[own.ID] != "a" || got[stopped.ID] != "c" {
		t.Fatalf("listed %v; want the two rows written with a region", got)
	}
	if err := publish.Row(ctx, topic, books, operations.RefundRow{Refund: own}); err != nil {
		t.Fatal(err)
	}
	if got := listed(); len(got) != 1 || got[stopped.ID] != "c" {
		t.Fatalf("after its region published it: listed %v", got)
	}
	takeOver := &backstop.Publisher{Region: "a", Books: books, Rows: table.Rows(), Topic: topic, StaleAfter: 3 * time.Minute}
	r, err := takeOver.Run(ctx)
	if err != nil || r.TakenOver != 1 || len(listed()) != 0 {
		t.Fatalf("the backstop: %+v, %v; listed %v", r, err, listed())
	}
	events := topic.TakeEvents()
	if len(events) != 2 || events[0].Refund.ID != own.ID || events[1].Refund.ID != stopped.ID || events[1].Type != event.RefundSucceeded {
		t.Fatalf("published %+v", events)
	}
	if again, _ := takeOver.Run(ctx); again.TakenOver != 0 || len(topic.TakeEvents()) != 0 {
		t.Fatalf("a second run took over again: %+v", again)
	}
}

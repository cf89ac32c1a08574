package publish

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/charge/chargetest"
	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/dynamo/dynamotest"
	"github.com/idempotent-payments/idempay/internal/event/eventtest"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/operations"
	"github.com/idempotent-payments/idempay/internal/streamfilter"
)

// TestRowMarksAfterPublishing: with books, a row is marked once its event
// is published, a conflict on the mark is retried, and a publish that
// fails marks nothing.
func TestRowMarksAfterPublishing(t *testing.T) {
	ctx := context.Background()
	ledger := chargetest.NewLedger()
	c := chargetest.RowIn("a", time.Now().UTC().Truncate(time.Millisecond), 0)
	if _, err := ledger.Write(ctx, c); err != nil {
		t.Fatal(err)
	}
	topic := &eventtest.Topic{Fail: errors.New("topic down")}
	books := &conflictingBooks{Books: ledger, conflicts: 2}
	if err := Row(ctx, topic, books, operations.ChargeRow{Charge: c}); err == nil || books.marks != 0 {
		t.Fatalf("a failed publish: %v, %d marks", err, books.marks)
	}
	topic.Fail = nil
	if err := Row(ctx, topic, books, operations.ChargeRow{Charge: c}); err != nil || books.marks != 3 {
		t.Fatalf("Row: %v after %d tries of the mark; want 3 (two conflicts)", err, books.marks)
	}
	for u := range ledger.Unpublished(ctx, time.Now().Add(time.Hour)) {
		t.Fatalf("%s is still unpublished", u.ID)
	}
}

// conflictingBooks refuses the first conflicts marks as another region's
// conflicting write.
type conflictingBooks struct {
	charge.Books
	conflicts, marks int
}

func (b *conflictingBooks) MarkPublished(ctx context.Context, id string) error {
	if b.marks++; b.marks <= b.conflicts {
		return idem.ErrWriteConflict
	}
	return b.Books.MarkPublished(ctx, id)
}

// TestPublishOnceAcrossRegions: on a multi-region table, region a's
// publisher is delivered only a's rows by its trigger's filters
// (streamfilter.For), and the rows of no region, which every region's is;
// it publishes them and marks a's; b's rows stay listed for b's
// publisher, or for a take-over.
func TestPublishOnceAcrossRegions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ddb := dynamotest.Client(t)
	table := dynamotest.NewTableFor(t, ddb, false)
	tbl := dynamo.Open(ddb, table)
	ledger, books := tbl.Ledger(), tbl.Books()
	at := time.Now().UTC().Truncate(time.Millisecond)
	a, b, none := chargetest.RowIn("a", at, 0), chargetest.RowIn("b", at, 1), chargetest.RowIn("", at, 2)
	for _, c := range []charge.Charge{a, b, none} {
		if _, err := ledger.Write(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	ev := dynamotest.Stream(t, ddb, table)
	for _, r := range ev.Records {
		raw, _ := json.Marshal(r)
		forA, errA := streamfilter.For("a").Match(raw)
		forB, errB := streamfilter.For("b").Match(raw)
		c, err := dynamo.Change(r)
		if errA != nil || errB != nil || err != nil || c.Inserted == nil {
			t.Fatalf("%v %v %v %+v", errA, errB, err, c)
		}
		if region := c.Inserted.RowRegion(); forA != (region != "b") || forB != (region != "a") {
			t.Fatalf("the row of %s passes a's filters %t, b's %t", c.Inserted.RowRegion(), forA, forB)
		}
	}
	topic := &eventtest.Topic{}
	h := &Handler{Topic: topic, Books: books}
	var forA []int
	for i, r := range ev.Records {
		raw, _ := json.Marshal(r)
		if ok, _ := streamfilter.For("a").Match(raw); ok {
			forA = append(forA, i)
		}
	}
	delivered := ev
	delivered.Records = nil
	for _, i := range forA {
		delivered.Records = append(delivered.Records, ev.Records[i])
	}
	if resp, err := h.Handle(ctx, delivered); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("Handle: %+v, %v", resp, err)
	}
	if got := topic.Take(); len(got) != 2 || !slices.Contains(got, a.ID) || !slices.Contains(got, none.ID) {
		t.Fatalf("a's publisher published %v, want a's row and the row of no region", got)
	}
	var left []string
	for u, err := range books.Unpublished(ctx, at.Add(time.Second)) {
		if err != nil {
			t.Fatal(err)
		}
		left = append(left, u.ID)
	}
	if len(left) != 1 || left[0] != b.ID {
		t.Fatalf("unpublished %v, want b's row only", left)
	}
}

package publish

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/charge/chargetest"
	"github.com/idempotent-payments/idempay/internal/charge/dynamoledger"
	"github.com/idempotent-payments/idempay/internal/event"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/idem/dynamostore/dynamotest"
	"github.com/idempotent-payments/idempay/internal/streamfilter"
)

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// published is a Topic that keeps what it is given.
type published struct {
	mu   sync.Mutex
	ids  []string
	fail error
}

func (p *published) Publish(_ context.Context, e event.Event) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fail != nil {
		return p.fail
	}
	p.ids = append(p.ids, e.Charge.ID)
	return nil
}

func (p *published) take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	ids := p.ids
	p.ids = nil
	return ids
}

func rowIn(region string, at time.Time, n int) charge.Charge {
	return charge.Charge{ID: charge.ChargeID(string(rune('a'+n)) + "123456789abcdef0123456789abcdef0123456"), Account: "acct_t", IdempotencyKey: "takeover-key",
		Source: event.SourceHTTP, Status: "captured", Amount: 100, Currency: "BRL", AuthorizationID: "auth", CreatedAt: at, Region: region}
}

// TestTakeOver: a region beats its heartbeat every run; it never takes
// over its own rows, nor those of a region that still beats; a stopped
// region's rows (its heartbeat older than StaleAfter, or none) are
// published once they have waited StaleAfter, once, and marked; a row
// the topic refuses stays listed for the next run.
func TestTakeOver(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	ledger := chargetest.NewLedger()
	topic := &published{}
	run := func(region string) TakeOverReport {
		t.Helper()
		r, err := (&TakeOver{Region: region, Books: ledger, Ledger: ledger, Topic: topic, StaleAfter: 3 * time.Minute,
			Now: func() time.Time { return now }}).Run(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	old := now.Add(-10 * time.Minute)
	own, live, stopped, young, silent := rowIn("a", old, 0), rowIn("b", old, 1), rowIn("c", old, 2), rowIn("c", now.Add(-time.Minute), 3), rowIn("d", old, 4)
	for _, c := range []charge.Charge{own, live, stopped, young, silent} {
		if _, err := ledger.Write(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	for region, at := range map[string]time.Time{"b": now.Add(-time.Minute), "c": now.Add(-4 * time.Minute)} {
		if err := ledger.Beat(ctx, region, at); err != nil {
			t.Fatal(err)
		}
	}
	topic.fail = errors.New("topic down")
	if _, err := (&TakeOver{Region: "a", Books: ledger, Ledger: ledger, Topic: topic, StaleAfter: 3 * time.Minute,
		Now: func() time.Time { return now }}).Run(ctx); err == nil {
		t.Fatal("a run whose publishes fail reports no error")
	}
	topic.fail = nil
	r := run("a")
	if got := topic.take(); len(got) != 2 || r.TakenOver != 2 || r.Own != 1 || r.Waiting != 1 || len(r.Stopped) != 2 || !r.Complete {
		t.Fatalf("run %+v published %v; want the stopped region's old row and the silent region's", r, got)
	}
	if at, _ := ledger.LastBeat(ctx, "a"); !at.Equal(now) {
		t.Fatalf("region a's heartbeat %v, want %v", at, now)
	}
	listed := map[string]bool{}
	for u := range ledger.Unpublished(ctx, now.Add(time.Hour)) {
		listed[u.ID] = true
	}
	if len(listed) != 3 || !listed[own.ID] || !listed[live.ID] || !listed[young.ID] {
		t.Fatalf("still unpublished %v; want the own, the live region's and the young row", listed)
	}
	if r := run("a"); len(topic.take()) != 0 || r.TakenOver != 0 {
		t.Fatalf("a second run took over again: %+v", r)
	}
	now = now.Add(3 * time.Minute) // the young row has waited long enough, and b still beats
	if err := ledger.Beat(ctx, "b", now); err != nil {
		t.Fatal(err)
	}
	if r := run("a"); len(topic.take()) != 1 || r.TakenOver != 1 {
		t.Fatalf("the young row once old: %+v", r)
	}
}

// TestRowMarksAfterPublishing: with books, a row is marked once its event
// is published, a conflict on the mark is retried, and a publish that
// fails marks nothing.
func TestRowMarksAfterPublishing(t *testing.T) {
	ctx := context.Background()
	ledger := chargetest.NewLedger()
	c := rowIn("a", time.Now().UTC().Truncate(time.Millisecond), 0)
	if _, err := ledger.Write(ctx, c); err != nil {
		t.Fatal(err)
	}
	topic := &published{fail: errors.New("topic down")}
	books := &conflictingBooks{Publication: ledger, conflicts: 2}
	if err := Row(ctx, topic, books, c); err == nil || books.marks != 0 {
		t.Fatalf("a failed publish: %v, %d marks", err, books.marks)
	}
	topic.fail = nil
	if err := Row(ctx, topic, books, c); err != nil || books.marks != 3 {
		t.Fatalf("Row: %v after %d tries of the mark; want 3 (two conflicts)", err, books.marks)
	}
	for u := range ledger.Unpublished(ctx, time.Now().Add(time.Hour)) {
		t.Fatalf("%s is still unpublished", u.ID)
	}
}

// conflictingBooks refuses the first conflicts marks as another region's
// conflicting write.
type conflictingBooks struct {
	charge.Publication
	conflicts, marks int
}

func (b *conflictingBooks) MarkPublished(ctx context.Context, id string) error {
	if b.marks++; b.marks <= b.conflicts {
		return idem.ErrWriteConflict
	}
	return b.Publication.MarkPublished(ctx, id)
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
	ledger, books := dynamoledger.New(ddb, table), dynamoledger.NewPublication(ddb, table)
	at := time.Now().UTC().Truncate(time.Millisecond)
	a, b, none := rowIn("a", at, 0), rowIn("b", at, 1), rowIn("", at, 2)
	for _, c := range []charge.Charge{a, b, none} {
		if _, err := ledger.Write(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	ev := recordsOf(t, ddb, table)
	for _, r := range ev.Records {
		raw, _ := json.Marshal(r)
		forA, errA := streamfilter.For("a").Match(raw)
		forB, errB := streamfilter.For("b").Match(raw)
		c, err := changeOf(r)
		if errA != nil || errB != nil || err != nil || c.InsertedRow == nil {
			t.Fatalf("%v %v %v %+v", errA, errB, err, c)
		}
		if region := c.InsertedRow.Region; forA != (region != "b") || forB != (region != "a") {
			t.Fatalf("the row of %s passes a's filters %t, b's %t", c.InsertedRow.Region, forA, forB)
		}
	}
	topic := &published{}
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
	if got := topic.take(); len(got) != 2 || !slices.Contains(got, a.ID) || !slices.Contains(got, none.ID) {
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

package publish

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/charge/chargetest"
	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/dynamo/dynamotest"
	"github.com/idempotent-payments/idempay/internal/event"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/streamfilter"
)

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

// TestTakeOver: a region never takes over the rows of a region that
// still beats; a stopped region's rows (its heartbeat older than
// StaleAfter, or none) are published once they have waited StaleAfter,
// once, and marked; its own rows are published once they have waited
// twice StaleAfter; then it beats. A row the topic refuses stays listed
// for the next run, and a run that could not publish its own row does not
// beat, so the others take its rows over.
func TestTakeOver(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	ledger := chargetest.NewLedger()
	topic := &published{}
	takeOver := &TakeOver{Region: "a", Books: ledger, Ledger: ledger, Topic: topic, StaleAfter: 3 * time.Minute, Now: func() time.Time { return now }}
	old := now.Add(-10 * time.Minute)
	rows := []charge.Charge{
		rowIn("a", now.Add(-5*time.Minute), 0), // its own, waiting for its publisher
		rowIn("b", old, 1),                     // a region that beats
		rowIn("c", old, 2),                     // a region that stopped
		rowIn("c", now.Add(-time.Minute), 3),   // too young
		rowIn("d", old, 4),                     // a region that never beat
		rowIn("a", old, 5),                     // its own, left behind
	}
	for _, c := range rows {
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
	if r, err := takeOver.Run(ctx); err == nil || r.Beat {
		t.Fatalf("a run whose publishes fail: %+v, %v; want an error and no beat", r, err)
	}
	if at, _ := ledger.LastBeat(ctx, "a"); !at.IsZero() {
		t.Fatalf("a region that could not publish its own row beat at %v", at)
	}
	topic.fail = nil
	r, err := takeOver.Run(ctx)
	if got := topic.take(); err != nil || len(got) != 3 || r.TakenOver != 2 || r.Republished != 1 || r.Waiting != 2 || len(r.Stopped) != 2 || !r.Beat || !r.Complete {
		t.Fatalf("run %+v, %v published %v; want the stopped and silent regions' old rows and its own old one", r, err, got)
	}
	if at, _ := ledger.LastBeat(ctx, "a"); !at.Equal(now) {
		t.Fatalf("region a's heartbeat %v, want %v", at, now)
	}
	listed := map[string]bool{}
	for u := range ledger.Unpublished(ctx, now.Add(time.Hour)) {
		listed[u.ID] = true
	}
	if len(listed) != 3 || !listed[rows[0].ID] || !listed[rows[1].ID] || !listed[rows[3].ID] {
		t.Fatalf("still unpublished %v; want its own young row, the live region's and the stopped region's young row", listed)
	}
	if r, _ := takeOver.Run(ctx); len(topic.take()) != 0 || r.TakenOver+r.Republished != 0 {
		t.Fatalf("a second run took over again: %+v", r)
	}
	now = now.Add(3 * time.Minute) // the young row has waited long enough, and b still beats
	if err := ledger.Beat(ctx, "b", now); err != nil {
		t.Fatal(err)
	}
	if r, _ := takeOver.Run(ctx); len(topic.take()) != 2 || r.TakenOver != 1 || r.Republished != 1 {
		t.Fatalf("the young rows once old: %+v", r)
	}
}

// TestTakeOverStopsAtItsDeadline: past its deadline less the margin, a run
// publishes nothing more and says it is not complete; a heartbeat it
// cannot read leaves that region's rows, and is an error.
func TestTakeOverStopsAtItsDeadline(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	ledger := chargetest.NewLedger()
	for i := range 3 {
		if _, err := ledger.Write(context.Background(), rowIn("c", now.Add(-time.Hour), i)); err != nil {
			t.Fatal(err)
		}
	}
	topic := &published{}
	ctx, cancel := context.WithDeadline(context.Background(), now.Add(time.Second))
	defer cancel()
	takeOver := &TakeOver{Region: "a", Books: ledger, Ledger: ledger, Topic: topic, StaleAfter: time.Minute, StopMargin: 2 * time.Second,
		Now: func() time.Time { return now }}
	if r, err := takeOver.Run(ctx); err != nil || r.Complete || r.TakenOver != 0 || len(topic.take()) != 0 || !r.Beat {
		t.Fatalf("a run past its deadline: %+v, %v", r, err)
	}
	takeOver.Books = &unreadableBeats{Books: ledger}
	if r, err := takeOver.Run(context.Background()); err == nil || r.TakenOver != 0 || len(topic.take()) != 0 {
		t.Fatalf("a run that cannot read the heartbeats: %+v, %v", r, err)
	}
}

// unreadableBeats cannot read any heartbeat.
type unreadableBeats struct{ charge.Books }

func (unreadableBeats) LastBeat(context.Context, string) (time.Time, error) {
	return time.Time{}, errors.New("table down")
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
	books := &conflictingBooks{Books: ledger, conflicts: 2}
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
	ledger, books := dynamo.Open(ddb, table).Ledger(), dynamo.Open(ddb, table).Books()
	at := time.Now().UTC().Truncate(time.Millisecond)
	a, b, none := rowIn("a", at, 0), rowIn("b", at, 1), rowIn("", at, 2)
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

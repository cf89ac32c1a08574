package backstop

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/charge/chargetest"
	"github.com/idempotent-payments/idempay/internal/event/eventtest"
	"github.com/idempotent-payments/idempay/internal/operations"
	"github.com/idempotent-payments/idempay/internal/outbox"
)

// TestBackstop: a region never takes over the rows of a region that
// still beats; a stopped region's rows (its heartbeat older than
// StaleAfter, or none) are published once they have waited StaleAfter,
// once, and marked; its own rows are published once they have waited
// twice StaleAfter; then it beats. A row the topic refuses stays listed
// for the next run, and a run that could not publish its own row does not
// beat, so the others take its rows over.
func TestBackstop(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	ledger := chargetest.NewLedger()
	topic := &eventtest.Topic{}
	takeOver := &Publisher{Region: "a", Books: ledger, Rows: chargeRows{ledger}, Topic: topic, StaleAfter: 3 * time.Minute, Now: func() time.Time { return now }}
	old := now.Add(-10 * time.Minute)
	rows := []charge.Charge{
		chargetest.RowIn("a", now.Add(-5*time.Minute), 0), // its own, waiting for its publisher
		chargetest.RowIn("b", old, 1),                     // a region that beats
		chargetest.RowIn("c", old, 2),                     // a region that stopped
		chargetest.RowIn("c", now.Add(-time.Minute), 3),   // too young
		chargetest.RowIn("d", old, 4),                     // a region that never beat
		chargetest.RowIn("a", old, 5),                     // its own, left behind
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
	topic.Fail = errors.New("topic down")
	if r, err := takeOver.Run(ctx); err == nil || r.Beat {
		t.Fatalf("a run whose publishes fail: %+v, %v; want an error and no beat", r, err)
	}
	if at, _ := ledger.LastBeat(ctx, "a"); !at.IsZero() {
		t.Fatalf("a region that could not publish its own row beat at %v", at)
	}
	topic.Fail = nil
	r, err := takeOver.Run(ctx)
	if got := topic.Take(); err != nil || len(got) != 3 || r.TakenOver != 2 || r.Republished != 1 || r.Waiting != 2 || len(r.Stopped) != 2 || !r.Beat || !r.Complete {
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
	if r, _ := takeOver.Run(ctx); len(topic.Take()) != 0 || r.TakenOver+r.Republished != 0 {
		t.Fatalf("a second run took over again: %+v", r)
	}
	now = now.Add(3 * time.Minute) // the young row has waited long enough, and b still beats
	if err := ledger.Beat(ctx, "b", now); err != nil {
		t.Fatal(err)
	}
	if r, _ := takeOver.Run(ctx); len(topic.Take()) != 2 || r.TakenOver != 1 || r.Republished != 1 {
		t.Fatalf("the young rows once old: %+v", r)
	}
}

// TestBackstopStopsAtItsDeadline: past its deadline less the margin, a run
// publishes nothing more and says it is not complete; a heartbeat it
// cannot read leaves that region's rows, and is an error.
func TestBackstopStopsAtItsDeadline(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	ledger := chargetest.NewLedger()
	for i := range 3 {
		if _, err := ledger.Write(context.Background(), chargetest.RowIn("c", now.Add(-time.Hour), i)); err != nil {
			t.Fatal(err)
		}
	}
	topic := &eventtest.Topic{}
	ctx, cancel := context.WithDeadline(context.Background(), now.Add(time.Second))
	defer cancel()
	takeOver := &Publisher{Region: "a", Books: ledger, Rows: chargeRows{ledger}, Topic: topic, StaleAfter: time.Minute, StopMargin: 2 * time.Second,
		Now: func() time.Time { return now }}
	if r, err := takeOver.Run(ctx); err != nil || r.Complete || r.TakenOver != 0 || len(topic.Take()) != 0 || !r.Beat {
		t.Fatalf("a run past its deadline: %+v, %v", r, err)
	}
	takeOver.Books = &unreadableBeats{Books: ledger}
	if r, err := takeOver.Run(context.Background()); err == nil || r.TakenOver != 0 || len(topic.Take()) != 0 {
		t.Fatalf("a run that cannot read the heartbeats: %+v, %v", r, err)
	}
}

// unreadableBeats cannot read any heartbeat.
type unreadableBeats struct{ charge.Books }

func (unreadableBeats) LastBeat(context.Context, string) (time.Time, error) {
	return time.Time{}, errors.New("table down")
}

// chargeRows read the memory ledger's rows as the backstop reads any
// operation's (dynamo.Rows on the table).
type chargeRows struct{ charge.Ledger }

func (r chargeRows) Row(ctx context.Context, id string) (outbox.Row, error) {
	c, err := r.Get(ctx, id)
	return operations.ChargeRow{Charge: c}, err
}

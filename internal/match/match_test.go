package match

import (
	"context"
	"iter"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/obs"
	"github.com/idempotent-payments/idempay/internal/refund"
)

// memoryBooks are Books in memory. lagging makes Kept list nothing, as
// an index that has not caught up with the writes.
type memoryBooks struct {
	rows    map[string]Row
	charges map[string]Figures
	since   time.Time
	lines   map[time.Time]map[string]Line
	done    map[time.Time]bool
	lagging bool
}

func newBooks(rows ...Row) *memoryBooks {
	b := &memoryBooks{rows: map[string]Row{}, charges: map[string]Figures{}, lines: map[time.Time]map[string]Line{}, done: map[time.Time]bool{},
		since: day.Add(-30 * 24 * time.Hour)} // matched for a month

	for _, r := range rows {
		b.rows[r.ID] = r
	}
	return b
}

func (b *memoryBooks) DayRows(_ context.Context, day, before time.Time) iter.Seq2[Row, error] {
	return func(yield func(Row, error) bool) {
		for _, id := range slices.Sorted(maps.Keys(b.rows)) {
			if r := b.rows[id]; acquirer.DayOf(r.At).Equal(day) && r.At.Before(before) && !yield(r, nil) {
				return
			}
		}
	}
}

func (b *memoryBooks) Row(_ context.Context, id string) (Row, bool, error) {
	r, ok := b.rows[id]
	return r, ok, nil
}

func (b *memoryBooks) Charge(_ context.Context, id string) (Figures, bool, error) {
	f, ok := b.charges[id]
	return f, ok, nil
}

func (b *memoryBooks) Since(_ context.Context, today time.Time) (time.Time, error) {
	if b.since.IsZero() {
		b.since = today
	}
	return b.since, nil
}

func (b *memoryBooks) Claim(_ context.Context, day time.Time, _ string, _, _ time.Time) (bool, bool, map[string]int, error) {
	if b.done[day] {
		return false, true, b.counts(day), nil
	}
	return true, false, nil, nil
}

func (b *memoryBooks) Keep(_ context.Context, day time.Time, l Line) (bool, error) {
	if b.lines[day] == nil {
		b.lines[day] = map[string]Line{}
	}
	if _, ok := b.lines[day][LineKey(l)]; ok {
		return false, nil
	}
	b.lines[day][LineKey(l)] = l
	return true, nil
}

func (b *memoryBooks) Kept(_ context.Context, day time.Time) (map[string]bool, error) {
	kept := map[string]bool{}
	if !b.lagging {
		for k := range b.lines[day] {
			kept[k] = true
		}
	}
	return kept, nil
}

func (b *memoryBooks) counts(day time.Time) map[string]int {
	c := map[string]int{}
	for _, l := range b.lines[day] {
		c[l.Kind]++
	}
	return c
}

func (b *memoryBooks) Lines(_ context.Context, day time.Time) ([]Line, error) {
	return slices.Collect(maps.Values(b.lines[day])), nil
}

func (b *memoryBooks) Finish(_ context.Context, day time.Time, _ string, doneAt time.Time, _ map[string]int) error {
	b.done[day] = !doneAt.IsZero()
	return nil
}

// memoryAcquirer reports its movements, each on its day, on one page.
type memoryAcquirer struct{ movements []acquirer.Movement }

func (a *memoryAcquirer) Report(_ context.Context, day time.Time, _ string) (acquirer.ReportPage, error) {
	var p acquirer.ReportPage
	for _, m := range a.movements {
		if acquirer.DayOf(m.At).Equal(day) {
			p.Movements = append(p.Movements, m)
		}
	}
	return p, nil
}

func (a *memoryAcquirer) Movement(_ context.Context, kind, key string) (acquirer.Movement, error) {
	for _, m := range a.movements {
		if m.Kind == kind && m.Key == key {
			return m, nil
		}
	}
	return acquirer.Movement{}, acquirer.ErrNotFound
}

var day = time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)

// refundOf is a refund's row and its movement under key, at the times
// given.
func refundOf(key string, amount int64, rowAt, movedAt time.Time) (Row, acquirer.Movement) {
	return Row{ID: refund.IDPrefix + key, Operation: refund.Operation, ChargeID: charge.IDPrefix + "c", At: rowAt,
			Terms: Terms{Status: acquirer.RefundSucceeded, Amount: amount, Currency: "BRL"}},
		acquirer.Movement{Kind: acquirer.MovementRefund, Key: key, AuthorizationKey: "c", Status: acquirer.RefundSucceeded, Amount: amount, Currency: "BRL", At: movedAt}
}

func matcher(b Books, a Acquirer, now time.Time) *Matcher {
	return &Matcher{Books: b, Acquirer: a, Grace: 30 * time.Minute, Owner: "test", Lease: time.Minute, Now: func() time.Time { return now }}
}

// run matches d and fails the test on an error.
func run(t *testing.T, m *Matcher, d time.Time) Summary {
	t.Helper()
	sum, err := m.Run(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// TestNearMidnight: a movement in the day's last second whose row was
// written in the next day's first pairs from both days: the first reads
// the row by its key, the second asks the acquirer by its key.
func TestNearMidnight(t *testing.T) {
	row, mv := refundOf("k1", 100, day.Add(24*time.Hour+200*time.Millisecond), day.Add(24*time.Hour-500*time.Millisecond))
	b, a := newBooks(row), &memoryAcquirer{movements: []acquirer.Movement{mv}}
	later := day.Add(72 * time.Hour)
	if s := run(t, matcher(b, a, later), day); s.Movements != 1 || s.Rows != 0 || s.Unmatched() != 0 || !s.Done {
		t.Fatalf("the movement's day: %+v", s)
	}
	if s := run(t, matcher(b, a, later), day.Add(24*time.Hour)); s.Movements != 0 || s.Rows != 1 || s.Unmatched() != 0 {
		t.Fatalf("the row's day: %+v", s)
	}
}

// TestASecondMovementOnALaterDay: a movement under a key whose row was
// written a day before it is not that row's: a second movement without
// its row.
func TestASecondMovementOnALaterDay(t *testing.T) {
	row, first := refundOf("k2", 100, day.Add(-14*time.Hour+time.Second), day.Add(-14*time.Hour))
	second := first
	second.At = day.Add(10 * time.Hour)
	b := newBooks(row)
	b.charges[row.ChargeID] = Figures{Authorized: 150, Captured: 150, Refunded: 100}
	s := run(t, matcher(b, &memoryAcquirer{movements: []acquirer.Movement{first, second}}, day.Add(48*time.Hour)), day)
	if s.Counts[MovementWithoutRow] != 1 || s.Counts[RefundedOverCaptured] != 1 || s.Unmatched() != 2 {
		t.Fatalf("%+v, want the second movement without its row and the charge refunded 200 of 150", s)
	}
}

// TestDeclinesAtZero: a report may state a decline's amount as 0; it
// moved nothing, and pairs with its declined row.
func TestDeclinesAtZero(t *testing.T) {
	row, mv := refundOf("k3", 500, day.Add(time.Hour+time.Second), day.Add(time.Hour))
	row.Terms.Status, mv.Status, mv.Amount = acquirer.RefundDeclined, acquirer.RefundDeclined, 0
	if s := run(t, matcher(newBooks(row), &memoryAcquirer{movements: []acquirer.Movement{mv}}, day.Add(48*time.Hour)), day); s.Unmatched() != 0 {
		t.Fatalf("%+v", s)
	}
	mv.Currency = "USD" // but a decline in another currency is no decline of this row
	if s := run(t, matcher(newBooks(row), &memoryAcquirer{movements: []acquirer.Movement{mv}}, day.Add(48*time.Hour)), day); s.Counts[TermsDiffer] != 1 {
		t.Fatalf("%+v", s)
	}
}

// TestCountsWhileTheIndexLags: a run counts its own lines even when the
// index does not list them yet, and a later run reads the finished
// counts with its refused claim.
func TestCountsWhileTheIndexLags(t *testing.T) {
	_, mv := refundOf("k4", 100, time.Time{}, day.Add(time.Hour))
	b := newBooks()
	b.lagging = true
	m := matcher(b, &memoryAcquirer{movements: []acquirer.Movement{mv}}, day.Add(48*time.Hour))
	if s := run(t, m, day); s.Counts[MovementWithoutRow] != 1 || s.New != 1 || !s.Done {
		t.Fatalf("%+v", s)
	}
	if s := run(t, m, day); !s.Skipped || !s.Done || s.Counts[MovementWithoutRow] != 1 {
		t.Fatalf("the done day: %+v", s)
	}
}

// TestTooManyLeftovers: a run whose leftovers pass its cap fails and
// keeps nothing; a day before the first matched is skipped.
func TestTooManyLeftovers(t *testing.T) {
	_, a := refundOf("k5", 100, time.Time{}, day.Add(time.Hour))
	_, c := refundOf("k6", 100, time.Time{}, day.Add(2*time.Hour))
	b := newBooks()
	m := matcher(b, &memoryAcquirer{movements: []acquirer.Movement{a, c}}, day.Add(48*time.Hour))
	m.MaxLeftovers = 1
	b.since = day
	if _, err := m.Run(context.Background(), day); err == nil || !strings.Contains(err.Error(), "incomplete") || len(b.lines[day]) != 0 {
		t.Fatalf("%v, %d lines kept", err, len(b.lines[day]))
	}
	if s := run(t, m, day.Add(-24*time.Hour)); !s.Skipped || s.Done {
		t.Fatalf("the day before the first: %+v", s)
	}
}

// TestDays: a run matches the three days before the last whose end and
// grace have passed, and today with Today.
func TestDays(t *testing.T) {
	h := &Handler{Matcher: &Matcher{Grace: 30 * time.Minute}}
	for now, want := range map[time.Time]time.Time{
		day.Add(10 * time.Minute): day.Add(-48 * time.Hour), // yesterday's grace has not passed
		day.Add(2 * time.Hour):    day.Add(-24 * time.Hour),
	} {
		if got := h.Days(now); len(got) != 3 || !got[0].Equal(want) || !got[2].Equal(want.Add(-48*time.Hour)) {
			t.Errorf("at %s: %v, want from %s", now.Format(time.TimeOnly), got, want.Format(time.DateOnly))
		}
	}
	h.Today = true
	if got := h.Days(day.Add(2 * time.Hour)); len(got) != 4 || !got[0].Equal(day) {
		t.Errorf("with today: %v", got)
	}
}

// TestMetricsAreObs: each kind of line has its metric, the ones the
// alarms and the dashboard read, in Kinds' order.
func TestMetricsAreObs(t *testing.T) {
	var names []string
	for _, k := range Kinds() {
		names = append(names, Metrics[k])
	}
	if !slices.Equal(names, obs.MatchMetrics()) || len(Metrics) != len(Kinds()) {
		t.Fatalf("metrics by kind %v, obs's %v", names, obs.MatchMetrics())
	}
}

// TestARowFromBeforeTheIndex: a row written before the day index existed
// has no time (Row.At zero) and is in no day's list; a movement under its
// key on the first day matched pairs with it by its terms alone, with
// other terms differs, and after that day is a second movement.
func TestARowFromBeforeTheIndex(t *testing.T) {
	row, mv := refundOf("k6", 100, time.Time{}, day.Add(time.Hour))
	later := day.Add(48 * time.Hour)
	firstDay := func() *memoryBooks { // the table's first day matched is day
		b := newBooks(row)
		b.since = day
		return b
	}
	if s := run(t, matcher(firstDay(), &memoryAcquirer{movements: []acquirer.Movement{mv}}, later), day); s.Unmatched() != 0 || s.Movements != 1 {
		t.Fatalf("%+v, want the movement paired with its row", s)
	}
	mv.Amount = 90
	if s := run(t, matcher(firstDay(), &memoryAcquirer{movements: []acquirer.Movement{mv}}, later), day); s.Counts[TermsDiffer] != 1 || s.Unmatched() != 1 {
		t.Fatalf("%+v, want its terms to differ", s)
	}
	// A movement under its key after the first day matched and its grace
	// is a second one, whatever its terms: the row was written by then.
	b := firstDay()
	again := mv
	again.Amount, again.At = 100, day.Add(25*time.Hour)
	if s := run(t, matcher(b, &memoryAcquirer{movements: []acquirer.Movement{again}}, day.Add(72*time.Hour)), day.Add(24*time.Hour)); s.Counts[MovementWithoutRow] != 1 {
		t.Fatalf("%+v, want a second movement without its row", s)
	}
}

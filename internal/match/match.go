// Package match is the daily conciliação: it pairs each line of the
// acquirer's report of a UTC day with one ledger row, and each row of the
// day with one line, and keeps what does not pair. It is written once over
// the operations: a row's operation (operations.Registration) says which
// kind of line it pairs with (Movement) and what it moved on its charge
// (Moves), so an operation that registers is matched.
//
// The protocol assumes that an acquirer acts on a request within its
// lease; the match is what notices when it did not (a refund made after
// its request was released has no row), and any other way the books and
// the acquirer came apart: a movement under a key no record has, a row
// whose movement the acquirer reversed, other terms.
package match

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/operations"
)

// The kinds of a Line: what did not pair, or what a charge's movements
// add up to beyond its bound.
const (
	// MovementWithoutRow: the acquirer moved money (or declined) under a
	// key no row of its operation has, on any day.
	MovementWithoutRow = "movement_without_row"
	// RowWithoutMovement: a row of the day whose movement the acquirer's
	// report of its day does not have, nor its lookup on another day.
	RowWithoutMovement = "row_without_movement"
	// TermsDiffer: a row and its movement disagree on status, amount or
	// currency.
	TermsDiffer = "terms_differ"
	// RefundedOverCaptured and CapturedOverAuthorized: a charge the day's
	// lines touch whose refunds, as the acquirer moved them, are above what
	// it captured, or whose captures are above what it authorized.
	RefundedOverCaptured   = "refunded_over_captured"
	CapturedOverAuthorized = "captured_over_authorized"
)

// Kinds are the kinds of line, in the order reports list them.
func Kinds() []string {
	return []string{MovementWithoutRow, RowWithoutMovement, TermsDiffer, RefundedOverCaptured, CapturedOverAuthorized}
}

// Terms are what a row and its movement must agree on.
type Terms struct {
	Status   string `json:"status"`
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
}

// Row is one operation's ledger row as the match reads it: its id, its
// operation (operations.Registration.Name), the charge it moves money on
// (its own id for a charge), its terms and when it was written: zero for
// a row written before the day index existed, which Books.Row finds by
// its id and DayRows never lists.
type Row struct {
	ID        string    `json:"id"`
	Operation string    `json:"operation"`
	ChargeID  string    `json:"charge_id"`
	Terms     Terms     `json:"terms"`
	At        time.Time `json:"at"`
}

// Line is one thing the match found on a day. Ref names it within its
// kind: the movement's kind and key for a line of one movement or row,
// the charge's id for a charge's total. Row and Movement are what the
// table and the acquirer held when it was found (either may be nil);
// Charge the acquirer's totals of the charge as the match reckoned them,
// for a total's line.
type Line struct {
	Kind     string             `json:"kind"`
	Ref      string             `json:"ref"`
	ChargeID string             `json:"charge_id,omitempty"`
	Row      *Row               `json:"row,omitempty"`
	Movement *acquirer.Movement `json:"movement,omitempty"`
	Charge   *Figures           `json:"charge,omitempty"`
	At       time.Time          `json:"at"`
}

// Figures are a charge's totals: authorized, captured and refunded.
type Figures struct {
	Authorized int64 `json:"authorized"`
	Captured   int64 `json:"captured"`
	Refunded   int64 `json:"refunded"`
}

// Books are the table's side: the day's rows, any row by its id, a
// charge's totals, and the kept results of each day.
type Books interface {
	// DayRows yields the rows written on day (its UTC midnight) before
	// before, from the day index, never by a Scan.
	DayRows(ctx context.Context, day, before time.Time) iter.Seq2[Row, error]
	// Row is row id wherever it was written: found false when none is
	// (a marker stands at its key, or nothing).
	Row(ctx context.Context, id string) (Row, bool, error)
	// Charge is what the books say charge id authorized, captured and
	// refunded: found false when it has no row.
	Charge(ctx context.Context, id string) (Figures, bool, error)
	// Since is the first day the match matches: the day of the first run
	// on the table (today, when none ran before), kept. Rows written
	// before the day index existed are not in it, so the days before are
	// never matched.
	Since(ctx context.Context, today time.Time) (time.Time, error)
	// Claim takes day's run for owner until until, unless another owner's
	// claim holds it at now or the day is done (the day's runs are then
	// none of this one's: claimed false, and done says which). counts are
	// what the day's last finished run counted, read with the claim.
	Claim(ctx context.Context, day time.Time, owner string, now, until time.Time) (claimed, done bool, counts map[string]int, err error)
	// Keep keeps line among day's, unless a line of its kind and ref is
	// kept already: whether it is new.
	Keep(ctx context.Context, day time.Time, line Line) (bool, error)
	// Kept are the keys (LineKey) of day's kept lines, as listed; a line
	// kept a moment ago may not be listed yet.
	Kept(ctx context.Context, day time.Time) (map[string]bool, error)
	// Lines are day's kept lines, in the order of their time.
	Lines(ctx context.Context, day time.Time) ([]Line, error)
	// Finish ends owner's claim on day, keeping counts: done at doneAt
	// when the day is matched to its end, else (doneAt zero) free for the
	// next run.
	Finish(ctx context.Context, day time.Time, owner string, doneAt time.Time, counts map[string]int) error
}

// Acquirer is the acquirer's side: its report of a day, and what it did
// under one key (acquirer.ErrNotFound when nothing), which the match asks
// of a row its day's report did not pair.
type Acquirer interface {
	acquirer.Reporter
	Movement(ctx context.Context, kind, key string) (acquirer.Movement, error)
}

// Matcher runs the match of a day.
type Matcher struct {
	Books    Books
	Acquirer Acquirer
	// Grace is how long after a movement or a row the match waits before
	// it pairs it: a row is written after its movement, and a movement
	// near midnight may fall on the next day. A day is done once its end
	// plus Grace has passed.
	Grace time.Duration
	// Owner names this run in the day's claim, which holds until the
	// context's deadline, or for Lease without one: unique to the
	// process.
	Owner string
	Lease time.Duration
	Now   func() time.Time
	// MaxLeftovers caps the movements and rows a run looks up one by one
	// (those the day's report and index did not pair); past it the run
	// fails and keeps nothing, since a report that is incomplete would
	// make every row a line (DefaultMaxLeftovers when 0).
	MaxLeftovers int
}

// DefaultMaxLeftovers is Matcher.MaxLeftovers when unset: at about 5 ms a
// lookup, a minute of a run's 15.
const DefaultMaxLeftovers = 10000

// LineKey is the key line is kept under within its day: its kind and its
// ref.
func LineKey(l Line) string { return l.Kind + "#" + l.Ref }

// countsOf are keys' lines by kind.
func countsOf(keys map[string]bool) map[string]int {
	counts := map[string]int{}
	for k := range keys {
		kind, _, _ := strings.Cut(k, "#")
		counts[kind]++
	}
	return counts
}

// Summary is one run's account of a day.
type Summary struct {
	Day time.Time `json:"day"`
	// Movements and Rows are how many of each the run read; Counts the
	// day's kept lines by kind (this run's and earlier runs').
	Movements int            `json:"movements"`
	Rows      int            `json:"rows"`
	Counts    map[string]int `json:"counts"`
	// New is how many lines this run found that no run had kept.
	New int `json:"new"`
	// Done: the day is matched to its end. Skipped: another run holds the
	// day, or it was done already, or it is before the first day matched
	// (Books.Since); the run read nothing.
	Done    bool `json:"done"`
	Skipped bool `json:"skipped"`
}

// Unmatched is the sum of s's counts.
func (s Summary) Unmatched() int {
	n := 0
	for _, c := range s.Counts {
		n += c
	}
	return n
}

// ErrNoOwner: a Matcher without the name its claims are taken under.
var ErrNoOwner = errors.New("match: no owner")

// Run matches day (any time in it; its UTC day is taken): the movements
// and rows of the day up to its end, or up to now less Grace for a day
// not yet over. Lines are kept once: a run repeated, or resumed after one
// that stopped, finds the same lines and counts each once. A day whose
// end plus Grace has passed is finished as done, and later runs of it
// are skipped.
func (m *Matcher) Run(ctx context.Context, day time.Time) (Summary, error) {
	if m.Owner == "" {
		return Summary{}, ErrNoOwner
	}
	day = acquirer.DayOf(day)
	now := m.Now()
	sum := Summary{Day: day}
	since, err := m.Books.Since(ctx, acquirer.DayOf(now))
	if err != nil || day.Before(since) {
		sum.Skipped = err == nil
		return sum, err
	}
	until := now.Add(m.Lease)
	if deadline, ok := ctx.Deadline(); ok { // the invocation's end: after it, the run is surely gone
		until = deadline
	}
	claimed, done, counts, err := m.Books.Claim(ctx, day, m.Owner, now, until)
	if err != nil || !claimed {
		sum.Done, sum.Skipped, sum.Counts = done, err == nil, counts
		return sum, err
	}
	end := day.Add(24 * time.Hour)
	before := end
	if cut := now.Add(-m.Grace); cut.Before(end) {
		before = cut
	}
	sum.Done = !now.Before(end.Add(m.Grace))
	var lines []Line
	if before.After(day) {
		if lines, err = m.pair(ctx, day, before, since, &sum); err != nil {
			return sum, err
		}
		for _, l := range lines {
			added, err := m.Books.Keep(ctx, day, l)
			if err != nil {
				return sum, err
			}
			if added {
				sum.New++
			}
		}
	}
	// The day's lines: those listed (the index may lag a write) and this
	// run's, every one of which is kept.
	kept, err := m.Books.Kept(ctx, day)
	if err != nil {
		return sum, err
	}
	for _, l := range lines {
		kept[LineKey(l)] = true
	}
	sum.Counts = countsOf(kept)
	var doneAt time.Time
	if sum.Done {
		doneAt = now
	}
	return sum, m.Books.Finish(ctx, day, m.Owner, doneAt, sum.Counts)
}

// pair reads the day's movements and rows before before and finds the
// lines that do not pair: the movements read into one map by the row
// each names, the day's rows paired with them, then what is left over
// on either side, then the totals of the charges the lines touch.
func (m *Matcher) pair(ctx context.Context, day, before, since time.Time, sum *Summary) ([]Line, error) {
	byRow, lines, err := m.movements(ctx, day, before, sum)
	if err != nil {
		return nil, err
	}
	unpaired, paired, err := m.pairRows(ctx, day, before, byRow, sum)
	if err != nil {
		return nil, err
	}
	lines = append(lines, paired...)
	if left := len(byRow) + len(unpaired); left > cmp.Or(m.MaxLeftovers, DefaultMaxLeftovers) {
		return nil, fmt.Errorf("match %s: %d movements and rows left over, past %d: the report or the day index is incomplete; nothing kept",
			day.Format(time.DateOnly), left, cmp.Or(m.MaxLeftovers, DefaultMaxLeftovers))
	}
	leftMovements, err := m.leftoverMovements(ctx, byRow, since)
	if err != nil {
		return nil, err
	}
	lines = append(lines, leftMovements...)
	for _, row := range unpaired {
		l, found, err := m.elsewhere(ctx, day, before, row)
		if err != nil {
			return nil, err
		}
		if !found {
			lines = append(lines, l)
		}
	}
	totals, err := m.totals(ctx, lines)
	return append(lines, totals...), err
}

// movements reads the day's report into a map by the id of the row each
// movement names (its registration's prefix and its key). A second
// movement under one key has no row of its own: it is a line at once.
func (m *Matcher) movements(ctx context.Context, day, before time.Time, sum *Summary) (map[string]acquirer.Movement, []Line, error) {
	byRow := map[string]acquirer.Movement{}
	var lines []Line
	err := m.report(ctx, day, before, func(mv acquirer.Movement) error {
		sum.Movements++
		reg, ok := operations.ByMovement(mv.Kind)
		if !ok {
			return fmt.Errorf("match %s: a movement of kind %q no operation pairs with", day.Format(time.DateOnly), mv.Kind)
		}
		id := reg.RowIDPrefix + mv.Key
		if _, twice := byRow[id]; twice {
			lines = append(lines, movementLine(MovementWithoutRow, mv, nil))
			return nil
		}
		byRow[id] = mv
		return nil
	})
	return byRow, lines, err
}

// pairRows reads the day's rows and pairs each with its movement, taking
// the movement out of byRow; it returns the rows without one, and the
// lines of the pairs whose terms differ.
func (m *Matcher) pairRows(ctx context.Context, day, before time.Time, byRow map[string]acquirer.Movement, sum *Summary) (unpaired []Row, lines []Line, err error) {
	for row, err := range m.Books.DayRows(ctx, day, before) {
		if err != nil {
			return nil, nil, err
		}
		sum.Rows++
		mv, ok := byRow[row.ID]
		if !ok {
			unpaired = append(unpaired, row)
			continue
		}
		delete(byRow, row.ID)
		if l, differ := m.compare(row, mv); differ {
			lines = append(lines, l)
		}
	}
	return unpaired, lines, nil
}

// leftoverMovements reads the row of each movement left in byRow, which
// was written on another day or never: no row is a line, and a row on
// another day is compared as a pair. A row with no time was written
// before the day index existed, so by the first day matched (since) at
// the latest: a movement after that day and its grace is another
// movement's, a second one under the key.
func (m *Matcher) leftoverMovements(ctx context.Context, byRow map[string]acquirer.Movement, since time.Time) ([]Line, error) {
	var lines []Line
	for _, id := range slices.Sorted(maps.Keys(byRow)) {
		mv := byRow[id]
		row, found, err := m.Books.Row(ctx, id)
		switch {
		case err != nil:
			return nil, err
		case !found:
			lines = append(lines, movementLine(MovementWithoutRow, mv, nil))
		case row.At.IsZero() && !mv.At.Before(since.Add(24*time.Hour+m.Grace)):
			lines = append(lines, movementLine(MovementWithoutRow, mv, &row))
		default:
			if l, differ := m.compare(row, mv); differ {
				lines = append(lines, l)
			}
		}
	}
	return lines, nil
}

// report reads the acquirer's report of day, every page, and gives each
// movement before before to keep, as it reads: the day's movements are
// held once, in the caller's map.
func (m *Matcher) report(ctx context.Context, day, before time.Time, keep func(acquirer.Movement) error) error {
	cursor := ""
	for {
		page, err := m.Acquirer.Report(ctx, day, cursor)
		if err != nil {
			return fmt.Errorf("match %s: report: %w", day.Format(time.DateOnly), err)
		}
		for _, mv := range page.Movements {
			if !mv.At.Before(before) {
				continue
			}
			if err := keep(mv); err != nil {
				return err
			}
		}
		if cursor = page.Next; cursor == "" {
			return nil
		}
	}
}

// elsewhere asks the acquirer what it did under the key of row, which
// the day's report did not pair: found when it did so on another day, or
// later this day than the run reads (the run of that movement's day
// compares their terms), else the row's line.
func (m *Matcher) elsewhere(ctx context.Context, day, before time.Time, row Row) (Line, bool, error) {
	reg, ok := operations.ByName(row.Operation)
	if !ok {
		return Line{}, false, fmt.Errorf("match: a row of operation %q, which is not registered", row.Operation)
	}
	key := strings.TrimPrefix(row.ID, reg.RowIDPrefix)
	mv, err := m.Acquirer.Movement(ctx, reg.MovementKind, key)
	switch {
	case errors.Is(err, acquirer.ErrNotFound):
		return rowLine(reg, row), false, nil
	case err != nil:
		return Line{}, false, fmt.Errorf("match: what the acquirer did under %s: %w", row.ID, err)
	case !mv.At.Before(day) && mv.At.Before(before): // the day's report left it out of the acquirer's books of the day
		l := rowLine(reg, row)
		l.Movement = &mv
		return l, false, nil
	}
	return Line{}, true, nil
}

// compare is the line of row and the movement mv under its key, if they
// do not pair: a row written more than Grace before mv is another
// movement's (a row is written after its acquirer answered), so mv is a
// second movement under the key; else, or when the row's time is not
// known (written before the day index, by the first day matched:
// leftoverMovements), their terms must agree. A decline
// moved nothing, and a report may state its amount as 0: two declines
// compare on their currency alone.
func (m *Matcher) compare(row Row, mv acquirer.Movement) (Line, bool) {
	switch t := termsOf(mv); {
	case !row.At.IsZero() && row.At.Before(mv.At.Add(-m.Grace)):
		return movementLine(MovementWithoutRow, mv, &row), true
	case t.Status == declined && row.Terms.Status == declined && t.Currency == row.Terms.Currency:
		return Line{}, false
	case row.Terms != t:
		return movementLine(TermsDiffer, mv, &row), true
	}
	return Line{}, false
}

// declined is every kind's status of a decline (acquirer.StatusDeclined,
// RefundDeclined, CaptureDeclined, VoidDeclined).
const declined = acquirer.StatusDeclined

func termsOf(mv acquirer.Movement) Terms {
	return Terms{Status: mv.Status, Amount: mv.Amount, Currency: mv.Currency}
}

// movementLine is a line of kind about movement mv (and its row, if any).
func movementLine(kind string, mv acquirer.Movement, row *Row) Line {
	l := Line{Kind: kind, Ref: mv.Kind + ":" + mv.Key, Movement: &mv, Row: row, At: mv.At}
	if charges, ok := operations.ByMovement(acquirer.MovementAuthorization); ok { // the charge's own rows pair with authorizations
		l.ChargeID = charges.RowIDPrefix + mv.AuthorizationKey
	}
	if row != nil {
		l.ChargeID = row.ChargeID
	}
	return l
}

// rowLine is the line of a row without its movement.
func rowLine(reg operations.Registration, row Row) Line {
	return Line{Kind: RowWithoutMovement, Ref: reg.MovementKind + ":" + strings.TrimPrefix(row.ID, reg.RowIDPrefix), ChargeID: row.ChargeID, Row: &row, At: row.At}
}

// totals are the lines of the charges whose totals, as the acquirer moved
// them, pass their bounds. A charge whose every movement paired with its
// row cannot: its rows are its balance's, which never passes them. So only
// a charge with one of lines is read: the books' totals, plus what its
// lines' movements moved, less what their rows did.
func (m *Matcher) totals(ctx context.Context, lines []Line) ([]Line, error) {
	delta := map[string]Figures{}
	at := map[string]time.Time{}
	for _, l := range lines {
		if l.ChargeID == "" {
			continue
		}
		d := delta[l.ChargeID]
		if l.Movement != nil {
			c, r := moved(l.Movement.Kind, l.Movement.Status, l.Movement.Amount)
			d.Captured, d.Refunded = d.Captured+c, d.Refunded+r
		}
		if l.Row != nil && !(l.Kind == MovementWithoutRow) { // a second movement's row is its first's: the books have it
			reg, ok := operations.ByName(l.Row.Operation)
			if !ok {
				return nil, fmt.Errorf("match: a row of operation %q, which is not registered", l.Row.Operation)
			}
			c, r := reg.Moves(l.Row.Terms.Status, l.Row.Terms.Amount)
			d.Captured, d.Refunded = d.Captured-c, d.Refunded-r
		}
		delta[l.ChargeID] = d
		if l.At.After(at[l.ChargeID]) {
			at[l.ChargeID] = l.At
		}
	}
	var out []Line
	for _, id := range slices.Sorted(maps.Keys(delta)) {
		books, found, err := m.Books.Charge(ctx, id)
		if err != nil {
			return nil, err
		}
		if !found { // a movement on a charge we never made: its own line says so
			continue
		}
		d := delta[id]
		f := Figures{Authorized: books.Authorized, Captured: books.Captured + d.Captured, Refunded: books.Refunded + d.Refunded}
		if f.Refunded > f.Captured {
			out = append(out, Line{Kind: RefundedOverCaptured, Ref: id, ChargeID: id, Charge: &f, At: at[id]})
		}
		if f.Captured > f.Authorized {
			out = append(out, Line{Kind: CapturedOverAuthorized, Ref: id, ChargeID: id, Charge: &f, At: at[id]})
		}
	}
	return out, nil
}

// moved is what a movement of kind in status moved, by its operation.
func moved(kind, status string, amount int64) (captured, refunded int64) {
	reg, ok := operations.ByMovement(kind)
	if !ok {
		return 0, 0
	}
	return reg.Moves(status, amount)
}

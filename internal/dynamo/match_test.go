package dynamo_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/acquirer/acquirerhttp"
	"github.com/idempotent-payments/idempay/internal/capture"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/charge/chargetest"
	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/dynamo/dynamotest"
	"github.com/idempotent-payments/idempay/internal/httpapi"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/match"
	"github.com/idempotent-payments/idempay/internal/obs"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/refund"
	"github.com/idempotent-payments/idempay/internal/sandbox"
	"github.com/idempotent-payments/idempay/internal/tabledef"
)

// matchWorld is the charge, refund and capture services on DynamoDB
// Local with the sandbox in process, and the match over both.
type matchWorld struct {
	t        *testing.T
	table    *dynamo.Table
	sb       *sandbox.Server
	acq      *acquirerhttp.Client
	charges  *charge.Service
	refunds  *refund.Service
	captures *capture.Service
	start    time.Time
}

const matchAccount = "acct_match"

func newMatchWorld(t *testing.T) *matchWorld {
	client := dynamotest.Client(t)
	table := dynamo.Open(client, dynamotest.NewTable(t, client))
	sb := sandbox.New("")
	sb.SetRefundBound(false)
	sb.SetCaptureBound(false)
	srv := httptest.NewServer(sb) // over a socket, so that a call's deadline cuts a hung request
	t.Cleanup(srv.Close)
	acq, _ := acquirerhttp.NewClient(srv.URL, "", nil)
	guard := idem.NewGuard(table.Store(), idem.Config{LeaseMargin: 200 * time.Millisecond,
		Protocol: idem.Protocol{InTransitBound: time.Second, ClockSkew: 100 * time.Millisecond}})
	cfg := charge.Config{AcquirerTimeout: 500 * time.Millisecond}
	charges := chargetest.ServiceWith(guard, table.Ledger(), acq, httpapi.Render, cfg)
	return &matchWorld{
		t: t, table: table, sb: sb, acq: acq, charges: charges, start: time.Now(),
		refunds:  refund.NewService(guard, charges, table.Balances(), table.Refunds(), acq, httpapi.RenderRefund, cfg),
		captures: capture.NewService(guard, charges, table.Captures(), table.CaptureRows(), table.VoidRows(), acq, httpapi.RenderCapture, cfg),
	}
}

// charge makes a charge of amount, captured or authorized only, and
// returns its id.
func (w *matchWorld) charge(key string, amount int64, captured bool) string {
	w.t.Helper()
	authorizeOnly := `, "capture": false`
	if captured {
		authorizeOnly = ""
	}
	body := fmt.Sprintf(`{"amount": %d, "currency": "BRL", "order_id": "o-%s", "payment_method": "pm_card_visa"%s}`, amount, key, authorizeOnly)
	res := w.charges.Charge(context.Background(), charge.Input{Account: matchAccount, Keys: []string{key}, Body: []byte(body)})
	if res.Outcome != op.Executed {
		w.t.Fatalf("charge %s: %s %s", key, res.Outcome, res.Response.Body)
	}
	return res.ChargeID
}

func (w *matchWorld) in(chargeID, key, body string) op.ActionInput {
	return op.ActionInput{Account: matchAccount, Keys: []string{key}, ChargeID: chargeID, Body: []byte(body)}
}

// refund refunds amount of chargeID and returns the refund's row id.
func (w *matchWorld) refund(chargeID, key string, amount int64) string {
	w.t.Helper()
	res := w.refunds.Refund(context.Background(), w.in(chargeID, key, fmt.Sprintf(`{"amount": %d}`, amount)))
	if res.Outcome != op.Executed {
		w.t.Fatalf("refund %s: %s", key, res.Outcome)
	}
	return res.ID
}

// capture captures amount of chargeID and returns the capture's row id.
func (w *matchWorld) capture(chargeID, key string, amount int64, final bool) string {
	w.t.Helper()
	res := w.captures.Capture(context.Background(), w.in(chargeID, key, fmt.Sprintf(`{"amount": %d, "final": %t}`, amount, final)))
	if res.Outcome != op.Executed {
		w.t.Fatalf("capture %s: %s", key, res.Outcome)
	}
	return res.ID
}

// matcher is a match by owner whose clock is the real one, Grace ahead:
// it reads everything made so far.
func (w *matchWorld) matcher(owner string, books match.Books) *match.Matcher {
	const grace = time.Minute
	if books == nil {
		books = w.table.MatchBooks()
	}
	return &match.Matcher{Books: books, Acquirer: w.acq, Grace: grace, Owner: owner, Lease: time.Minute,
		Now: func() time.Time { return time.Now().Add(grace) }}
}

// days are the UTC days the test has run on so far (two when it crossed
// midnight).
func (w *matchWorld) days() []time.Time {
	return slices.Compact([]time.Time{acquirer.DayOf(w.start), acquirer.DayOf(time.Now())})
}

// run runs m over every day of the test and returns the lines kept and
// the lines new in this run.
func (w *matchWorld) run(m *match.Matcher) (kept []match.Line, added int) {
	w.t.Helper()
	for _, day := range w.days() {
		sum, err := m.Run(context.Background(), day)
		if err != nil {
			w.t.Fatalf("match %s: %v", day.Format(time.DateOnly), err)
		}
		lines, err := w.table.MatchBooks().Lines(context.Background(), day)
		if err != nil {
			w.t.Fatal(err)
		}
		if sum.Unmatched() != len(lines) {
			w.t.Fatalf("match %s: counts %v, %d lines kept", day.Format(time.DateOnly), sum.Counts, len(lines))
		}
		kept, added = append(kept, lines...), added+sum.New
	}
	return kept, added
}

// key is the downstream key of row id (the acquirer's key of its
// movement).
func key(id string) string { _, k, _ := strings.Cut(id, "_"); return k }

// TestMatchFindsEachDifference plants each kind of difference at the
// sandbox over a day whose every other row pairs, and finds each once.
func TestMatchFindsEachDifference(t *testing.T) {
	// Not in parallel: its hundreds of writes would load DynamoDB Local
	// under the package's parallel tests.
	ctx := context.Background()
	w := newMatchWorld(t)

	// A clean day: every operation's rows, declines included.
	c1 := w.charge("match-c1", 10000, true)
	w.refund(c1, "match-r1", 3000)
	a1 := w.charge("match-a1", 5000, false)
	w.capture(a1, "match-k1", 2000, false)
	a2 := w.charge("match-a2", 4000, false)
	if res := w.captures.Void(ctx, w.in(a2, "match-v2", `{}`)); res.Outcome != op.Executed {
		t.Fatalf("void: %s", res.Outcome)
	}
	declined := w.charges.Charge(ctx, charge.Input{Account: matchAccount, Keys: []string{"match-declined"},
		Body: []byte(`{"amount": 700, "currency": "BRL", "order_id": "d", "payment_method": "pm_card_declined"}`)})
	if declined.Outcome != op.Executed {
		t.Fatalf("declined charge: %s", declined.Outcome)
	}
	if kept, _ := w.run(w.matcher("clean", nil)); len(kept) != 0 {
		t.Fatalf("a clean day: %d lines, want 0: %+v", len(kept), kept)
	}

	// 1. A refund the acquirer makes after its request was released: it
	// hangs past the call's timeout, the reconciler finds nothing and
	// releases it, then the acquirer makes it. A second refund of the
	// same 7,000 is then made, so the acquirer ends over the charge.
	w.sb.SetFaults(sandbox.Faults{HangRate: 1, HangMS: 3000})
	call, cancel := context.WithTimeout(ctx, 1500*time.Millisecond) // its lease: this deadline and 200 ms
	deadline, _ := call.Deadline()
	late := w.refunds.Refund(call, w.in(c1, "match-late", `{"amount": 7000}`))
	cancel()
	w.sb.SetFaults(sandbox.Faults{})
	if late.Outcome == op.Executed {
		t.Fatalf("the hung refund was made at once")
	}
	time.Sleep(time.Until(deadline.Add(300 * time.Millisecond))) // its lease ends
	pk := idem.Scope{Operation: refund.Operation, Account: matchAccount, Key: "match-late"}.PK()
	if got, err := w.refunds.Reconcile(ctx, pk); err != nil || got != op.ReconciledReleased {
		t.Fatalf("reconcile the hung refund: %v, %v; want released", got, err)
	}
	w.refund(c1, "match-again", 7000)
	waitFor(t, func() bool { return len(w.sb.Refunds()) == 3 }) // the hung one lands

	// 2. An authorization under a key no record has.
	if _, err := w.acq.Authorize(ctx, "stray-key-of-no-record", acquirer.Request{Amount: 900, Currency: "BRL", PaymentMethod: "pm_card_visa", OrderID: "x"}); err != nil {
		t.Fatal(err)
	}
	// 3. A row whose movement the acquirer then reverses.
	dropped := w.capture(a1, "match-k2", 1000, false)
	if !w.sb.Forget(acquirer.MovementCapture, key(dropped)) {
		t.Fatal("forget the capture")
	}
	// 4. A movement with other terms, and 5. one that takes a charge's
	// captures above its authorization.
	c3 := w.charge("match-c3", 2000, true)
	restated := w.refund(c3, "match-r3", 500)
	if !w.sb.Restate(acquirer.MovementRefund, key(restated), 600) {
		t.Fatal("restate the refund")
	}
	a4 := w.charge("match-a4", 1000, false)
	over := w.capture(a4, "match-k4", 1000, true)
	if !w.sb.Restate(acquirer.MovementCapture, key(over), 1200) {
		t.Fatal("restate the capture")
	}

	kept, added := w.run(w.matcher("planted", nil))
	got := map[string][]string{}
	for _, l := range kept {
		got[l.Kind] = append(got[l.Kind], l.ChargeID)
	}
	want := map[string][]string{
		match.MovementWithoutRow:     {c1, "ch_stray-key-of-no-record"},
		match.RowWithoutMovement:     {a1},
		match.TermsDiffer:            {c3, a4},
		match.RefundedOverCaptured:   {c1},
		match.CapturedOverAuthorized: {a4},
	}
	for _, kind := range match.Kinds() {
		slices.Sort(got[kind])
		slices.Sort(want[kind])
		if !slices.Equal(got[kind], want[kind]) {
			t.Errorf("%s: charges %v, want %v", kind, got[kind], want[kind])
		}
	}
	if added != 7 {
		t.Errorf("%d new lines, want 7", added)
	}
	for _, l := range kept {
		if l.Kind == match.RefundedOverCaptured && (l.Charge == nil || *l.Charge != (match.Figures{Authorized: 10000, Captured: 10000, Refunded: 17000})) {
			t.Errorf("the over-refunded charge's figures: %+v", l.Charge)
		}
	}

	// Run again: the same lines, none new.
	if again, added := w.run(w.matcher("again", nil)); len(again) != len(kept) || added != 0 {
		t.Errorf("a repeated run: %d lines, %d new; want %d, 0", len(again), added, len(kept))
	}

	// The function's handler writes each kind's count of the day on its
	// metric, which the kind's alarm reads.
	var emf bytes.Buffer
	h := &match.Handler{Matcher: w.matcher("metrics", nil), Today: true, Logger: slog.New(slog.DiscardHandler), Metrics: obs.NewMetrics(&emf, obs.FunctionMatch, "test")}
	if _, err := h.Handle(ctx, events.EventBridgeEvent{}); err != nil {
		t.Fatal(err)
	}
	values := map[string]float64{}
	for line := range strings.Lines(emf.String()) {
		var doc map[string]any
		if err := json.Unmarshal([]byte(line), &doc); err != nil {
			t.Fatal(err)
		}
		for _, metric := range match.Metrics {
			if v, ok := doc[metric].(float64); ok {
				values[metric] += v
			}
		}
	}
	for kind, metric := range match.Metrics {
		if values[metric] != float64(len(want[kind])) {
			t.Errorf("metric %s: %v, want %d", metric, values[metric], len(want[kind]))
		}
	}
}

// waitFor waits up to 5 s for cond.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}

// stopAfter are books whose Keep fails after n lines kept, as a run
// killed mid-day stops.
type stopAfter struct {
	match.Books
	n int
}

var errKilled = errors.New("killed")

func (s *stopAfter) Keep(ctx context.Context, day time.Time, l match.Line) (bool, error) {
	if s.n == 0 {
		return false, errKilled
	}
	s.n--
	return s.Books.Keep(ctx, day, l)
}

// TestMatchKilledMidDayCountsOnce: a run killed after keeping 2 of its
// lines leaves its claim; once it has lapsed, another run finds every
// line and keeps only the rest; a run of a done day reads nothing.
func TestMatchKilledMidDayCountsOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newMatchWorld(t)
	c := w.charge("kill-charge", 10000, true)
	for i := range 4 {
		if _, err := w.acq.Refund(ctx, fmt.Sprintf("kill-stray-%d", i), acquirer.RefundRequest{AuthorizationID: authorizationOf(t, w, c), Amount: 100, Currency: "BRL"}); err != nil {
			t.Fatal(err)
		}
	}
	day := acquirer.DayOf(time.Now())
	killed := w.matcher("killed", &stopAfter{Books: w.table.MatchBooks(), n: 2})
	if _, err := killed.Run(ctx, day); !errors.Is(err, errKilled) {
		t.Fatalf("the killed run: %v", err)
	}
	// Its claim holds for its lease: another run meanwhile reads nothing.
	if sum, err := w.matcher("meanwhile", nil).Run(ctx, day); err != nil || !sum.Skipped || sum.Done {
		t.Fatalf("a run while the killed one's claim holds: %+v, %v", sum, err)
	}
	resumed := w.matcher("resumed", nil)
	resumed.Now = func() time.Time { return day.Add(24*time.Hour + resumed.Grace + 2*time.Minute) } // past its lease, and the day over
	sum, err := resumed.Run(ctx, day)
	if err != nil || sum.New != 2 || sum.Counts[match.MovementWithoutRow] != 4 || sum.Unmatched() != 4 || !sum.Done {
		t.Fatalf("the resumed run: %+v, %v; want 2 new of 4 movements without a row, done", sum, err)
	}
	if sum, err := w.matcher("after", nil).Run(ctx, day); err != nil || !sum.Skipped || !sum.Done || sum.Unmatched() != 4 {
		t.Fatalf("a run of the done day: %+v, %v; want skipped with its 4 lines", sum, err)
	}
}

// authorizationOf is the acquirer's id of charge id's authorization.
func authorizationOf(t *testing.T, w *matchWorld, id string) string {
	t.Helper()
	ch, err := w.table.Ledger().Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return ch.AuthorizationID
}

// TestMatchUnits holds the daily match's units: a day of n charge rows
// read from the day index by the match's 32 Queries, as DynamoDB Local
// reports them, against what the entries' sizes say a day of 1 million
// rows costs (eventually consistent reads: 0.5 unit per 4 KB a Query
// returns, rounded up per Query); and a run's own writes, its claim and
// its finish, on a day that pairs.
func TestMatchUnits(t *testing.T) {
	// Not in parallel: its hundreds of writes would load DynamoDB Local
	// under the package's parallel tests.
	const n = 200
	ctx := context.Background()
	meter := &dynamotest.Meter{Client: dynamotest.Client(t)}
	table := dynamo.Open(meter, dynamotest.NewTable(t, meter.Client))
	sb := sandbox.New("")
	acq, _ := acquirerhttp.NewClient("http://sandbox.invalid", "", sandbox.InProcess(sb))
	svc := chargetest.ServiceWith(idem.NewGuard(table.Store(), idem.Config{}), table.Ledger(), acq, httpapi.Render, charge.Config{})
	start := time.Now()
	for i := range n {
		body := `{"amount": 25000, "currency": "BRL", "order_id": "order-123", "payment_method": "pm_card_visa", "description": "a typical description of seventy characters or so, for the bill"}`
		if res := svc.Charge(ctx, charge.Input{Account: "acct_units", Keys: []string{fmt.Sprintf("match-units-%04d", i)}, Body: []byte(body)}); res.Outcome != op.Executed {
			t.Fatalf("charge %d: %s", i, res.Outcome)
		}
	}
	day := acquirer.DayOf(start)
	if !acquirer.DayOf(time.Now()).Equal(day) {
		t.Skip("the charges crossed midnight") // the figures are per day; run it again
	}
	meter.Take()
	rows := 0
	for _, err := range table.MatchBooks().DayRows(ctx, day, day.Add(24*time.Hour)) {
		if err != nil {
			t.Fatal(err)
		}
		rows++
	}
	read := meter.Take()
	if rows != n || read.TableWrite+read.IndexWrite != 0 {
		t.Fatalf("read %d rows, wrote %+v", rows, read)
	}
	// The entries' size, by DynamoDB's rules (names and values), from the
	// index itself.
	bytes, queries := 0, 0
	for shard := range idem.Shards {
		out, err := meter.Client.Query(ctx, &dynamodb.QueryInput{
			TableName: aws.String(table.Name()), IndexName: aws.String(tabledef.DayIndex),
			KeyConditionExpression:    aws.String(tabledef.DayShardAttribute + " = :s"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":s": &types.AttributeValueMemberS{Value: fmt.Sprintf("%s#%02d", day.Format(time.DateOnly), shard)}},
		})
		if err != nil {
			t.Fatal(err)
		}
		queries++
		for _, item := range out.Items {
			bytes += dynamotest.ItemSize(item)
		}
	}
	entry := float64(bytes) / n
	if want := 0.5 * float64(queries+(bytes+4095)/4096); read.Read > want {
		t.Errorf("the day's read took %.1f RRU, past the %.1f its %d bytes in %d Queries cost", read.Read, want, bytes, queries)
	}
	m := &match.Matcher{Books: table.MatchBooks(), Acquirer: acq, Grace: time.Minute, Owner: "units", Lease: time.Minute,
		Now: func() time.Time { return time.Now().Add(time.Minute) }}
	if first := meter.Take(); first.Read != 0 {
		t.Fatalf("reads before the run: %+v", first)
	}
	if sum, err := m.Run(ctx, day); err != nil || sum.Rows != n || sum.Movements != n || sum.Unmatched() != 0 {
		t.Fatalf("the first run: %+v, %v", sum, err)
	}
	if first := meter.Take(); first.TableWrite+first.IndexWrite != 3 {
		t.Errorf("%.0f WRU in the table's first run, want 3: the first day matched, the claim and the finish", first.TableWrite+first.IndexWrite)
	}
	sum, err := m.Run(ctx, day)
	if err != nil || sum.Rows != n || sum.Movements != n || sum.Unmatched() != 0 {
		t.Fatalf("the run: %+v, %v", sum, err)
	}
	run := meter.Take()
	if run.TableWrite+run.IndexWrite != 2 {
		t.Errorf("%.0f WRU per run, want 2: its claim and its finish", run.TableWrite+run.IndexWrite)
	}
	t.Logf("day index entry %.0f B; this day's read %.1f RRU in %d Queries; a day of 1,000,000 rows: %.0f RRU; a run's own writes %.0f WRU, its reads besides the rows %.1f RRU",
		entry, read.Read, queries, 1e6*entry/4096*0.5, run.TableWrite+run.IndexWrite, run.Read-read.Read)
}

// TestMatchOnceAcrossRegions: two regions' runs of one day at the same
// instant, on one table: one matches it, the other finds it claimed or
// done and reads nothing; a later run finds it done, with its line.
func TestMatchOnceAcrossRegions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newMatchWorld(t)
	c := w.charge("regions-charge", 1000, true)
	if _, err := w.acq.Refund(ctx, "regions-stray", acquirer.RefundRequest{AuthorizationID: authorizationOf(t, w, c), Amount: 100, Currency: "BRL"}); err != nil {
		t.Fatal(err)
	}
	day := acquirer.DayOf(time.Now())
	if _, err := w.table.MatchBooks().Since(ctx, day); err != nil { // the table's first day matched: today
		t.Fatal(err)
	}
	sums := make([]match.Summary, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i, owner := range []string{"region1", "region2"} {
		wg.Go(func() {
			m := w.matcher(owner, nil)
			m.Now = func() time.Time { return day.Add(24*time.Hour + m.Grace) } // the day is over
			sums[i], errs[i] = m.Run(ctx, day)
		})
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil || sums[0].Skipped == sums[1].Skipped {
		t.Fatalf("runs %+v, %v: want one skipped", sums, errs)
	}
	ran := sums[0]
	if ran.Skipped {
		ran = sums[1]
	}
	if !ran.Done || ran.Movements != 2 || ran.Unmatched() != 1 || ran.Counts[match.MovementWithoutRow] != 1 {
		t.Fatalf("the run that matched: %+v", ran)
	}
	if later, err := w.matcher("region1", nil).Run(ctx, day); err != nil || !later.Skipped || !later.Done || later.Unmatched() != 1 {
		t.Fatalf("a later run: %+v, %v", later, err)
	}
}

// TestMatchRetriesConflicts: on a global table, every write of the match
// (the first day matched, the claim, a line, the finish) may conflict
// with another region's; each is tried again, so a run whose every
// write conflicts once still matches the day, and keeps its line once.
func TestMatchRetriesConflicts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newMatchWorld(t)
	c := w.charge("conflicts-charge", 1000, true)
	if _, err := w.acq.Refund(ctx, "conflicts-stray", acquirer.RefundRequest{AuthorizationID: authorizationOf(t, w, c), Amount: 100, Currency: "BRL"}); err != nil {
		t.Fatal(err)
	}
	var writes, refused atomic.Int64
	proxy := dynamotest.NewConflictProxy(t, os.Getenv("AWS_ENDPOINT_URL_DYNAMODB"), func(string) bool {
		if writes.Add(1)%2 == 1 { // the first try of each write
			refused.Add(1)
			return true
		}
		return false
	})
	books := dynamo.Open(dynamotest.Client(t, proxy.Option), w.table.Name()).MatchBooks()
	day := acquirer.DayOf(time.Now())
	if _, err := books.Since(ctx, day); err != nil { // the table's first day matched: today
		t.Fatal(err)
	}
	m := w.matcher("conflicted", books)
	m.Now = func() time.Time { return day.Add(24*time.Hour + m.Grace) } // the day is over
	sum, err := m.Run(ctx, day)
	if err != nil || !sum.Done || sum.Movements != 2 || sum.Unmatched() != 1 || sum.Counts[match.MovementWithoutRow] != 1 {
		t.Fatalf("a run whose every write conflicted once: %+v, %v", sum, err)
	}
	// The first day matched, the claim, the line and the finish.
	if got := refused.Load(); got != 4 {
		t.Errorf("%d writes conflicted, want 4: each of the run's writes once", got)
	}
	lines, err := w.table.MatchBooks().Lines(ctx, day)
	if err != nil || len(lines) != 1 {
		t.Fatalf("lines kept: %+v, %v; want the stray refund's once", lines, err)
	}
}

// TestMatchReadsARowFromBeforeTheIndex: a row written before the day
// index existed (no day_shard, no day_at) is found by its id with no
// time, and its movement pairs with it by its terms: a run over the day
// of such a row keeps no line and does not fail.
func TestMatchReadsARowFromBeforeTheIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newMatchWorld(t)
	id := w.charge("before-index", 700, true)
	if _, err := dynamotest.Client(t).UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(w.table.Name()), Key: map[string]types.AttributeValue{tabledef.KeyAttribute: &types.AttributeValueMemberS{Value: tabledef.LedgerPrefix + id}},
		UpdateExpression: aws.String("REMOVE " + tabledef.DayShardAttribute + ", " + tabledef.DayAtAttribute),
	}); err != nil {
		t.Fatal(err)
	}
	row, found, err := w.table.MatchBooks().Row(ctx, id)
	if err != nil || !found || !row.At.IsZero() || row.Terms.Amount != 700 {
		t.Fatalf("the row read by its id: %+v, %t, %v; want found, its terms, no time", row, found, err)
	}
	day := acquirer.DayOf(time.Now())
	if _, err := w.table.MatchBooks().Since(ctx, day); err != nil {
		t.Fatal(err)
	}
	m := w.matcher("before-index", nil)
	m.Now = func() time.Time { return day.Add(24*time.Hour + m.Grace) }
	if sum, err := m.Run(ctx, day); err != nil || sum.Unmatched() != 0 || sum.Movements != 1 || sum.Rows != 0 {
		t.Fatalf("the run: %+v, %v; want its movement paired with the row it looked up", sum, err)
	}
}

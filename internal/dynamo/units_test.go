package dynamo_test

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/acquirer/acquirerhttp"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/charge/chargetest"
	"github.com/idempotent-payments/idempay/internal/cost"
	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/dynamo/dynamotest"
	"github.com/idempotent-payments/idempay/internal/httpapi"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/sandbox"
)

// paths are the charge paths whose units are measured, in report order.
var paths = []string{"first-execution", "authorize-only", "replay", "replay-warm-cache", "in-flight", "get"}

// unitsOf runs path n times through the charge service on DynamoDB Local
// and returns the units it consumed per run, as DynamoDB reports them
// (writes refused by their condition computed from item sizes).
func unitsOf(tb testing.TB, path string, n int) dynamotest.Units {
	tb.Helper()
	ctx := context.Background()
	meter := &dynamotest.Meter{Client: dynamotest.Client(tb)}
	table := dynamotest.NewTable(tb, meter.Client)
	sb := sandbox.New("")
	acq, _ := acquirerhttp.NewClient("http://sandbox.invalid", "", sandbox.InProcess(sb))
	cache := 0
	if path == "replay-warm-cache" {
		cache = 10
	}
	guard := idem.NewGuard(dynamo.Open(meter, table).Store(), idem.Config{CacheSize: cache})
	svc := chargetest.ServiceWith(guard, dynamo.Open(meter, table).Ledger(), acq, httpapi.Render, charge.Config{})
	body := []byte(`{"amount": 25000, "currency": "BRL", "order_id": "order-123", "payment_method": "pm_card_visa", "description": "a typical description of seventy characters or so, for the bill"}`)
	in := func(key string) charge.Input {
		return charge.Input{Account: "acct_units", Keys: []string{key}, Body: body}
	}
	first := svc.Charge(ctx, in("units-fixed-key"))
	if path == "in-flight" { // a claim whose owner is still at work
		req, err := charge.ParseRequest(body, 0)
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := guard.Begin(ctx, idem.Scope{Operation: charge.Operation, Account: "acct_units", Key: "units-busy-key"}, req.Canonical()); err != nil {
			tb.Fatal(err)
		}
	}
	svc.Charge(ctx, in("units-fixed-key")) // warms the cache when there is one
	var id string
	for key := range sb.ByKey() {
		id = charge.ID(key)
	}
	meter.Take()
	for i := range n {
		var res charge.Result
		switch path {
		case "first-execution":
			res = svc.Charge(ctx, in(fmt.Sprintf("units-first-%d", i)))
		case "authorize-only":
			authorize := in(fmt.Sprintf("units-authorize-%d", i))
			authorize.Body = []byte(strings.TrimSuffix(string(body), "}") + `, "capture": false}`)
			res = svc.Charge(ctx, authorize)
		case "replay", "replay-warm-cache":
			res = svc.Charge(ctx, in("units-fixed-key"))
		case "in-flight":
			res = svc.Charge(ctx, in("units-busy-key"))
		case "get":
			res = svc.Get(ctx, "acct_units", id)
		}
		want := map[string]op.Outcome{"first-execution": op.Executed, "authorize-only": op.Executed, "replay": op.Replayed, "replay-warm-cache": op.Replayed, "in-flight": op.InFlight, "get": op.Found}[path]
		if res.Outcome != want || first.Outcome != op.Executed {
			tb.Fatalf("%s: %s, want %s", path, res.Outcome, want)
		}
	}
	u := meter.Take()
	f := float64(n)
	return dynamotest.Units{TableWrite: u.TableWrite / f, IndexWrite: u.IndexWrite / f, Read: u.Read / f, Computed: u.Computed}
}

// TestUnitsPerPath holds the bill's figures per path: a first execution
// writes 6 units (claim 1 + its in-flight index entry 1, ledger row 1 +
// its day index entry 1, completion 1 + leaving the index 1), an
// authorization 7 (the same, and its row's entry in the authorizations
// index 1), a replay 1, a warm replay 0.
func TestUnitsPerPath(t *testing.T) {
	t.Parallel()
	for path, want := range map[string][3]float64{
		"first-execution":   {3, 3, 0},
		"authorize-only":    {3, 4, 0}, // and the row's entry in the authorizations index
		"replay":            {1, 0, 0},
		"replay-warm-cache": {0, 0, 0},
		"in-flight":         {1, 0, 0},
		"get":               {0, 0, 2}, // the row, then its record (Service.Get)
	} {
		u := unitsOf(t, path, 3)
		if got := [3]float64{u.TableWrite, u.IndexWrite, u.Read}; got != want {
			t.Errorf("%s: table WRU, index WRU, RRU = %v, want %v", path, got, want)
		}
	}
}

// BenchmarkUnitsPerPath reports the units per path and what a million
// first executions cost at on-demand prices.
func BenchmarkUnitsPerPath(b *testing.B) {
	for _, path := range paths {
		b.Run(path, func(b *testing.B) {
			for b.Loop() {
				u := unitsOf(b, path, 20)
				b.ReportMetric(u.TableWrite+u.IndexWrite, "WRU/op")
				b.ReportMetric(u.IndexWrite, "index-WRU/op")
				b.ReportMetric(u.Read, "RRU/op")
				b.ReportMetric(1e6*((u.TableWrite+u.IndexWrite)*cost.DynamoDBWriteUnit+u.Read*cost.DynamoDBReadUnit), "$/M")
			}
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkChargeCPU: this process's CPU (getrusage) per first execution
// and per replay of the charge service over DynamoDB Local with the real
// SDK client, the sandbox acquirer in process: the function's own work
// without the runtime API and the event decoding, steady enough to compare
// with benchstat (-count 10).
func BenchmarkChargeCPU(b *testing.B) {
	ctx := context.Background()
	client := dynamotest.Client(b)
	table := dynamotest.NewTable(b, client)
	sb := sandbox.New("")
	acq, _ := acquirerhttp.NewClient("http://sandbox.invalid", "", sandbox.InProcess(sb))
	tbl := dynamo.Open(client, table)
	svc := chargetest.ServiceWith(idem.NewGuard(tbl.Store(), idem.Config{}), tbl.Ledger(), acq, httpapi.Render, charge.Config{})
	body := []byte(`{"amount": 25000, "currency": "BRL", "order_id": "order-123", "payment_method": "pm_card_visa", "description": "a typical description"}`)
	run := fmt.Sprint(time.Now().UnixNano())
	n := 0 // keys stay new across -count runs
	for _, path := range []string{"first-execution", "replay"} {
		b.Run(path, func(b *testing.B) {
			ops := 0
			if path == "replay" {
				svc.Charge(ctx, charge.Input{Account: "acct_cpu", Keys: []string{"cpu-replay-" + run}, Body: body})
			}
			start := cpuTime(b)
			for b.Loop() {
				key := "cpu-replay-" + run
				if path == "first-execution" {
					key = fmt.Sprintf("cpu-first-%s-%d", run, n)
				}
				n++
				ops++
				if r := svc.Charge(ctx, charge.Input{Account: "acct_cpu", Keys: []string{key}, Body: body}); r.Outcome != op.Executed && r.Outcome != op.Replayed {
					b.Fatal(r.Outcome)
				}
			}
			b.ReportMetric(float64((cpuTime(b)-start).Microseconds())/float64(ops), "cpu_us/op")
		})
	}
}

// cpuTime is this process's user plus system CPU so far.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// lifeUnits are the units one charge's record and row cost over their
// life: the first execution, its event's publication, then the end of the
// record's retention.
type lifeUnits struct{ charge, publish, purge dynamotest.Units }

// unitsOfALife runs n first executions on a table with TTL (ttl, one
// region) or without it (the multi-region mode: each row is written with
// its region and marked published once its event is), then, without TTL,
// marks the rows published as the publisher does, lets their records
// expire and purges them as a sweeper run does; it returns the units per
// charge.
func unitsOfALife(tb testing.TB, ttl bool, n int) lifeUnits {
	tb.Helper()
	ctx := context.Background()
	meter := &dynamotest.Meter{Client: dynamotest.Client(tb)}
	table := dynamotest.NewTableFor(tb, meter.Client, ttl)
	sb := sandbox.New("")
	acq, _ := acquirerhttp.NewClient("http://sandbox.invalid", "", sandbox.InProcess(sb))
	now := time.Now()
	clock := func() time.Time { return now }
	store := dynamo.Open(meter, table).Store()
	guard := idem.NewGuard(store, idem.Config{Now: clock, Retention: time.Hour})
	cfg := charge.Config{Now: clock}
	if !ttl {
		cfg.Region = "region-a"
	}
	svc := chargetest.ServiceWith(guard, dynamo.Open(meter, table).Ledger(), acq, httpapi.Render, cfg)
	body := []byte(`{"amount": 25000, "currency": "BRL", "order_id": "order-123", "payment_method": "pm_card_visa", "description": "a typical description of seventy characters or so, for the bill"}`)
	meter.Take()
	for i := range n {
		if res := svc.Charge(ctx, charge.Input{Account: "acct_life", Keys: []string{fmt.Sprintf("record-life-%d", i)}, Body: body}); res.Outcome != op.Executed {
			tb.Fatalf("charge %d: %s", i, res.Outcome)
		}
	}
	per := func(u dynamotest.Units) dynamotest.Units {
		f := float64(n)
		return dynamotest.Units{TableWrite: u.TableWrite / f, IndexWrite: u.IndexWrite / f, Read: u.Read / f, Computed: u.Computed}
	}
	life := lifeUnits{charge: per(meter.Take())}
	if ttl { // TTL deletes are not billed
		return life
	}
	books := dynamo.Open(meter, table).Books()
	marked := 0
	for u, err := range books.Unpublished(ctx, now.Add(time.Second)) {
		if err != nil {
			tb.Fatal(err)
		}
		if err := books.MarkPublished(ctx, u.ID); err != nil {
			tb.Fatal(err)
		}
		marked++
	}
	if marked != n {
		tb.Fatalf("marked %d of %d rows", marked, n)
	}
	life.publish = per(meter.Take())
	later := now.Add(time.Hour + time.Minute)
	purged := 0
	for page, err := range idem.ListExpired(ctx, store, now, later) {
		if err != nil {
			tb.Fatal(err)
		}
		for _, e := range page {
			if err := store.Purge(ctx, e, later); err != nil {
				tb.Fatal(err)
			}
			purged++
		}
	}
	if purged != n {
		tb.Fatalf("purged %d of %d", purged, n)
	}
	life.purge = per(meter.Take())
	return life
}

// TestUnitsOverARecordsLife holds what a charge costs in write units over
// its record's life in each table mode. With TTL (one region): 3 table and
// 3 index units (the in-flight index, in and out; the row's day index
// entry), and TTL deletes free.
// Without TTL (the multi-region mode, per replica): the claim also writes
// the expiry index and the row the unpublished index (2 more); the
// publisher's mark updates the row and unlists it (1 + 1); and the purge
// deletes the record and its entry (1 + 1). The listings' reads are per
// page, not per record: here two hours of 32 buckets, 50 records, and the
// unpublished index's 32 shards.
func TestUnitsOverARecordsLife(t *testing.T) {
	t.Parallel()
	const n = 50
	single, multi := unitsOfALife(t, true, n), unitsOfALife(t, false, n)
	for name, pair := range map[string][2][2]float64{
		"with TTL, charge":     {{single.charge.TableWrite, single.charge.IndexWrite}, {3, 3}},
		"without TTL, charge":  {{multi.charge.TableWrite, multi.charge.IndexWrite}, {3, 5}},
		"without TTL, publish": {{multi.publish.TableWrite, multi.publish.IndexWrite}, {1, 1}},
		"without TTL, purge":   {{multi.purge.TableWrite, multi.purge.IndexWrite}, {1, 1}},
	} {
		if pair[0] != pair[1] {
			t.Errorf("%s: table WRU, index WRU = %v, want %v", name, pair[0], pair[1])
		}
	}
	t.Logf("WRU per record over its life: with TTL %.0f (table %.0f, index %.0f); without TTL %.0f (table %.0f, index %.0f), of which the publication's mark %.0f and the purge %.0f; "+
		"the purge's listing %.3f RRU per record, the unpublished listing %.3f",
		single.charge.TableWrite+single.charge.IndexWrite, single.charge.TableWrite, single.charge.IndexWrite,
		multi.charge.TableWrite+multi.charge.IndexWrite+multi.publish.TableWrite+multi.publish.IndexWrite+multi.purge.TableWrite+multi.purge.IndexWrite,
		multi.charge.TableWrite+multi.publish.TableWrite+multi.purge.TableWrite, multi.charge.IndexWrite+multi.publish.IndexWrite+multi.purge.IndexWrite,
		multi.publish.TableWrite+multi.publish.IndexWrite, multi.purge.TableWrite+multi.purge.IndexWrite, multi.purge.Read, multi.publish.Read)
}

// BenchmarkFirstExecutionByTableMode is the local overhead of the
// multi-region mode's table: a first execution on a table with TTL, and
// on one without it, which also writes the expiry index (each op one
// charge through the service on DynamoDB Local). Another region's round
// trip, which a strongly consistent global table adds to each write, is
// not here: docs/measurements.md estimates it.
func BenchmarkFirstExecutionByTableMode(b *testing.B) {
	for _, mode := range []struct {
		name string
		ttl  bool
	}{{"with-ttl", true}, {"without-ttl", false}} {
		b.Run(mode.name, func(b *testing.B) {
			ctx := context.Background()
			client := dynamotest.Client(b)
			table := dynamotest.NewTableFor(b, client, mode.ttl)
			acq, _ := acquirerhttp.NewClient("http://sandbox.invalid", "", sandbox.InProcess(sandbox.New("")))
			tbl := dynamo.Open(client, table)
			svc := chargetest.ServiceWith(idem.NewGuard(tbl.Store(), idem.Config{}), tbl.Ledger(), acq, httpapi.Render, charge.Config{})
			body := []byte(`{"amount": 25000, "currency": "BRL", "order_id": "order-123", "payment_method": "pm_card_visa"}`)
			i := 0
			for b.Loop() {
				i++
				if res := svc.Charge(ctx, charge.Input{Account: "acct_mode", Keys: []string{fmt.Sprintf("mode-%s-%d", mode.name, i)}, Body: body}); res.Outcome != op.Executed {
					b.Fatalf("charge %d: %s", i, res.Outcome)
				}
			}
		})
	}
}

// TestUnitsOfAVoid: what an operator's void costs in write units, on a
// record held with the evidence a charge's mismatch stores, its held
// marker at the charge's row key. The settling take-over carries the
// decision and the release's time (so the release event reads the same in
// every region) in the write it makes anyway; the voided marker replaces
// the held marker, one small item; the release marker is one small item
// more; the delete takes the record and its held-index entry.
func TestUnitsOfAVoid(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	meter := &dynamotest.Meter{Client: dynamotest.Client(t)}
	table := dynamotest.NewTable(t, meter.Client)
	clock := time.Now()
	ledger := dynamo.Open(meter, table).Ledger()
	guard := idem.NewGuard(dynamo.Open(meter, table).Store(), idem.Config{DefaultLease: time.Millisecond, Now: func() time.Time { return clock },
		Protocol: idem.Protocol{InTransitBound: time.Millisecond, ClockSkew: time.Millisecond, Downstream: "acquirer-units"}})
	body := []byte(`{"amount": 25000, "currency": "BRL", "order_id": "order-123", "payment_method": "pm_card_visa", "description": "a typical description of seventy characters or so, for the bill"}`)
	req, err := charge.ParseRequest(body, 0)
	if err != nil {
		t.Fatal(err)
	}
	const n = 10
	var takeOver, void dynamotest.Units
	for i := range n {
		scope := idem.Scope{Operation: charge.Operation, Account: "acct_units", Key: fmt.Sprintf("units-void-%d", i)}
		c, err := guard.Begin(ctx, scope, req.Canonical())
		if err != nil {
			t.Fatal(err)
		}
		m := &acquirer.MismatchError{Reason: acquirer.ReasonAmount, Stated: acquirer.Authorization{ID: "auth_0123456789abcdef", Status: acquirer.StatusCaptured, Amount: 250000, Currency: "BRL"}}
		id := charge.ID(c.Lease.DownstreamKey())
		if err := ledger.Hold(ctx, id, charge.HeldMarker{Account: scope.Account, Key: scope.Key}); err != nil {
			t.Fatal(err)
		}
		if err := c.Lease.HoldForOperator(ctx, m.Reason, m.Evidence(c.Lease.DownstreamKey(), acquirer.Request{Amount: 25000, Currency: "BRL"})); err != nil {
			t.Fatal(err)
		}
		clock = clock.Add(time.Second)
		meter.Take()
		lease, err := guard.TakeOverHeld(ctx, scope.PK(), "", idem.Settlement{Action: idem.SettleVoidConfirmed, By: "arn:aws:sts::123456789012:assumed-role/idempay-prod-operator/ana", Decision: "dec-0123456789abcdef0123456789abcdef"})
		if err != nil {
			t.Fatal(err)
		}
		u := meter.Take()
		takeOver.TableWrite, takeOver.IndexWrite = takeOver.TableWrite+u.TableWrite, takeOver.IndexWrite+u.IndexWrite
		if err := ledger.Void(ctx, id); err != nil {
			t.Fatal(err)
		}
		if err := lease.VoidConfirmed(ctx); err != nil {
			t.Fatal(err)
		}
		u = meter.Take()
		void.TableWrite, void.IndexWrite = void.TableWrite+u.TableWrite, void.IndexWrite+u.IndexWrite
	}
	got := [4]float64{takeOver.TableWrite / n, takeOver.IndexWrite / n, void.TableWrite / n, void.IndexWrite / n}
	// The take-over: 1, its index entry moved (2, as every lease change);
	// the voided marker 1, the release marker 1 and the delete 1, its
	// index entry removed 1.
	if want := [4]float64{1, 2, 3, 1}; got != want {
		t.Errorf("WRU per void: the settling take-over %v + index %v, the markers and the delete %v + index %v; want %v", got[0], got[1], got[2], got[3], want)
	}
}

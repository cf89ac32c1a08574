package dynamo_test

import (
	"context"
	"fmt"
	"maps"
	"testing"

	"github.com/idempotent-payments/idempay/internal/acquirer/acquirerhttp"
	"github.com/idempotent-payments/idempay/internal/capture"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/charge/chargetest"
	"github.com/idempotent-payments/idempay/internal/cost"
	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/dynamo/dynamotest"
	"github.com/idempotent-payments/idempay/internal/httpapi"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/refund"
	"github.com/idempotent-payments/idempay/internal/sandbox"
)

// captureWorld is an authorization of 1,000,000 made without its capture
// and the capture and refund services on DynamoDB Local, through api.
type captureWorld struct {
	svc     *capture.Service
	refunds *refund.Service
	charge  string
}

func newCaptureWorld(tb testing.TB, api dynamo.API, table string) captureWorld {
	tb.Helper()
	sb := sandbox.New("")
	sb.SetRefundBound(false)
	sb.SetCaptureBound(false)
	acq, _ := acquirerhttp.NewClient("http://sandbox.invalid", "", sandbox.InProcess(sb))
	tbl := dynamo.Open(api, table)
	guard := idem.NewGuard(tbl.Store(), idem.Config{})
	charges := chargetest.ServiceWith(guard, tbl.Ledger(), acq, httpapi.Render, charge.Config{})
	made := charges.Charge(context.Background(), charge.Input{Account: "acct_rt", Keys: []string{"capture-units-auth"},
		Body: []byte(`{"amount": 1000000, "currency": "BRL", "order_id": "1", "payment_method": "pm_card_visa", "capture": false}`)})
	if made.Outcome != op.Executed {
		tb.Fatalf("authorize: %s", made.Outcome)
	}
	return captureWorld{
		svc:     capture.NewService(guard, charges, tbl.Captures(), tbl.CaptureRows(), tbl.VoidRows(), acq, httpapi.RenderCapture, charge.Config{}),
		refunds: refund.NewService(guard, charges, tbl.Balances(), tbl.Refunds(), acq, httpapi.RenderRefund, charge.Config{}),
		charge:  made.ChargeID,
	}
}

func (w captureWorld) in(key, body string) capture.Input {
	return capture.Input{Account: "acct_rt", Keys: []string{key}, ChargeID: w.charge, Body: []byte(body)}
}

// TestCaptureRoundTrips holds the round trips of each capture and void
// path. A capture made: the claim (PutItem), the charge as its GET reads
// it (its row and its record: 2 GetItem), the reservation, the row, the
// entry's success and the completion (PutItem, 3 UpdateItem), as a
// refund's. A replay: the claim. A refusal by the bound: the claim, the
// charge, the refused reservation and the completion. A void: as a
// capture. A GET: the row; the lookup by key: the record and the row; the
// charge's figures: the balance, once.
func TestCaptureRoundTrips(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var trips dynamotest.RoundTrips
	client := dynamotest.Client(t, trips.Option)
	w := newCaptureWorld(t, client, dynamotest.NewTable(t, client))
	var made capture.Result
	for _, c := range []struct {
		name string
		run  func() capture.Result
		want op.Outcome
		rt   map[string]int
	}{
		{"made", func() capture.Result {
			made = w.svc.Capture(ctx, w.in("capture-rt-1", `{"amount": 600000, "final": false}`))
			return made
		},
			op.Executed, map[string]int{"PutItem": 2, "GetItem": 2, "UpdateItem": 3}},
		{"replay", func() capture.Result {
			return w.svc.Capture(ctx, w.in("capture-rt-1", `{"amount": 600000, "final": false}`))
		},
			op.Replayed, map[string]int{"PutItem": 1}},
		{"refused by the bound", func() capture.Result {
			return w.svc.Capture(ctx, w.in("capture-rt-2", `{"amount": 600000, "final": false}`))
		},
			op.Executed, map[string]int{"PutItem": 1, "GetItem": 2, "UpdateItem": 2}},
		{"GET a capture", func() capture.Result { return w.svc.GetCapture(ctx, "acct_rt", made.ID) }, op.Found,
			map[string]int{"GetItem": 1}},
		{"lookup by key", func() capture.Result { return w.svc.CaptureByKey(ctx, "acct_rt", "capture-rt-1") }, op.Found,
			map[string]int{"GetItem": 2}},
		{"void", func() capture.Result { return w.svc.Void(ctx, w.in("void-rt-1", `{}`)) }, op.Executed,
			map[string]int{"PutItem": 2, "GetItem": 2, "UpdateItem": 3}},
	} {
		trips.Take()
		res := c.run()
		if got := trips.Take(); res.Outcome != c.want || !maps.Equal(got, c.rt) {
			t.Errorf("%s: %s, round trips %v; want %s, %v", c.name, res.Outcome, got, c.want, c.rt)
		}
	}
	if _, err := w.svc.Balance(ctx, w.charge); err != nil || !maps.Equal(trips.Take(), map[string]int{"GetItem": 1}) {
		t.Errorf("the charge's figures: %v", err)
	}
}

// actionUnits runs n actions on one authorization, captures of 100 and
// refunds of 100 in turn (a capture first), and returns the units of the
// first capture and of the nth action.
func actionUnits(tb testing.TB, n int) (first, last dynamotest.Units) {
	tb.Helper()
	meter := &dynamotest.Meter{Client: dynamotest.Client(tb)}
	w := newCaptureWorld(tb, meter, dynamotest.NewTable(tb, meter.Client))
	ctx := context.Background()
	for i := range n {
		meter.Take()
		var status int
		if i%2 == 0 {
			status = w.svc.Capture(ctx, w.in(fmt.Sprintf("capture-units-%d", i), `{"amount": 100, "final": false}`)).Response.StatusCode
		} else {
			status = w.refunds.Refund(ctx, refund.Input{Account: "acct_rt", Keys: []string{fmt.Sprintf("refund-units-%d", i)}, ChargeID: w.charge,
				Body: []byte(`{"amount": 100}`)}).Response.StatusCode
		}
		if status != 201 {
			tb.Fatalf("action %d: %d", i, status)
		}
		if i == 0 {
			first = meter.Take()
		}
	}
	return first, meter.Take()
}

// voidUnits returns the units of a void, its authorization's only action.
func voidUnits(tb testing.TB) dynamotest.Units {
	tb.Helper()
	meter := &dynamotest.Meter{Client: dynamotest.Client(tb)}
	w := newCaptureWorld(tb, meter, dynamotest.NewTable(tb, meter.Client))
	meter.Take()
	if res := w.svc.Void(context.Background(), w.in("void-units", `{}`)); res.Response.StatusCode != 201 {
		tb.Fatalf("void: %s %d", res.Outcome, res.Response.StatusCode)
	}
	return meter.Take()
}

// TestCaptureUnits: a capture writes what a refund writes, 8 units (claim
// 1 + its index entry 1, reservation 1, row 1 + its day index entry 1,
// success 1, completion 1 + leaving the index 1), and reads 2 (the charge's row and record); so do
// a void and the 150th action on one authorization (captures and refunds
// in turn): each success folds its entry, so the balance holds only the
// actions in flight.
func TestCaptureUnits(t *testing.T) {
	t.Parallel()
	first, last := actionUnits(t, ManyRefunds)
	if got := [3]float64{first.TableWrite, first.IndexWrite, first.Read}; got != [3]float64{5, 3, 2} {
		t.Errorf("first capture: table WRU, index WRU, RRU = %v, want [5 3 2]", got)
	}
	if v := voidUnits(t); [3]float64{v.TableWrite, v.IndexWrite, v.Read} != [3]float64{5, 3, 2} {
		t.Errorf("void: table WRU, index WRU, RRU = %v, want [5 3 2], a capture's", [3]float64{v.TableWrite, v.IndexWrite, v.Read})
	}
	// The 150th is a refund of an authorization, which reads its balance
	// at Ready beside the charge's row and record.
	if got := [3]float64{last.TableWrite, last.IndexWrite, last.Read}; got != [3]float64{5, 3, 3} {
		t.Errorf("action %d: table WRU, index WRU, RRU = %v, want [5 3 3]", ManyRefunds, got)
	}
}

// BenchmarkCaptureUnits reports the units of an authorization's first
// capture (first-), of its 150th action (150th-) and of a void (void-),
// and what a million of each cost at on-demand prices.
func BenchmarkCaptureUnits(b *testing.B) {
	for b.Loop() {
		first, last := actionUnits(b, ManyRefunds)
		for _, u := range []struct {
			name  string
			units dynamotest.Units
		}{{"first", first}, {fmt.Sprintf("%dth", ManyRefunds), last}, {"void", voidUnits(b)}} {
			b.ReportMetric(u.units.TableWrite+u.units.IndexWrite, u.name+"-WRU/op")
			b.ReportMetric(u.units.Read, u.name+"-RRU/op")
			b.ReportMetric(1e6*((u.units.TableWrite+u.units.IndexWrite)*cost.DynamoDBWriteUnit+u.units.Read*cost.DynamoDBReadUnit), u.name+"-$/M")
		}
	}
	b.ReportMetric(0, "ns/op")
}

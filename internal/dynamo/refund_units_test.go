package dynamo_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idempotent-payments/idempay/internal/acquirer/acquirerhttp"
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
	"github.com/idempotent-payments/idempay/internal/tabledef"
)

// refundWorld is a charge of 1,000,000 and the refund service on DynamoDB
// Local, through api (a round-trip counter or a meter).
type refundWorld struct {
	svc    *refund.Service
	charge string
}

func newRefundWorld(tb testing.TB, api dynamo.API, table string) refundWorld {
	tb.Helper()
	sb := sandbox.New("")
	sb.SetRefundBound(false)
	acq, _ := acquirerhttp.NewClient("http://sandbox.invalid", "", sandbox.InProcess(sb))
	tbl := dynamo.Open(api, table)
	guard := idem.NewGuard(tbl.Store(), idem.Config{})
	charges := chargetest.ServiceWith(guard, tbl.Ledger(), acq, httpapi.Render, charge.Config{})
	made := charges.Charge(context.Background(), charge.Input{Account: "acct_rt", Keys: []string{"refund-units-charge"},
		Body: []byte(`{"amount": 1000000, "currency": "BRL", "order_id": "1", "payment_method": "pm_card_visa"}`)})
	if made.Outcome != op.Executed {
		tb.Fatalf("charge: %s", made.Outcome)
	}
	return refundWorld{svc: refund.NewService(guard, charges, tbl.Balances(), tbl.Refunds(), acq, httpapi.RenderRefund, charge.Config{}), charge: made.ChargeID}
}

func (w refundWorld) refund(key, body string) refund.Result {
	return w.svc.Refund(context.Background(), refund.Input{Account: "acct_rt", Keys: []string{key}, ChargeID: w.charge, Body: []byte(body)})
}

// TestRefundRoundTrips holds the round trips of each refund path. A
// refund made: the claim (PutItem), the charge as its GET reads it (its
// row and its record: 2 GetItem), the reservation, the refund row, the
// entry's success and the completion (PutItem, 3 UpdateItem). A replay:
// the claim. A refusal by the bound: the claim, the charge, the refused
// reservation and the completion. A GET of a refund: its row; the lookup by
// key: the record and the row; amount_refunded: the balance.
func TestRefundRoundTrips(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var trips dynamotest.RoundTrips
	client := dynamotest.Client(t, trips.Option)
	w := newRefundWorld(t, client, dynamotest.NewTable(t, client))
	var made refund.Result
	for _, c := range []struct {
		name string
		run  func() refund.Result
		want op.Outcome
		rt   map[string]int
	}{
		{"made", func() refund.Result { made = w.refund("refund-rt-1", `{"amount": 600000}`); return made }, op.Executed,
			map[string]int{"PutItem": 2, "GetItem": 2, "UpdateItem": 3}},
		{"replay", func() refund.Result { return w.refund("refund-rt-1", `{"amount": 600000}`) }, op.Replayed,
			map[string]int{"PutItem": 1}},
		{"refused by the bound", func() refund.Result { return w.refund("refund-rt-2", `{"amount": 600000}`) }, op.Executed,
			map[string]int{"PutItem": 1, "GetItem": 2, "UpdateItem": 2}},
		{"GET a refund", func() refund.Result { return w.svc.Get(ctx, "acct_rt", made.ID) }, op.Found,
			map[string]int{"GetItem": 1}},
		{"lookup by key", func() refund.Result { return w.svc.ByKey(ctx, "acct_rt", "refund-rt-1") }, op.Found,
			map[string]int{"GetItem": 2}},
	} {
		trips.Take()
		res := c.run()
		if got := trips.Take(); res.Outcome != c.want || !maps.Equal(got, c.rt) {
			t.Errorf("%s: %s, round trips %v; want %s, %v", c.name, res.Outcome, got, c.want, c.rt)
		}
	}
	if _, err := w.svc.Refunded(ctx, w.charge); err != nil || !maps.Equal(trips.Take(), map[string]int{"GetItem": 1}) {
		t.Errorf("amount_refunded: %v", err)
	}
}

// refundUnits runs n refunds made on one charge (its 1st to its nth) and
// returns the units of the last one, as DynamoDB reports them.
func refundUnits(tb testing.TB, n int) dynamotest.Units {
	tb.Helper()
	meter := &dynamotest.Meter{Client: dynamotest.Client(tb)}
	w := newRefundWorld(tb, meter, dynamotest.NewTable(tb, meter.Client))
	for i := range n {
		meter.Take()
		if res := w.refund(fmt.Sprintf("refund-units-%d", i), `{"amount": 100}`); res.Outcome != op.Executed || res.Response.StatusCode != 201 {
			tb.Fatalf("refund %d: %s %d", i, res.Outcome, res.Response.StatusCode)
		}
	}
	return meter.Take()
}

// TestRefundUnits holds a refund's write and read units: the first refund
// of a charge writes 8 (claim 1 + its index entry 1, reservation 1, refund
// row 1 + its day index entry 1, success 1, completion 1 + leaving the
// index 1) and reads 2 (the
// charge's row and record); so does its 150th, since each success folds
// its entry and the balance holds only the refunds in flight. A refusal by
// the bound writes 5: claim and completion with their index entries, and
// the refused reservation, billed 1.
func TestRefundUnits(t *testing.T) {
	t.Parallel()
	first := refundUnits(t, 1)
	if got := [3]float64{first.TableWrite, first.IndexWrite, first.Read}; got != [3]float64{5, 3, 2} {
		t.Errorf("first refund: table WRU, index WRU, RRU = %v, want [5 3 2]", got)
	}
	meter := &dynamotest.Meter{Client: dynamotest.Client(t)}
	w := newRefundWorld(t, meter, dynamotest.NewTable(t, meter.Client))
	if res := w.refund("refund-units-made", `{"amount": 600000}`); res.Response.StatusCode != 201 {
		t.Fatalf("made: %s %d", res.Outcome, res.Response.StatusCode)
	}
	meter.Take()
	if res := w.refund("refund-units-refused", `{"amount": 600000}`); res.Response.StatusCode != 422 {
		t.Fatalf("refused: %s %d", res.Outcome, res.Response.StatusCode)
	}
	if u := meter.Take(); [3]float64{u.TableWrite, u.IndexWrite, u.Read} != [3]float64{3, 2, 2} {
		t.Errorf("refused by the bound: table WRU, index WRU, RRU = %v, want [3 2 2] (the refused reservation is billed 1)", [3]float64{u.TableWrite, u.IndexWrite, u.Read})
	}
	last := refundUnits(t, ManyRefunds)
	if got := [3]float64{last.TableWrite, last.IndexWrite, last.Read}; got != [3]float64{5, 3, 2} {
		t.Errorf("refund %d: table WRU, index WRU, RRU = %v, want [5 3 2], the first's", ManyRefunds, got)
	}
}

// ManyRefunds is the most actions one charge takes at Checkout.com (its
// captures and refunds together): the count whose last refund's units
// TestRefundUnits holds equal to the first's.
const ManyRefunds = 150

// BenchmarkRefundUnits reports the units of a charge's first and 150th
// refund, and what a million of them cost at on-demand prices.
func BenchmarkRefundUnits(b *testing.B) {
	for _, n := range []int{1, ManyRefunds} {
		b.Run(fmt.Sprintf("refund-%d", n), func(b *testing.B) {
			for b.Loop() {
				u := refundUnits(b, n)
				b.ReportMetric(u.TableWrite+u.IndexWrite, "WRU/op")
				b.ReportMetric(u.Read, "RRU/op")
				b.ReportMetric(1e6*((u.TableWrite+u.IndexWrite)*cost.DynamoDBWriteUnit+u.Read*cost.DynamoDBReadUnit), "$/M")
			}
			b.ReportMetric(0, "ns/op")
		})
	}
}

// TestRefundConflicts: in the multi-region mode a reservation that races
// another region's write is retried as every write is, and one that
// conflicts on every try sends nothing.
func TestRefundConflicts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := dynamotest.Client(t)
	table := dynamotest.NewTable(t, client)
	var conflicts atomic.Int64 // how many of the next UpdateItems conflict
	proxy := dynamotest.NewConflictProxy(t, os.Getenv("AWS_ENDPOINT_URL_DYNAMODB"), func(op string) bool {
		return op == "UpdateItem" && conflicts.Add(-1) >= 0
	})
	proxied := dynamotest.Client(t, proxy.Option)
	sb := sandbox.New("")
	sb.SetRefundBound(false)
	acq, _ := acquirerhttp.NewClient("http://sandbox.invalid", "", sandbox.InProcess(sb))
	direct := dynamo.Open(client, table)
	charges := chargetest.ServiceWith(idem.NewGuard(direct.Store(), idem.Config{}), direct.Ledger(), acq, httpapi.Render, charge.Config{})
	made := charges.Charge(ctx, charge.Input{Account: "acct_rt", Keys: []string{"conflict-charge"},
		Body: []byte(`{"amount": 1000, "currency": "BRL", "order_id": "1", "payment_method": "pm_card_visa"}`)})
	if made.Outcome != op.Executed {
		t.Fatalf("charge: %s", made.Outcome)
	}
	over := dynamo.Open(proxied, table)
	svc := refund.NewService(idem.NewGuard(over.Store(), idem.Config{}), charges, over.Balances(), over.Refunds(), acq, httpapi.RenderRefund, charge.Config{})
	in := func(key string) refund.Input {
		return refund.Input{Account: "acct_rt", Keys: []string{key}, ChargeID: made.ChargeID, Body: []byte(`{"amount": 300}`)}
	}

	conflicts.Store(1) // the reservation's first try
	if res := svc.Refund(ctx, in("conflict-once")); res.Outcome != op.Executed || res.Response.StatusCode != 201 || len(sb.Refunds()) != 1 {
		t.Fatalf("a reservation that conflicted once: %s %d, %d refunds", res.Outcome, res.Response.StatusCode, len(sb.Refunds()))
	}
	conflicts.Store(1 << 20) // every update
	if res := svc.Refund(ctx, in("conflict-always")); res.Outcome == op.Executed || len(sb.Refunds()) != 1 {
		t.Fatalf("a reservation that always conflicts: %s, %d refunds; want nothing sent", res.Outcome, len(sb.Refunds()))
	}
	conflicts.Store(0)
	if b, err := direct.Balances().Get(ctx, made.ChargeID); err != nil || b.Refunded != 300 || b.Reserved != 0 || b.Remaining != 700 {
		t.Fatalf("balance %+v, %v", b, err)
	}
}

// TestBalanceNeverExpires: in either table mode, a charge's balance and its
// refund rows carry no expiry: no TTL attribute, no expiry bucket that the
// multi-region mode's purge reads.
func TestBalanceNeverExpires(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := dynamotest.Client(t)
	for _, ttl := range []bool{true, false} {
		table := dynamotest.NewTableFor(t, client, ttl)
		w := newRefundWorld(t, client, table)
		made := w.refund(fmt.Sprintf("never-expires-%v", ttl), `{"amount": 100}`)
		if made.Outcome != op.Executed {
			t.Fatalf("refund: %s", made.Outcome)
		}
		for _, pk := range []string{tabledef.BalancePrefix + w.charge, tabledef.RefundPrefix + made.ID} {
			out, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
				Key: map[string]types.AttributeValue{tabledef.KeyAttribute: &types.AttributeValueMemberS{Value: pk}}})
			if err != nil || out.Item == nil {
				t.Fatalf("%s: %v", pk, err)
			}
			for _, name := range []string{tabledef.TTLAttribute, tabledef.ExpiryBucketAttribute} {
				if _, has := out.Item[name]; has {
					t.Errorf("ttl %v: %s carries %s", ttl, pk[:strings.Index(pk, "#")+1], name)
				}
			}
		}
	}
}

package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/acquirer/acquirerhttp"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/charge/chargetest"
	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/dynamo/dynamotest"
	"github.com/idempotent-payments/idempay/internal/event"
	"github.com/idempotent-payments/idempay/internal/httpapi"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/sandbox"
)

// TestRowLayout: the amount is a DynamoDB number, so the table can be
// summed without parsing strings; a row written before that, with the
// amount as a decimal string, still reads; a row that is not a charge is
// ErrUnreadableCharge.
func TestRowLayout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := dynamotest.Client(t)
	table := dynamotest.NewTable(t, client)
	ledger := dynamo.Open(client, table).Ledger()
	id := "ch_0123456789abcdef0123456789abcdef01234567"
	c := charge.Charge{Origin: op.Origin{ID: id, Account: "acct_n",
		CreatedAt: time.Now().UTC().Truncate(time.Millisecond)}, Status: acquirer.StatusCaptured, Amount: 1990, Currency: "BRL"}
	if _, err := ledger.Write(ctx, c); err != nil {
		t.Fatal(err)
	}
	key := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: dynamo.Key(id)}}
	out, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key})
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := out.Item["amount"].(*types.AttributeValueMemberN); !ok || n.Value != "1990" {
		t.Fatalf("amount stored as %#v, want the number 1990", out.Item["amount"])
	}

	old := maps.Clone(out.Item)
	oldID := "ch_1123456789abcdef0123456789abcdef01234567"
	old["pk"], old["id"] = &types.AttributeValueMemberS{Value: dynamo.Key(oldID)}, &types.AttributeValueMemberS{Value: oldID}
	old["amount"] = &types.AttributeValueMemberS{Value: "1990"}
	if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: old}); err != nil {
		t.Fatal(err)
	}
	if got, err := ledger.Get(ctx, oldID); err != nil || got.Amount != 1990 {
		t.Fatalf("a row with the amount as a string: %+v, %v", got, err)
	}

	bad := maps.Clone(out.Item)
	badID := "ch_2123456789abcdef0123456789abcdef01234567"
	bad["pk"], bad["id"], bad["type"] = &types.AttributeValueMemberS{Value: dynamo.Key(badID)}, &types.AttributeValueMemberS{Value: badID}, &types.AttributeValueMemberS{Value: "refund"}
	if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: bad}); err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.Get(ctx, badID); !errors.Is(err, charge.ErrUnreadableCharge) {
		t.Fatalf("a row that is not a charge: %v, want ErrUnreadableCharge", err)
	}
}

// TestChargeRoundTrips pins the DynamoDB requests of the charge paths
// (DESIGN §4): a first execution is 3 (the claim, the ledger row, the
// completion), a replay 1, a GET by id 2 (the row, then its record); a
// charge held on its first answer 3 (the claim, the held marker, the
// hold), and its GET by id 2 (the marker, then its record).
func TestChargeRoundTrips(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var trips dynamotest.RoundTrips
	client := dynamotest.Client(t, trips.Option)
	table := dynamotest.NewTable(t, client)
	sb := sandbox.New("")
	acq, _ := acquirerhttp.NewClient("http://sandbox.invalid", "", sandbox.InProcess(sb))
	tbl := dynamo.Open(client, table)
	svc := chargetest.ServiceWith(idem.NewGuard(tbl.Store(), idem.Config{}), tbl.Ledger(), acq, httpapi.Render, charge.Config{})
	in := charge.Input{Account: "acct_rt", Keys: []string{"round-trip-key"}, Body: []byte(`{"amount": 100, "currency": "BRL", "order_id": "1", "payment_method": "pm_card_visa"}`)}
	trips.Take()
	first := svc.Charge(ctx, in)
	if got := trips.Take(); first.Outcome != op.Executed || !maps.Equal(got, map[string]int{"PutItem": 2, "UpdateItem": 1}) {
		t.Fatalf("first execution: %s, round trips %v", first.Outcome, got)
	}
	if r := svc.Charge(ctx, in); r.Outcome != op.Replayed || !maps.Equal(trips.Take(), map[string]int{"PutItem": 1}) {
		t.Fatalf("replay: %s", r.Outcome)
	}
	var id string
	for k := range sb.ByKey() {
		id = charge.ID(k)
	}
	if r := svc.Get(ctx, "acct_rt", id); r.Outcome != op.Found || !maps.Equal(trips.Take(), map[string]int{"GetItem": 2}) {
		t.Fatalf("get: %s (the row, then its record)", r.Outcome)
	}
	// Held on its first answer: the claim, the held marker, the hold; a
	// GET by id reads the marker, then the record it names.
	held := charge.Input{Account: "acct_rt", Keys: []string{"round-trip-held-key"}, Body: []byte(`{"amount": 100, "currency": "BRL", "order_id": "2", "payment_method": "` + sandbox.PaymentMethodTenfold + `"}`)}
	if r := svc.Charge(ctx, held); r.Outcome != op.Mismatch || !maps.Equal(trips.Take(), map[string]int{"PutItem": 2, "UpdateItem": 1}) {
		t.Fatalf("held: %s", r.Outcome)
	}
	rec, err := tbl.Store().Get(ctx, idem.Scope{Operation: charge.Operation, Account: "acct_rt", Key: "round-trip-held-key"}.PK(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	trips.Take()
	if r := svc.Get(ctx, "acct_rt", charge.ID(rec.DownstreamKey)); r.Outcome != op.Held || !maps.Equal(trips.Take(), map[string]int{"GetItem": 2}) {
		t.Fatalf("get of a held charge: %s (its marker, then its record)", r.Outcome)
	}
}

// TestItemSizes measures the items of a charge by DynamoDB's size rules
// (dynamotest.ItemSize): the record claimed and completed, and the ledger
// row, for descriptions of 0 to 500 characters. Up to 200 characters each
// stays under 1 KB, so each write of a first execution is 1 write unit.
func TestItemSizes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := dynamotest.Client(t)
	table := dynamotest.NewTable(t, client)
	store := dynamo.Open(client, table).Store()
	sb := sandbox.New("")
	acq, _ := acquirerhttp.NewClient("http://sandbox.invalid", "", sandbox.InProcess(sb))
	svc := chargetest.ServiceWith(idem.NewGuard(store, idem.Config{}), dynamo.Open(client, table).Ledger(), acq, httpapi.Render, charge.Config{})
	raw := func(pk string) map[string]types.AttributeValue {
		out, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}}, ConsistentRead: aws.Bool(true)})
		if err != nil || out.Item == nil {
			t.Fatalf("GetItem %s: %v", pk, err)
		}
		return out.Item
	}
	for _, n := range []int{0, 70, 200, 500} {
		desc := strings.Repeat("d", n)
		body := fmt.Sprintf(`{"amount": 2500000, "currency": "BRL", "order_id": "%s", "payment_method": "pm_card_visa", "description": %q}`, strings.Repeat("o", 36), desc)
		scope := idem.Scope{Operation: charge.Operation, Account: "acct_" + strings.Repeat("a", 24), Key: fmt.Sprintf("%036d", n)}
		guard := idem.NewGuard(store, idem.Config{})
		// The claim as the first write stores it.
		req, err := charge.ParseRequest([]byte(body), 0)
		if err != nil {
			t.Fatal(err)
		}
		claimScope := scope
		claimScope.Key += "-claim"
		if _, err := guard.Begin(ctx, claimScope, req.Canonical()); err != nil {
			t.Fatal(err)
		}
		claimed := dynamotest.ItemSize(raw(claimScope.PK()))
		res := svc.Charge(ctx, charge.Input{Account: scope.Account, Keys: []string{scope.Key}, Body: []byte(body)})
		if res.Outcome != op.Executed {
			t.Fatalf("%d: %s", n, res.Outcome)
		}
		rec, _ := guard.Lookup(ctx, scope.PK())
		completed := dynamotest.ItemSize(raw(scope.PK()))
		row := dynamotest.ItemSize(raw(dynamo.Key(charge.ID(rec.DownstreamKey))))
		t.Logf("description %3d: claimed record %4d B, completed record %4d B, ledger row %4d B", n, claimed, completed, row)
		if n <= 200 && (claimed > 1024 || completed > 1024 || row > 1024) {
			t.Errorf("description of %d characters: %d / %d / %d bytes, want each under 1 KB", n, claimed, completed, row)
		}
	}
}

// TestLookupByKey: the lookup by idempotency key on DynamoDB Local answers
// the caller's own charge, captured or declined, in two reads (one when the
// warm cache holds the record); another account's key, an unknown key and
// an expired record are NotFound; a key in flight (its lease live or
// ended) is InFlight as for a POST, a held one Held; a bad account or key
// is refused. Nothing it answers writes.
func TestLookupByKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var trips dynamotest.RoundTrips
	client := dynamotest.Client(t, trips.Option)
	table := dynamotest.NewTable(t, client)
	tbl := dynamo.Open(client, table)
	store, ledger := tbl.Store(), tbl.Ledger()
	sb := sandbox.New("")
	acq, _ := acquirerhttp.NewClient("http://sandbox.invalid", "", sandbox.InProcess(sb))
	service := func(cfg idem.Config) *charge.Service {
		return chargetest.ServiceWith(idem.NewGuard(store, cfg), ledger, acq, httpapi.Render, charge.Config{})
	}
	charger := service(idem.Config{})
	body := func(pm string) []byte {
		return []byte(`{"amount": 1990, "currency": "BRL", "order_id": "o-1", "payment_method": "` + pm + `"}`)
	}
	if r := charger.Charge(ctx, charge.Input{Account: "acct_a", Keys: []string{"lookup-captured"}, Body: body("pm_card_visa")}); r.Outcome != op.Executed {
		t.Fatalf("charge: %s", r.Outcome)
	}
	if r := charger.Charge(ctx, charge.Input{Account: "acct_a", Keys: []string{"lookup-declined"}, Body: body("pm_card_declined")}); r.Outcome != op.Executed {
		t.Fatalf("decline: %s", r.Outcome)
	}

	lookup := service(idem.Config{CacheSize: 16}) // another instance: a cold cache
	trips.Take()
	got := lookup.ByKey(ctx, "acct_a", "lookup-captured")
	if n := trips.Take(); got.Outcome != op.Found || got.Charge.Status != acquirer.StatusCaptured || got.Charge.IdempotencyKey != "lookup-captured" ||
		got.Charge.Account != "acct_a" || !maps.Equal(n, map[string]int{"GetItem": 2}) {
		t.Fatalf("own charge: %s %+v, round trips %v; want Found, captured, two reads", got.Outcome, got.Charge, n)
	}
	again := lookup.ByKey(ctx, "acct_a", "lookup-captured")
	if n := trips.Take(); again.Outcome != op.Found || again.Charge.ID != got.Charge.ID || !maps.Equal(n, map[string]int{"GetItem": 1}) {
		t.Fatalf("warm: %s, round trips %v; want Found from the cached record and one read", again.Outcome, n)
	}
	if d := lookup.ByKey(ctx, "acct_a", "lookup-declined"); d.Outcome != op.Found || d.Charge.Status != acquirer.StatusDeclined || d.Charge.DeclineCode == "" {
		t.Fatalf("decline: %s %+v, want Found with the declined charge", d.Outcome, d.Charge)
	}
	for name, r := range map[string]charge.Result{
		"another account's key": lookup.ByKey(ctx, "acct_b", "lookup-captured"),
		"an unknown key":        lookup.ByKey(ctx, "acct_a", "lookup-never-sent"),
		"an expired record": service(idem.Config{Now: func() time.Time { return time.Now().Add(idem.DefaultRetention + time.Hour) }}).
			ByKey(ctx, "acct_a", "lookup-captured"),
	} {
		if r.Outcome != op.NotFound {
			t.Errorf("%s: %s, want NotFound", name, r.Outcome)
		}
	}

	// In flight: a claim whose owner has not finished, its lease live and
	// then ended; held: a record held for an operator.
	guard := idem.NewGuard(store, idem.Config{})
	claim := func(key string, lease time.Duration) *idem.Lease {
		cctx, cancel := context.WithTimeout(ctx, lease)
		defer cancel()
		req, err := charge.ParseRequest(body("pm_card_visa"), 0)
		if err != nil {
			t.Fatal(err)
		}
		c, err := guard.Begin(cctx, idem.Scope{Operation: charge.Operation, Account: "acct_a", Key: key, Source: event.SourceHTTP}, req.Canonical())
		if err != nil || c.Lease == nil {
			t.Fatalf("claim %s: %+v, %v", key, c, err)
		}
		return c.Lease
	}
	trips.Take()
	claim("lookup-in-flight", time.Minute)
	if r := lookup.ByKey(ctx, "acct_a", "lookup-in-flight"); r.Outcome != op.InFlight || r.RetryAfter < time.Second {
		t.Errorf("in flight: %s, Retry-After %s; want InFlight as for a POST", r.Outcome, r.RetryAfter)
	}
	held := claim("lookup-held", time.Minute)
	if err := held.HoldForOperator(ctx, "acquirer_mismatch", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if r := lookup.ByKey(ctx, "acct_a", "lookup-held"); r.Outcome != op.Held || r.RetryAfter <= 0 {
		t.Errorf("held: %s, want Held", r.Outcome)
	}
	ended := service(idem.Config{Now: func() time.Time { return time.Now().Add(2 * time.Hour) }})
	if r := ended.ByKey(ctx, "acct_a", "lookup-in-flight"); r.Outcome != op.InFlight {
		t.Errorf("in flight, its lease ended: %s, want InFlight (the retry or the reconciler resolves it)", r.Outcome)
	}

	for name, r := range map[string]struct {
		res  charge.Result
		want op.Outcome
	}{
		"no account": {lookup.ByKey(ctx, "", "lookup-captured"), op.AccountInvalid},
		"no key":     {lookup.ByKey(ctx, "acct_a", ""), op.KeyMissing},
		"short key":  {lookup.ByKey(ctx, "acct_a", "short"), op.KeyInvalid},
		"bad byte":   {lookup.ByKey(ctx, "acct_a", "lookup-\x7f-key"), op.KeyInvalid},
	} {
		if r.res.Outcome != r.want {
			t.Errorf("%s: %s, want %s", name, r.res.Outcome, r.want)
		}
	}
	n := trips.Take()
	delete(n, "GetItem")
	if !maps.Equal(n, map[string]int{"PutItem": 2, "UpdateItem": 1}) { // the two claims and the hold
		t.Errorf("writes %v: a lookup wrote", n)
	}
}

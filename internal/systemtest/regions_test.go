package systemtest_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/acquirer/acquirerhttp"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/charge/chargetest"
	"github.com/idempotent-payments/idempay/internal/command"
	"github.com/idempotent-payments/idempay/internal/deploy"
	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/dynamo/dynamotest"
	"github.com/idempotent-payments/idempay/internal/event"
	"github.com/idempotent-payments/idempay/internal/event/eventtest"
	"github.com/idempotent-payments/idempay/internal/httpapi"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/idem/idemtest"
	"github.com/idempotent-payments/idempay/internal/localapi"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/sandbox"
	"github.com/idempotent-payments/idempay/internal/sweep"
	"github.com/idempotent-payments/idempay/internal/sweep/sweeptest"
	"github.com/idempotent-payments/idempay/internal/tabledef"
)

// TestEventualConsistencyDoubleCharges is the negative control of the
// multi-region mode: two regions, each with its own table, and between
// them an asynchronous last-writer-wins replicator, as a global table in
// its default mode (multi-region eventual consistency) behaves. Every
// intent is sent once to each region at the same moment while the
// replicator is paused, so the outcome is certain: each region's claim
// succeeds in its own table, each sends its own downstream key (the claim
// time is in it), and the acquirer authorizes both. Once the replicator
// runs the tables converge on one record per key, but two charges and
// two ledger rows remain. Beside it, the same storm on one table shared by
// both regions (what strong consistency gives) charges each intent once.
func TestEventualConsistencyDoubleCharges(t *testing.T) {
	t.Parallel()
	const intents = 20
	client := dynamotest.Client(t)
	east, west := dynamotest.NewTable(t, client), dynamotest.NewTable(t, client)
	repl := &lwwReplicator{db: client, tables: [2]string{east, west}, seen: [2]map[string]string{{}, {}}}

	sb := sandbox.New("")
	duplicates := regionStorm(t, sb, intents, [2]*charge.Service{regionService(t, client, east, sb), regionService(t, client, west, sb)})
	if duplicates != intents {
		t.Fatalf("%d of %d intents charged twice across two eventually consistent regions; the control wants every one", duplicates, intents)
	}
	repl.converge(t)
	rows := 0
	for _, item := range repl.scan(t, east) {
		if pk, _ := item[tabledef.KeyAttribute].(*types.AttributeValueMemberS); pk != nil && strings.HasPrefix(pk.Value, tabledef.LedgerPrefix) {
			rows++
		}
	}
	if rows != 2*intents {
		t.Fatalf("after the replicas converged the ledger holds %d rows for %d intents; want two each (the second charge stays)", rows, intents)
	}
	t.Logf("eventual consistency: %d intents, %d charged twice, %d ledger rows after convergence", intents, duplicates, rows)

	shared := dynamotest.NewTable(t, client)
	sb = sandbox.New("")
	if d := regionStorm(t, sb, intents, [2]*charge.Service{regionService(t, client, shared, sb), regionService(t, client, shared, sb)}); d != 0 {
		t.Fatalf("one strongly consistent table: %d intents charged twice, want 0", d)
	}
}

// regionService is one region's charge service on table, charging sb.
func regionService(t *testing.T, client *dynamodb.Client, table string, sb *sandbox.Server) *charge.Service {
	t.Helper()
	acq, err := acquirerhttp.NewClient("http://sandbox.invalid", "", sandbox.InProcess(sb))
	if err != nil {
		t.Fatal(err)
	}
	tbl := dynamo.Open(client, table)
	guard := idem.NewGuard(tbl.Store(), idem.Config{Protocol: idem.Protocol{Downstream: localapi.SandboxAcquirerID}})
	return chargetest.ServiceWith(guard, tbl.Ledger(), acq, httpapi.Render, charge.Config{})
}

// regionStorm sends each of intents once to each region at the same
// moment and returns how many the acquirer authorized more than once.
func regionStorm(t *testing.T, sb *sandbox.Server, intents int, regions [2]*charge.Service) int {
	t.Helper()
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range intents {
		for _, svc := range regions {
			wg.Go(func() {
				res := svc.Charge(ctx, charge.Input{
					Account: "acct_regions", Keys: []string{fmt.Sprintf("region-storm-%d", i)}, Source: event.SourceHTTP,
					Body: []byte(fmt.Sprintf(`{"amount": 2500, "currency": "BRL", "order_id": "o-%d", "payment_method": "pm_card_visa"}`, i)),
				})
				if res.Outcome != op.Executed && res.Outcome != op.Replayed && res.Outcome != op.InFlight {
					t.Errorf("intent %d: %s", i, res.Outcome)
				}
			})
		}
	}
	wg.Wait()
	return len(sb.ByKey()) - intents
}

// lwwReplicator copies each table's changes to the other, later than they
// were made, the later write winning: a global table's default mode. A
// pass finds what each table wrote since the last pass by comparing each
// item with what it saw then; an item written in both since, the first
// table's write wins. Deletes are copied too.
type lwwReplicator struct {
	db     *dynamodb.Client
	tables [2]string
	seen   [2]map[string]string // per table: pk → the item's digest at the last pass
}

// converge runs passes until one copies nothing.
func (r *lwwReplicator) converge(t *testing.T) {
	t.Helper()
	for pass := 0; ; pass++ {
		if pass == 20 {
			t.Fatal("the replicas did not converge in 20 passes")
		}
		if r.pass(t) == 0 {
			return
		}
	}
}

// pass copies what each table wrote since the last pass to the other and
// returns how many writes it copied.
func (r *lwwReplicator) pass(t *testing.T) int {
	t.Helper()
	var now [2]map[string]map[string]types.AttributeValue
	for i, table := range r.tables {
		now[i] = map[string]map[string]types.AttributeValue{}
		for _, item := range r.scan(t, table) {
			now[i][item[tabledef.KeyAttribute].(*types.AttributeValueMemberS).Value] = item
		}
	}
	// written[i]: the keys table i wrote (or deleted) since the last pass.
	var written [2]map[string]bool
	for i := range 2 {
		written[i] = map[string]bool{}
		for pk, item := range now[i] {
			if r.seen[i][pk] != digest(t, item) {
				written[i][pk] = true
			}
		}
		for pk := range r.seen[i] {
			if _, ok := now[i][pk]; !ok {
				written[i][pk] = true
			}
		}
	}
	copied := 0
	for i := range 2 {
		other := 1 - i
		for pk := range written[i] {
			if i == 1 && written[0][pk] {
				continue // written in both: the first table's write wins
			}
			ctx := context.Background()
			if item, ok := now[i][pk]; ok {
				if _, err := r.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(r.tables[other]), Item: item}); err != nil {
					t.Fatal(err)
				}
			} else if _, err := r.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(r.tables[other]),
				Key: map[string]types.AttributeValue{tabledef.KeyAttribute: &types.AttributeValueMemberS{Value: pk}}}); err != nil {
				t.Fatal(err)
			}
			copied++
		}
	}
	for i := range 2 { // what each table holds now, the copies included
		r.seen[i] = map[string]string{}
		for _, item := range r.scan(t, r.tables[i]) {
			r.seen[i][item[tabledef.KeyAttribute].(*types.AttributeValueMemberS).Value] = digest(t, item)
		}
	}
	return copied
}

func (r *lwwReplicator) scan(t *testing.T, table string) []map[string]types.AttributeValue {
	t.Helper()
	var items []map[string]types.AttributeValue
	p := dynamodb.NewScanPaginator(r.db, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, page.Items...)
	}
	return items
}

// digest names an item's content, whatever its attributes' order.
func digest(t *testing.T, item map[string]types.AttributeValue) string {
	t.Helper()
	if item == nil {
		return ""
	}
	var plain map[string]any
	if err := attributevalue.UnmarshalMap(item, &plain); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", sha256.Sum256([]byte(fmt.Sprint(plain))))
}

// TestTwoRegionsSweepAndReconcileOnce: two regions' sweepers and
// reconcilers on one strongly consistent table. The fences decide, with no
// split of the shards between regions: each stale record is flagged by one
// sweeper (Flag is fenced on the listed stale_at), so one reconcile command
// is sent per record; and when both regions' reconcilers get every
// command (a redelivery, or both queues fed), one resolves each record and
// the other finds nothing to do. The extra work is that one read per
// duplicate command, measured here.
func TestTwoRegionsSweepAndReconcileOnce(t *testing.T) {
	t.Parallel()
	const records = 20
	ctx := context.Background()
	client := dynamotest.Client(t)
	table := dynamotest.NewTable(t, client)
	clock := idemtest.NewClock(time.Now().Truncate(time.Millisecond))
	sb := sandbox.New("")
	region := func() (*charge.Service, *charge.Service, *sweep.Sweeper, *sweeptest.Queue) {
		acq, err := acquirerhttp.NewClient("http://sandbox.invalid", "", sandbox.InProcess(sb))
		if err != nil {
			t.Fatal(err)
		}
		tbl := dynamo.Open(client, table)
		store := tbl.Store()
		guard := idem.NewGuard(store, idem.Config{Now: clock.Now, Protocol: idem.Protocol{Downstream: localapi.SandboxAcquirerID}})
		q := &sweeptest.Queue{}
		sw := sweep.New(store, q, sweep.Config{InTransitBound: idem.DefaultInTransitBound, ClockSkew: idem.DefaultClockSkew, Now: clock.Now})
		ledger := tbl.Ledger()
		return chargetest.ServiceWith(guard, ledger, acq, httpapi.Render, charge.Config{Now: clock.Now, Logger: quiet}),
			chargetest.ServiceWith(guard, ledger, answerLost{acq}, httpapi.Render, charge.Config{Now: clock.Now, Logger: quiet}), sw, q
	}
	east, lossy, eastSweeper, eastQueue := region()
	west, _, westSweeper, westQueue := region()

	// The acquirer authorizes every charge and its answer is lost: each
	// record is left in flight, its outcome unknown.
	for i := range records {
		res := lossy.Charge(ctx, charge.Input{Account: "acct_sweep", Keys: []string{fmt.Sprintf("two-sweepers-%d", i)}, Source: event.SourceHTTP,
			Body: []byte(`{"amount": 2500, "currency": "BRL", "order_id": "o-1", "payment_method": "pm_card_visa"}`)})
		if res.Outcome != op.Pending {
			t.Fatalf("charge %d with its answer dropped: %s", i, res.Outcome)
		}
	}
	clock.Advance(10 * time.Minute) // every lease ended long ago

	var wg sync.WaitGroup
	var reports [2]sweep.Report
	for i, sw := range []*sweep.Sweeper{eastSweeper, westSweeper} {
		wg.Go(func() {
			r, err := sw.Run(ctx)
			if err != nil {
				t.Error(err)
			}
			reports[i] = r
		})
	}
	wg.Wait()
	commands := append(eastQueue.Drain(), westQueue.Drain()...)
	if reports[0].Flagged+reports[1].Flagged != records || len(commands) != records {
		t.Fatalf("two sweepers flagged %d + %d and sent %d commands for %d stale records; want one each", reports[0].Flagged, reports[1].Flagged, len(commands), records)
	}

	var mu sync.Mutex
	did := map[op.Reconciled]int{}
	for _, svc := range []*charge.Service{east, west} { // both regions get every command
		for _, body := range commands {
			wg.Go(func() {
				cmd, err := command.Decode(body)
				if err != nil {
					t.Error(err)
					return
				}
				r, err := svc.Reconcile(ctx, cmd.PK)
				if err != nil && !errors.Is(err, idem.ErrLeaseLost) {
					t.Error(err)
				}
				mu.Lock()
				did[r]++
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	if did[op.ReconciledCompleted] != records || did[op.NothingToDo] != records || len(sb.ByKey()) != records {
		t.Fatalf("reconciles: %v, %d authorizations; want %d completed, %d with nothing to do, one authorization each", did, len(sb.ByKey()), records, records)
	}
	for _, svc := range []*charge.Service{east, west} {
		for i := range records {
			if res := svc.Charge(ctx, charge.Input{Account: "acct_sweep", Keys: []string{fmt.Sprintf("two-sweepers-%d", i)}, Source: event.SourceHTTP,
				Body: []byte(`{"amount": 2500, "currency": "BRL", "order_id": "o-1", "payment_method": "pm_card_visa"}`)}); res.Outcome != op.Replayed {
				t.Fatalf("the retry of %d after the reconciles: %s", i, res.Outcome)
			}
		}
	}
	t.Logf("two regions: %d stale records, %d + %d flagged, %d commands, %d reconciles of which %d found nothing to do",
		records, reports[0].Flagged, reports[1].Flagged, len(commands), 2*len(commands), did[op.NothingToDo])
}

// answerLost authorizes, then loses the answer: the outcome is unknown.
type answerLost struct{ charge.Acquirer }

func (a answerLost) Authorize(ctx context.Context, key string, req acquirer.Request) (acquirer.Authorization, error) {
	if _, err := a.Acquirer.Authorize(ctx, key, req); err != nil {
		return acquirer.Authorization{}, err
	}
	return acquirer.Authorization{}, acquirer.ErrOutcomeUnknown
}

// quiet takes the services' anomaly lines these tests cause on purpose.
var quiet = slog.New(slog.DiscardHandler)

// TestEventsPublishedOnceAcrossRegions: two regions on one table, each
// stack's outcome queues subscribed to both regions' topics. In the normal
// case each charge's event is published once, by the region that wrote
// its row, and reaches both regions' queues once. Then one region's
// publisher stops and the region writes rows it cannot publish, and then
// the region stops whole: the other region's sweeper takes the rows over
// only once that region's heartbeat is stale, and each event reaches the
// region that stayed up, once.
func TestEventsPublishedOnceAcrossRegions(t *testing.T) {
	t.Parallel()
	// Long enough that west's sweep below falls between one and two of it
	// after its rows on a loaded machine: then its rows wait for it, where
	// after two its own sweeper would publish them itself.
	const staleAfter = 10 * time.Second
	ctx := context.Background()
	schema := eventtest.Schema(t)
	table := fmt.Sprintf("regions-%d-%d", time.Now().UnixNano(), tableNo.Add(1))
	env := []string{deploy.EnvStaleRegion + "=" + staleAfter.String()}
	east := newStackWith(t, localapi.StackConfig{TableName: table, TableMode: deploy.MultiRegionStrong, Region: "east", Env: env})
	west := newStackWith(t, localapi.StackConfig{TableName: table, TableMode: deploy.MultiRegionStrong, Region: "west", Env: env, AcquirerURL: east.SandboxURL})
	for _, pair := range [][2]*localapi.Stack{{east, west}, {west, east}} {
		if err := pair[0].SubscribeTo(ctx, pair[1]); err != nil {
			t.Fatal(err)
		}
	}
	books := dynamo.Open(east.DynamoDB, table).Books()
	unpublished := func() int {
		n := 0
		for _, err := range books.Unpublished(ctx, time.Now().Add(time.Hour)) {
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
		return n
	}

	// The normal case: three charges in each region, and a refund of one
	// of them in each.
	var charged []string
	for i, s := range []*localapi.Stack{east, east, east, west, west, west} {
		charged = append(charged, chargeOf(t, s, "acct_r", fmt.Sprintf("once-across-regions-%d", i), "pm_card_visa", 25000))
	}
	for i, s := range []*localapi.Stack{east, west} {
		expect(t, postRefund(t, s, "acct_r", fmt.Sprintf("once-across-regions-refund-%d", i), charged[3*i], `{"amount": 100}`), 201, "")
	}
	for _, s := range []*localapi.Stack{east, west} {
		if got := deliveries(t, s, schema, 8); len(got) != 8 || !allOnce(got) {
			t.Fatalf("%s's queue: %v; want each of the 8 events (6 charges', 2 refunds') once", s.RegionName, got)
		}
		if _, err := s.Sweep(ctx); err != nil { // each region beats its heartbeat
			t.Fatal(err)
		}
	}
	if n := unpublished(); n != 0 {
		t.Fatalf("%d rows are unpublished after every event was published", n)
	}

	// West's publisher stops, and west writes three rows: two charges'
	// and a refund's.
	west.Publisher.Close()
	written := time.Now()
	for i := range 2 {
		expect(t, postCharge(t, west, "acct_r", fmt.Sprintf("once-across-regions-west-%d", i), visa), 201, "")
	}
	expect(t, postRefund(t, west, "acct_r", "once-across-regions-west-refund", charged[4], `{"amount": 100}`), 201, "")
	if _, err := west.Sweep(ctx); err != nil { // west still beats
		t.Fatal(err)
	}
	time.Sleep(time.Until(written.Add(staleAfter + time.Second))) // the rows have waited long enough
	if _, err := west.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if late := time.Since(written); late > 2*staleAfter {
		t.Fatalf("west swept %s after its rows, past twice the stale age: the check below proves nothing", late)
	}
	if _, err := east.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if n := unpublished(); n != 3 {
		t.Fatalf("%d rows unpublished while west still beats; want its 3, waiting for it", n)
	}
	if got := deliveries(t, east, schema, 0); len(got) != 0 {
		t.Fatalf("east took over while west beats: %v", got)
	}

	// West stops whole; once its heartbeat is stale, east takes over.
	west.Close()
	time.Sleep(staleAfter + time.Second)
	if _, err := east.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if got := deliveries(t, east, schema, 3); len(got) != 3 || !allOnce(got) {
		t.Fatalf("east's queue after the take-over: %v; want west's 3 events once each", got)
	}
	if n := unpublished(); n != 0 {
		t.Fatalf("%d rows unpublished after the take-over", n)
	}
	if _, err := east.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if got := deliveries(t, east, schema, 0); len(got) != 0 {
		t.Fatalf("a second sweep published again: %v", got)
	}
}

// deliveries reads the http subscriber's outcome queue of s until it holds
// want distinct events, then 2 s more, and counts the deliveries of each
// event, by its id.
func deliveries(t *testing.T, s *localapi.Stack, schema *jsonschema.Schema, want int) map[string]int {
	t.Helper()
	got := map[string]int{}
	for _, e := range receiveEvents(t, s, schema, event.ProducerHTTP, want, 20*time.Second) {
		got[e.ID]++
	}
	for _, e := range receiveEvents(t, s, schema, event.ProducerHTTP, 1, 2*time.Second) {
		got[e.ID]++
	}
	return got
}

// allOnce reports whether every count is 1.
func allOnce(counts map[string]int) bool {
	for _, n := range counts {
		if n != 1 {
			return false
		}
	}
	return true
}

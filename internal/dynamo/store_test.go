package dynamo_test

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/dynamo/dynamotest"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/storetest"
	"github.com/idempotent-payments/idempay/internal/tabledef"
)

// TestConformance: the table on DynamoDB Local passes every suite the
// memory stores pass (storetest), each test on a table of its own,
// without TTL as the multi-region mode has it: the expiry index the purge
// lists is there (and TTL deletes nothing locally).
func TestConformance(t *testing.T) {
	client := dynamotest.Client(t)
	storetest.RunConformance(t, func(t *testing.T) storetest.Stores {
		tbl := dynamo.Open(client, dynamotest.NewTableFor(t, client, false))
		return storetest.Stores{Store: tbl.Store(), Ledger: tbl.Ledger(), Books: tbl.Books(), Balances: tbl.Balances(), Captures: tbl.Captures(), Authorizations: tbl.Authorizations(), Refunds: tbl.Refunds(),
			CaptureRows: tbl.CaptureRows(), VoidRows: tbl.VoidRows()}
	})
}

func TestTableOnDynamoDBLocal(t *testing.T) {
	t.Parallel()
	client := dynamotest.Client(t)
	name := dynamotest.NewTable(t, client)
	ctx := context.Background()
	out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	var indexes []string
	for _, ix := range out.Table.GlobalSecondaryIndexes {
		indexes = append(indexes, aws.ToString(ix.IndexName))
	}
	if slices.Sort(indexes); !slices.Equal(indexes, []string{tabledef.AuthorizationIndex, tabledef.DayIndex, tabledef.InflightIndex}) {
		t.Fatalf("indexes = %v, want the authorizations, the day and the in-flight indexes", indexes)
	}
	ttl, err := client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	if got := aws.ToString(ttl.TimeToLiveDescription.AttributeName); got != tabledef.TTLAttribute {
		t.Fatalf("TTL attribute = %q, want %q", got, tabledef.TTLAttribute)
	}
	if err := dynamo.CreateTable(ctx, client, name, true); err != nil {
		t.Fatalf("CreateTable on an existing table: %v", err)
	}
}

// TestRoundTrips pins the number of DynamoDB requests per path (DESIGN §4).
func TestRoundTrips(t *testing.T) {
	t.Parallel()
	var trips dynamotest.RoundTrips
	client := dynamotest.Client(t, trips.Option)
	store := dynamo.Open(client, dynamotest.NewTable(t, client)).Store()
	ctx := context.Background()
	req := idem.Canonical{{Name: "amount", Value: "100"}}
	other := idem.Canonical{{Name: "amount", Value: "999"}}
	done := idem.Scope{Operation: "charge", Account: "acct_1", Key: "round-trips-done"}
	busy := idem.Scope{Operation: "charge", Account: "acct_1", Key: "round-trips-busy"}

	for _, cached := range []bool{false, true} {
		cacheSize := 0
		if cached {
			cacheSize = 100
			done.Key += "-cached"
		}
		guard := idem.NewGuard(store, idem.Config{CacheSize: cacheSize})
		trips.Take()

		step := func(name string, want map[string]int, run func() error) {
			t.Helper()
			if err := run(); err != nil {
				t.Fatalf("%s (cache %v): %v", name, cached, err)
			}
			if got := trips.Take(); !maps.Equal(got, want) {
				t.Fatalf("%s (cache %v): round trips %v, want %v", name, cached, got, want)
			}
		}
		step("first execution", map[string]int{"PutItem": 1, "UpdateItem": 1}, func() error {
			c, err := guard.Begin(ctx, done, req)
			if err != nil {
				return err
			}
			return c.Lease.Complete(ctx, idem.Response{StatusCode: 201, Body: []byte("{}")})
		})
		replayTrips := map[string]int{"PutItem": 1}
		if cached {
			replayTrips = map[string]int{}
		}
		step("replay", replayTrips, func() error {
			c, err := guard.Begin(ctx, done, req)
			if err == nil && c.Replay == nil {
				return errors.New("no replay")
			}
			return err
		})
		step("key reused", replayTrips, func() error {
			if _, err := guard.Begin(ctx, done, other); !errors.Is(err, idem.ErrKeyReused) {
				return errors.New("want ErrKeyReused")
			}
			return nil
		})
		if !cached {
			step("claim", map[string]int{"PutItem": 1}, func() error { _, err := guard.Begin(ctx, busy, req); return err })
		}
		step("in flight", map[string]int{"PutItem": 1}, func() error {
			if _, err := guard.Begin(ctx, busy, req); !errors.Is(err, idem.ErrInFlight) {
				return errors.New("want ErrInFlight")
			}
			return nil
		})
	}
}

// BenchmarkRoundTrips reports the DynamoDB requests each path makes, counted
// on the wire, next to its time against DynamoDB Local.
func BenchmarkRoundTrips(b *testing.B) {
	var trips dynamotest.RoundTrips
	client := dynamotest.Client(b, trips.Option)
	store := dynamo.Open(client, dynamotest.NewTable(b, client)).Store()
	ctx := context.Background()
	req := idem.Canonical{{Name: "amount", Value: "100"}}
	for _, path := range []string{"first-execution", "replay", "replay-warm-cache", "in-flight", "key-reused"} {
		b.Run(path, func(b *testing.B) {
			cache := 0
			if path == "replay-warm-cache" {
				cache = 10
			}
			guard := idem.NewGuard(store, idem.Config{CacheSize: cache})
			fixed := idem.Scope{Operation: "charge", Account: "acct_b", Key: "bench-" + path}
			switch path {
			case "replay", "replay-warm-cache", "key-reused":
				c, _ := guard.Begin(ctx, fixed, req)
				_ = c.Lease.Complete(ctx, idem.Response{StatusCode: 201})
				guard.Begin(ctx, fixed, req) // warms the cache when there is one
			case "in-flight":
				guard.Begin(ctx, fixed, req)
			}
			trips.Take()
			i := 0
			for b.Loop() {
				i++
				switch path {
				case "first-execution":
					c, err := guard.Begin(ctx, idem.Scope{Operation: "charge", Account: "acct_b", Key: fmt.Sprintf("bench-first-%d-%d", b.N, i)}, req)
					if err != nil {
						b.Fatal(err)
					}
					_ = c.Lease.Complete(ctx, idem.Response{StatusCode: 201})
				case "key-reused":
					guard.Begin(ctx, fixed, idem.Canonical{{Name: "amount", Value: "1"}})
				default:
					guard.Begin(ctx, fixed, req)
				}
			}
			total := 0
			for _, n := range trips.Take() {
				total += n
			}
			b.ReportMetric(float64(total)/float64(b.N), "trips/op")
		})
	}
}

// TestRecordsOfTheOlderLayoutStillServe: a record written before hashes
// and keys were kept as bytes (fingerprint and downstream key as hex
// strings, headers stored) replays and is refused for another request
// exactly as before; new records keep them as bytes.
func TestRecordsOfTheOlderLayoutStillServe(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	client := dynamotest.Client(t)
	table := dynamotest.NewTable(t, client)
	guard := idem.NewGuard(dynamo.Open(client, table).Store(), idem.Config{})
	req := idem.Canonical{{Name: "amount", Value: "100"}}
	fresh := idem.Scope{Operation: "charge", Account: "acct_1", Key: "new-layout-key"}
	c, err := guard.Begin(ctx, fresh, req)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Lease.Complete(ctx, idem.Response{StatusCode: 201, Body: []byte(`{"id":"ch_1"}`)}); err != nil {
		t.Fatal(err)
	}
	get := func(pk string) map[string]types.AttributeValue {
		out, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}}})
		if err != nil {
			t.Fatal(err)
		}
		return out.Item
	}
	item := get(fresh.PK())
	for _, name := range []string{"fingerprint", "downstream_key"} {
		if _, ok := item[name].(*types.AttributeValueMemberB); !ok {
			t.Fatalf("%s stored as %T, want bytes", name, item[name])
		}
	}
	if _, ok := item["response_headers"]; ok {
		t.Fatal("an answer without headers stored response_headers")
	}

	old := idem.Scope{Operation: "charge", Account: "acct_1", Key: "old-layout-key"}
	legacy := maps.Clone(item)
	legacy["pk"] = &types.AttributeValueMemberS{Value: old.PK()}
	legacy["idempotency_key"] = &types.AttributeValueMemberS{Value: old.Key}
	for _, name := range []string{"fingerprint", "downstream_key"} {
		legacy[name] = &types.AttributeValueMemberS{Value: hex.EncodeToString(item[name].(*types.AttributeValueMemberB).Value)}
	}
	legacy["response_headers"] = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"Content-Type": &types.AttributeValueMemberS{Value: "application/json"}}}
	if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: legacy}); err != nil {
		t.Fatal(err)
	}
	c, err = guard.Begin(ctx, old, req)
	if err != nil || c.Replay == nil || string(c.Replay.Body) != `{"id":"ch_1"}` || c.Replay.Headers["Content-Type"] != "application/json" {
		t.Fatalf("replay of an older record: %+v, %v", c, err)
	}
	if _, err := guard.Begin(ctx, old, idem.Canonical{{Name: "amount", Value: "101"}}); !errors.Is(err, idem.ErrKeyReused) {
		t.Fatalf("another request on an older record: %v, want ErrKeyReused", err)
	}
}

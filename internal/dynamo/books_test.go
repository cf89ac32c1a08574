package dynamo_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/dynamo/dynamotest"
	"github.com/idempotent-payments/idempay/internal/op"
)

// TestUnpublishedPages: the listing reads a shard page by page, oldest
// first, and goes on to the next shard.
func TestUnpublishedPages(t *testing.T) {
	defer dynamo.SetPageSize(2)()
	ctx := context.Background()
	client := dynamotest.Client(t)
	table := dynamotest.NewTableFor(t, client, false)
	tbl := dynamo.Open(client, table)
	ledger, books := tbl.Ledger(), tbl.Books()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var want []string
	for i := 0; len(want) < 5; i++ { // five rows in one shard, the sixth in another
		id := fmt.Sprintf("ch_%040x", i)
		if dynamo.ShardOf(id) != "07" {
			continue
		}
		want = append(want, id)
	}
	other := "ch_" + fmt.Sprintf("%040x", 1<<20)
	for dynamo.ShardOf(other) == "07" {
		other += "0"
	}
	for i, id := range append(want, other) {
		c := charge.Charge{
			Origin: op.Origin{ID: id, Account: "acct",
				CreatedAt: start.Add(time.Duration(len(want)-i) * time.Second), Region: "region-a"},
			Status: acquirer.StatusCaptured, Amount: 1, Currency: "BRL",
		}
		if i == len(want) {
			c.CreatedAt = start
		}
		if _, err := ledger.Write(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	var inShard []string
	seen := 0
	for u, err := range books.Unpublished(ctx, start.Add(time.Hour)) {
		if err != nil {
			t.Fatal(err)
		}
		seen++
		if dynamo.ShardOf(u.ID) == "07" {
			inShard = append(inShard, u.ID)
		}
	}
	if seen != 6 || len(inShard) != 5 {
		t.Fatalf("listed %d rows, %d of the shard's 5", seen, len(inShard))
	}
	for i, id := range inShard { // written newest first: listed oldest first
		if id != want[len(want)-1-i] {
			t.Fatalf("the shard listed %v, want the reverse of %v", inShard, want)
		}
	}
}

package dynamo_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idempotent-payments/idempay/internal/charge"

	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/dynamo/dynamotest"
	"github.com/idempotent-payments/idempay/internal/refund"
	"github.com/idempotent-payments/idempay/internal/refund/refundtest"
	"github.com/idempotent-payments/idempay/internal/tabledef"
)

// TestBalancesConformance: the refund balance on DynamoDB Local passes the
// suite the memory balances pass.
func TestBalancesConformance(t *testing.T) {
	client := dynamotest.Client(t)
	table := dynamotest.NewTable(t, client)
	refundtest.RunConformance(t, func(*testing.T) refund.Balances { return dynamo.Open(client, table).Balances() })
}

// TestRefundServiceConformance: every path of a refund's state machine
// on DynamoDB Local, as on the memory stores.
func TestRefundServiceConformance(t *testing.T) {
	client := dynamotest.Client(t)
	refundtest.RunServiceConformance(t, func(t *testing.T) refundtest.Stores {
		table := dynamo.Open(client, dynamotest.NewTable(t, client))
		return refundtest.Stores{Store: table.Store(), Charges: table.Ledger(), Balances: table.Balances(), Refunds: table.Refunds()}
	})
}

// TestRefundLedgerConformance: the refund rows on DynamoDB Local.
func TestRefundLedgerConformance(t *testing.T) {
	client := dynamotest.Client(t)
	refundtest.RunLedgerConformance(t, dynamo.Open(client, dynamotest.NewTable(t, client)).Refunds())
}

// TestBalanceSizeIsBounded: MaxBalanceBytes is the size of the largest
// balance item (every number of 19 digits, MaxEntries entries succeeded);
// and a balance driven there on DynamoDB Local, 49 refunds made and then
// 300 failures on its last place (reservations released, releases of
// reservations that never landed, take-overs that find no entry), never
// passes it, never grows after the first failure, and an update of it is
// billed at most the write units of MaxBalanceBytes.
func TestBalanceSizeIsBounded(t *testing.T) {
	t.Parallel()
	big := "1234567890123456789"
	largest := map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: tabledef.BalancePrefix + charge.ID(strings.Repeat("f", 40))},
	}
	for _, name := range []string{"charge_amount", "remaining", "reserved", "refunded", "released_through"} {
		largest[name] = &types.AttributeValueMemberN{Value: big}
	}
	largest["entries"] = &types.AttributeValueMemberN{Value: strconv.Itoa(refund.MaxEntries)}
	for i := range refund.MaxEntries {
		key := fmt.Sprintf("%040x", i)
		largest["state_"+key] = &types.AttributeValueMemberS{Value: string(refund.EntrySucceeded)}
		largest["fence_"+key] = &types.AttributeValueMemberN{Value: big}
		largest["amount_"+key] = &types.AttributeValueMemberN{Value: big}
	}
	if got := dynamotest.ItemSize(largest); got != dynamo.MaxBalanceBytes {
		t.Fatalf("the largest balance item is %d bytes; MaxBalanceBytes says %d", got, dynamo.MaxBalanceBytes)
	}

	ctx := context.Background()
	client := dynamotest.Client(t)
	meter := &dynamotest.Meter{Client: client}
	table := dynamotest.NewTable(t, client)
	balances := dynamo.Open(meter, table).Balances()
	chargeID := charge.ID(strings.Repeat("e", 40))
	const amount = 123456789012345678 // 18 digits: 50 of them fit in an int64
	claimed := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	n := 0
	next := func() refund.Intent {
		n++
		return refund.Intent{Key: fmt.Sprintf("%040x", n), Claimed: claimed.Add(time.Duration(n) * time.Second)}
	}
	reserve := func(in refund.Intent) error {
		_, err := balances.Reserve(ctx, refund.Reservation{ChargeID: chargeID, ChargeAmount: refund.MaxEntries * amount, Intent: in, Fence: 1, Amount: amount})
		return err
	}
	for range refund.MaxEntries - 1 {
		in := next()
		if err := reserve(in); err != nil {
			t.Fatal(err)
		}
		if err := balances.Succeed(ctx, chargeID, in.Key, 1); err != nil {
			t.Fatal(err)
		}
	}
	// size is the item's, and that of all but its watermark, whose
	// digits vary with the time it holds.
	size := func() (all, entries int) {
		t.Helper()
		out, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: tabledef.BalancePrefix + chargeID}}, ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		all = dynamotest.ItemSize(out.Item)
		delete(out.Item, "released_through")
		return all, dynamotest.ItemSize(out.Item)
	}
	first := 0
	for i := range 300 {
		in := next()
		switch i % 3 {
		case 0: // reserved, then nothing sent
			if err := reserve(in); err != nil {
				t.Fatal(err)
			}
			if s, _ := size(); s > dynamo.MaxBalanceBytes {
				t.Fatalf("with %d entries the item is %d bytes, over %d", refund.MaxEntries, s, dynamo.MaxBalanceBytes)
			}
			meter.Take()
			if err := balances.Release(ctx, chargeID, in, 1); err != nil {
				t.Fatal(err)
			}
			if u := meter.Take(); u.TableWrite > float64(dynamotest.WriteUnits(dynamo.MaxBalanceBytes)) {
				t.Fatalf("a release of the fullest balance billed %.0f units, over %d", u.TableWrite, dynamotest.WriteUnits(dynamo.MaxBalanceBytes))
			}
		case 1: // a reservation that never landed
			if err := balances.Release(ctx, chargeID, in, 1); err != nil {
				t.Fatal(err)
			}
		case 2: // a take-over that finds no entry
			if _, err := balances.Refence(ctx, chargeID, in, 2); err != nil {
				t.Fatal(err)
			}
		}
		switch all, s := size(); {
		case all > dynamo.MaxBalanceBytes:
			t.Fatalf("failure %d: the item is %d bytes, over %d", i, all, dynamo.MaxBalanceBytes)
		case i == 0:
			first = s
		case s != first:
			t.Fatalf("failure %d: the item is %d bytes besides its watermark, %d after the first", i, s, first)
		}
	}
	bal, err := balances.Get(ctx, chargeID)
	if err != nil || bal.Entries != refund.MaxEntries-1 || bal.Reserved != 0 || bal.Refunded != (refund.MaxEntries-1)*amount {
		t.Fatalf("after 300 failures: %+v, %v", bal, err)
	}
	t.Logf("49 refunds of 18 digits: %d bytes besides the watermark, %d with a 50th in flight (MaxBalanceBytes %d)", first, first+dynamotest.ItemSize(map[string]types.AttributeValue{
		"state_" + strings.Repeat("0", 40): &types.AttributeValueMemberS{Value: "reserved"}, "fence_" + strings.Repeat("0", 40): &types.AttributeValueMemberN{Value: "1"},
		"amount_" + strings.Repeat("0", 40): &types.AttributeValueMemberN{Value: strconv.Itoa(amount)}}), dynamo.MaxBalanceBytes)
}

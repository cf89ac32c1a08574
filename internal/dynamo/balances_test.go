package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idempotent-payments/idempay/internal/capture"
	"github.com/idempotent-payments/idempay/internal/charge"

	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/dynamo/dynamotest"
	"github.com/idempotent-payments/idempay/internal/refund"
	"github.com/idempotent-payments/idempay/internal/tabledef"
)

// TestBalanceSizeIsBounded: MaxBalanceBytes is the size of the largest
// balance item (every number of 19 digits, MaxEntries entries in their
// longest state, an earlier version's succeeded); and a balance driven
// there on DynamoDB Local, 49 refunds in flight and then 60 failures on
// its last place (reservations released, releases of reservations that
// never landed, take-overs that find no entry), never passes it, never
// grows after the first failure, and an update of it is billed at most
// the write units of MaxBalanceBytes.
func TestBalanceSizeIsBounded(t *testing.T) {
	t.Parallel()
	big := "1234567890123456789"
	largest := map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: tabledef.BalancePrefix + charge.ID(strings.Repeat("f", 40))},
	}
	for _, name := range []string{"charge_amount", "remaining", "reserved", "refunded", "released_through", "folded_at"} {
		largest[name] = &types.AttributeValueMemberN{Value: big}
	}
	// The capture side, each attribute in its longest form.
	for _, name := range []string{"cap_authorized", "cap_capturable", "cap_reserved", "cap_captured", "cap_released"} {
		largest[name] = &types.AttributeValueMemberN{Value: big}
	}
	largest["cap_closing"] = &types.AttributeValueMemberS{Value: strings.Repeat("f", 40)}
	largest["cap_closing_kind"] = &types.AttributeValueMemberS{Value: string(capture.Final)}
	largest["cap_closed"] = &types.AttributeValueMemberS{Value: string(capture.ClosedCaptured)}
	largest["entries"] = &types.AttributeValueMemberN{Value: strconv.Itoa(refund.MaxEntries)}
	// Every entry in its largest form: a capture's or a void's reserved
	// and marked held for an operator (a refund's, never marked, is at
	// most an earlier version's succeeded, 45 bytes shorter).
	for i := range refund.MaxEntries {
		key := fmt.Sprintf("%040x", i)
		largest["state_"+key] = &types.AttributeValueMemberS{Value: string(refund.EntryReserved)}
		largest["fence_"+key] = &types.AttributeValueMemberN{Value: big}
		largest["amount_"+key] = &types.AttributeValueMemberN{Value: big}
		largest["held_"+key] = &types.AttributeValueMemberBOOL{Value: true}
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
		at := claimed.Add(time.Duration(n) * time.Second)
		return refund.Intent{Key: fmt.Sprintf("%040x", n), Claimed: at, FoldAt: at.Add(time.Second / 2)}
	}
	reserve := func(in refund.Intent) error {
		_, err := balances.Reserve(ctx, refund.Reservation{ChargeID: chargeID, ChargeAmount: refund.MaxEntries * amount, Intent: in, Fence: 1,
			Stamp: in.Claimed.Add(time.Millisecond), Amount: amount})
		return err
	}
	for range refund.MaxEntries - 1 {
		if err := reserve(next()); err != nil {
			t.Fatal(err)
		}
	}
	// size is the item's, and that of all but its watermarks, whose
	// digits vary with the time they hold.
	size := func() (all, entries int) {
		t.Helper()
		out, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: tabledef.BalancePrefix + chargeID}}, ConsistentRead: aws.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		all = dynamotest.ItemSize(out.Item)
		delete(out.Item, "released_through")
		delete(out.Item, "folded_at")
		return all, dynamotest.ItemSize(out.Item)
	}
	first := 0
	for i := range 60 {
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
	if err != nil || bal.Entries != refund.MaxEntries-1 || bal.Reserved != (refund.MaxEntries-1)*amount || bal.Refunded != 0 {
		t.Fatalf("after 60 failures: %+v, %v", bal, err)
	}
	t.Logf("49 refunds of 18 digits in flight: %d bytes besides the watermarks, %d with a 50th (MaxBalanceBytes %d)", first, first+dynamotest.ItemSize(map[string]types.AttributeValue{
		"state_" + strings.Repeat("0", 40): &types.AttributeValueMemberS{Value: "reserved"}, "fence_" + strings.Repeat("0", 40): &types.AttributeValueMemberN{Value: "1"},
		"amount_" + strings.Repeat("0", 40): &types.AttributeValueMemberN{Value: strconv.Itoa(amount)}}), dynamo.MaxBalanceBytes)
}

// between is a client that runs a function before the nth UpdateItem
// whose update expression is update: what another instance's writes do
// between two of a step's.
type between struct {
	*dynamodb.Client
	update string
	n      int
	do     func()
}

func (c *between) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if aws.ToString(in.UpdateExpression) == c.update {
		if c.n--; c.n == 0 {
			c.do()
		}
	}
	return c.Client.UpdateItem(ctx, in, opts...)
}

// balanceWorld is a table's balances through a plain client, and one
// charge of 1,000 on it.
type balanceWorld struct {
	client   *dynamodb.Client
	table    string
	balances *dynamo.Balances
	charge   string
}

func newBalanceWorld(t *testing.T) balanceWorld {
	t.Helper()
	client := dynamotest.Client(t)
	table := dynamotest.NewTable(t, client)
	return balanceWorld{client: client, table: table, balances: dynamo.Open(client, table).Balances(), charge: charge.ID(strings.Repeat("d", 40))}
}

// intent is the nth intent, as a take-over's steps know it: claimed n
// seconds into the minute, its folds made half a second later.
func (w balanceWorld) intent(n int) refund.Intent {
	at := time.Date(2026, 3, 1, 12, 0, n, 0, time.UTC)
	return refund.Intent{Key: fmt.Sprintf("%040x", n), Claimed: at, FoldAt: at.Add(time.Second / 2)}
}

// reservation is in's, issued a millisecond after its claim.
func (w balanceWorld) reservation(in refund.Intent, fence int, amount int64) refund.Reservation {
	return refund.Reservation{ChargeID: w.charge, ChargeAmount: 1000, Intent: in, Fence: fence, Stamp: in.Claimed.Add(time.Millisecond), Amount: amount}
}

func (w balanceWorld) reserve(t *testing.T, in refund.Intent, fence int, amount int64) {
	t.Helper()
	if _, err := w.balances.Reserve(context.Background(), w.reservation(in, fence, amount)); err != nil {
		t.Fatal(err)
	}
}

// TestRefenceMeetsALateReservation: a take-over's re-fence finds no entry,
// and before its fold lands, the first attempt's reservation does, and
// another intent's release passes the first's claim time: the re-fence
// still takes the entry, never answering released while it is reserved.
func TestRefenceMeetsALateReservation(t *testing.T) {
	t.Parallel()
	w := newBalanceWorld(t)
	ctx := context.Background()
	late, other := w.intent(10), w.intent(20)
	api := &between{Client: w.client, update: "SET folded_at = :foldAt, released_through = :claimed", n: 1, do: func() {
		w.reserve(t, late, 1, 30)
		w.reserve(t, other, 1, 100)
		if err := w.balances.Release(ctx, w.charge, other, 1); err != nil {
			t.Error(err)
		}
	}}
	e, err := dynamo.Open(api, w.table).Balances().Refence(ctx, w.charge, late, 2)
	if err != nil || e != (refund.Entry{State: refund.EntryReserved, Fence: 2, Amount: 30}) {
		t.Fatalf("re-fence: %+v, %v; want the reservation, re-fenced", e, err)
	}
	if err := w.balances.Release(ctx, w.charge, late, 1); !errors.Is(err, refund.ErrFenced) {
		t.Fatalf("the first attempt's release after the re-fence: %v", err)
	}
}

// TestReleaseMeetsEveryMove: a first attempt's release whose reservation
// had not landed yet meets it landing before its fold, then another
// intent's release passing its claim time before its give-back: the
// release still gives the amount back and folds the intent.
func TestReleaseMeetsEveryMove(t *testing.T) {
	t.Parallel()
	w := newBalanceWorld(t)
	ctx := context.Background()
	mine, other := w.intent(10), w.intent(20)
	var api *between
	api = &between{Client: w.client, update: "SET folded_at = :foldAt, released_through = :claimed", n: 1, do: func() {
		w.reserve(t, mine, 1, 30)
		// Before the next give-back: another release passes the claim.
		api.update, api.n = "SET folded_at = :foldAt, released_through = :claimed, reserved = reserved - #am, remaining = remaining + #am, entries = entries - :one REMOVE #st, #fe, #am, #hd", 1
		api.do = func() {
			w.reserve(t, other, 1, 100)
			if err := w.balances.Release(ctx, w.charge, other, 1); err != nil {
				t.Error(err)
			}
		}
	}}
	if err := dynamo.Open(api, w.table).Balances().Release(ctx, w.charge, mine, 1); err != nil {
		t.Fatalf("release: %v", err)
	}
	bal, err := w.balances.Get(ctx, w.charge)
	if err != nil || bal.Remaining != 1000 || bal.Reserved != 0 || bal.Entries != 0 || len(bal.ByKey) != 0 || !bal.ReleasedThrough.Equal(other.Claimed) {
		t.Fatalf("after the release: %+v, %v", bal, err)
	}
	if _, err := w.balances.Reserve(ctx, w.reservation(mine, 1, 30)); !errors.Is(err, refund.ErrReleased) {
		t.Fatalf("the released intent reserves again: %v", err)
	}
}

// TestEarlierVersionsEntriesAreFolded: a balance an earlier version wrote
// keeps released entries (tombstones, counted in entries when they had
// reserved), take-overs' stubs and succeeded entries. A re-fence or a
// release of their intents folds them, and a succeeded one's success
// (the take-over that finishes from its row): removed, no longer
// counted, their amounts where they were, and their intents never
// reserve; a charge that tombstones had filled takes refunds again.
func TestEarlierVersionsEntriesAreFolded(t *testing.T) {
	t.Parallel()
	w := newBalanceWorld(t)
	ctx := context.Background()
	item := map[string]types.AttributeValue{
		"pk":            &types.AttributeValueMemberS{Value: tabledef.BalancePrefix + w.charge},
		"charge_amount": &types.AttributeValueMemberN{Value: "1000"}, "remaining": &types.AttributeValueMemberN{Value: "900"},
		"reserved": &types.AttributeValueMemberN{Value: "0"}, "refunded": &types.AttributeValueMemberN{Value: "100"},
		"entries": &types.AttributeValueMemberN{Value: strconv.Itoa(refund.MaxEntries)},
	}
	// Intent 1 succeeded; 2..MaxEntries reserved and were released (or
	// declined); intent 60 is a stub; intent 61 a tombstone of a stub.
	entry := func(n int, state string, fence int, amount int64) {
		key := w.intent(n).Key
		if state != "" {
			item["state_"+key] = &types.AttributeValueMemberS{Value: state}
		}
		item["fence_"+key] = &types.AttributeValueMemberN{Value: strconv.Itoa(fence)}
		if amount > 0 {
			item["amount_"+key] = &types.AttributeValueMemberN{Value: strconv.FormatInt(amount, 10)}
		}
	}
	entry(1, "succeeded", 1, 100)
	for n := 2; n <= refund.MaxEntries; n++ {
		entry(n, "released", 1, 10)
	}
	entry(60, "", 2, 0)
	entry(61, "released", 2, 0)
	if _, err := w.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(w.table), Item: item}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.balances.Reserve(ctx, w.reservation(w.intent(70), 1, 10)); !errors.Is(err, refund.ErrLimitReached) {
		t.Fatalf("the earlier version's full balance: %v, want the limit", err)
	}
	if e, err := w.balances.Refence(ctx, w.charge, w.intent(2), 2); err != nil || e.State != refund.EntryReleased {
		t.Fatalf("re-fence of a tombstone: %+v, %v", e, err)
	}
	if e, err := w.balances.Refence(ctx, w.charge, w.intent(60), 3); err != nil || e.State != refund.EntryReleased {
		t.Fatalf("re-fence of a stub: %+v, %v", e, err)
	}
	for n := 3; n <= 10; n++ {
		if err := w.balances.Release(ctx, w.charge, w.intent(n), 2); err != nil {
			t.Fatalf("release of tombstone %d: %v", n, err)
		}
	}
	if err := w.balances.Release(ctx, w.charge, w.intent(61), 2); err != nil {
		t.Fatalf("release of a stub's tombstone: %v", err)
	}
	bal, err := w.balances.Get(ctx, w.charge)
	if err != nil || bal.Entries != refund.MaxEntries-9 || len(bal.ByKey) != bal.Entries || !bal.ReleasedThrough.Equal(w.intent(61).Claimed) {
		t.Fatalf("after folding 10 of them: %d counted, %d held, released through %v, %v", bal.Entries, len(bal.ByKey), bal.ReleasedThrough, err)
	}
	for _, n := range []int{2, 60, 61} {
		if _, err := w.balances.Reserve(ctx, w.reservation(w.intent(n), 1, 10)); !errors.Is(err, refund.ErrReleased) {
			t.Fatalf("intent %d reserves after its fold: %v", n, err)
		}
	}
	w.reserve(t, w.intent(70), 1, 10)
	if e, err := w.balances.Refence(ctx, w.charge, w.intent(1), 2); err != nil || e != (refund.Entry{State: refund.EntrySucceeded, Fence: 2, Amount: 100}) {
		t.Fatalf("re-fence of a succeeded entry: %+v, %v", e, err)
	}
	if err := w.balances.Release(ctx, w.charge, w.intent(1), 2); !errors.Is(err, refund.ErrFenced) {
		t.Fatalf("release of a succeeded entry: %v, want ErrFenced", err)
	}
	for range 2 {
		if err := w.balances.Succeed(ctx, w.charge, w.intent(1), 2); err != nil {
			t.Fatalf("the success of a succeeded entry: %v", err)
		}
	}
	bal, err = w.balances.Get(ctx, w.charge)
	if _, held := bal.ByKey[w.intent(1).Key]; err != nil || held || bal.Entries != refund.MaxEntries-9 || bal.Refunded != 100 || bal.Remaining != 890 || bal.Reserved != 10 {
		t.Fatalf("after folding the succeeded entry: %+v, %v", bal, err)
	}
}

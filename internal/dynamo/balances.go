package dynamo

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idempotent-payments/idempay/internal/refund"
	"github.com/idempotent-payments/idempay/internal/tabledef"
)

// Balances are the refund.Balances on the table (Table.Balances): one item
// per charge, BALANCE#<charge id>, with the balance's figures and one
// entry per refund intent, three attributes named by its downstream key
// (state_K, fence_K, amount_K). Each step is one UpdateItem whose
// condition decides it (DESIGN §7); a refused one returns the item as it
// was (ReturnValuesOnConditionCheckFailure ALL_OLD), which tells an
// attempt's own earlier write from another's. The item has no expires_at
// and no expiry bucket: it never expires, in either table mode.
type Balances struct {
	api   API
	table string
}

// The balance item's attributes.
const (
	balanceChargeAmount = "charge_amount"
	balanceRemaining    = "remaining"
	balanceReserved     = "reserved"
	balanceRefunded     = "refunded"
	balanceEntries      = "entries"
)

// entryNames are the expression names of key's entry that expr uses, of
// #st, #fe and #am (DynamoDB refuses a name no expression uses).
func entryNames(key, expr string) map[string]string {
	names := map[string]string{}
	for name, attribute := range map[string]string{"#st": "state_", "#fe": "fence_", "#am": "amount_"} {
		if strings.Contains(expr, name) {
			names[name] = attribute + key
		}
	}
	return names
}

func balanceKey(chargeID string) map[string]types.AttributeValue {
	return pkKey(tabledef.BalancePrefix + chargeID)
}

// update runs one conditional UpdateItem on the charge's balance and
// returns the item as it was when the condition refused it (nil when the
// write was made), or the new item with returnNew.
func (b *Balances) update(ctx context.Context, chargeID, key, update, condition string, values map[string]types.AttributeValue, returnNew bool) (old, updated map[string]types.AttributeValue, err error) {
	in := &dynamodb.UpdateItemInput{
		TableName:                           aws.String(b.table),
		Key:                                 balanceKey(chargeID),
		UpdateExpression:                    aws.String(update),
		ConditionExpression:                 aws.String(condition),
		ExpressionAttributeNames:            entryNames(key, update+" "+condition),
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	if returnNew {
		in.ReturnValues = types.ReturnValueAllNew
	}
	out, err := b.api.UpdateItem(ctx, in)
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		if failed.Item == nil {
			failed.Item = map[string]types.AttributeValue{}
		}
		return failed.Item, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("balance of %s: %w", chargeID, writeError(err))
	}
	return nil, out.Attributes, nil
}

// Reserve implements refund.Balances: one UpdateItem conditioned on the
// entry having no state, its fence being absent or r.Fence, room left
// and fewer than refund.MaxEntries entries. Without an amount it reserves
// what remains, resolved by the same write.
func (b *Balances) Reserve(ctx context.Context, r refund.Reservation) (refund.Entry, error) {
	if r.Amount > r.ChargeAmount {
		bal, err := b.Get(ctx, r.ChargeID) // only to say what remains: the answer decides nothing
		if err != nil {
			return refund.Entry{}, err
		}
		refundable := bal.Remaining
		if bal.ChargeAmount == 0 {
			refundable = r.ChargeAmount
		}
		return refund.Entry{}, &refund.NoRoomError{Refundable: refundable}
	}
	values := map[string]types.AttributeValue{
		":charged": num(r.ChargeAmount), ":zero": num(0), ":one": num(1), ":max": num(refund.MaxEntries),
		":reserved": str(string(refund.EntryReserved)), ":fence": num(int64(r.Fence)),
	}
	condition := "attribute_not_exists(#st) AND (attribute_not_exists(#fe) OR #fe = :fence)" +
		" AND (attribute_not_exists(" + balanceEntries + ") OR " + balanceEntries + " < :max)"
	update := "SET " + balanceChargeAmount + " = if_not_exists(" + balanceChargeAmount + ", :charged), " +
		balanceRefunded + " = if_not_exists(" + balanceRefunded + ", :zero), " +
		balanceEntries + " = if_not_exists(" + balanceEntries + ", :zero) + :one, #st = :reserved, #fe = :fence, "
	if r.Amount > 0 {
		values[":amount"] = num(r.Amount)
		condition += " AND (attribute_not_exists(" + balanceRemaining + ") OR " + balanceRemaining + " >= :amount)"
		update += "#am = :amount, " +
			balanceRemaining + " = if_not_exists(" + balanceRemaining + ", :charged) - :amount, " +
			balanceReserved + " = if_not_exists(" + balanceReserved + ", :zero) + :amount"
	} else { // what remains: every right-hand side reads the item before this write
		condition += " AND (attribute_not_exists(" + balanceRemaining + ") OR " + balanceRemaining + " > :zero)"
		update += "#am = if_not_exists(" + balanceRemaining + ", :charged), " +
			balanceReserved + " = if_not_exists(" + balanceReserved + ", :zero) + if_not_exists(" + balanceRemaining + ", :charged), " +
			balanceRemaining + " = :zero"
	}
	old, updated, err := b.update(ctx, r.ChargeID, r.Key, update, condition, values, true)
	switch {
	case err != nil:
		return refund.Entry{}, err
	case old == nil:
		return entryOf(updated, r.Key)
	}
	e, err := entryOf(old, r.Key)
	if err != nil {
		return refund.Entry{}, err
	}
	_, hasFence := old["fence_"+r.Key]
	switch {
	case e.State == refund.EntryReserved && e.Fence == r.Fence:
		return e, nil // this attempt's own reservation, answered again
	case e.State != "" || hasFence && e.Fence != r.Fence:
		return e, refund.ErrFenced
	case intOf(old, balanceEntries) >= refund.MaxEntries:
		return e, refund.ErrLimitReached
	}
	return e, &refund.NoRoomError{Refundable: intOf(old, balanceRemaining)}
}

// Refence implements refund.Balances: fence_K = fence if absent or lower,
// returning the entry as it then is. A refusal that finds fence_K = fence
// is this attempt's own write, answered again (the SDK's retry after a
// lost answer): the entry, without error.
func (b *Balances) Refence(ctx context.Context, chargeID, key string, fence int) (refund.Entry, error) {
	old, updated, err := b.update(ctx, chargeID, key, "SET #fe = :fence", "attribute_not_exists(#fe) OR #fe < :fence",
		map[string]types.AttributeValue{":fence": num(int64(fence))}, true)
	switch {
	case err != nil:
		return refund.Entry{}, err
	case old != nil:
		e, err := entryOf(old, key)
		if err != nil {
			return refund.Entry{}, err
		}
		if e.Fence == fence {
			return e, nil
		}
		return e, refund.ErrFenced
	}
	return entryOf(updated, key)
}

// Succeed implements refund.Balances: reserved -> succeeded for this
// fence, its amount moved from reserved to refunded.
func (b *Balances) Succeed(ctx context.Context, chargeID, key string, fence int) error {
	old, _, err := b.update(ctx, chargeID, key,
		"SET #st = :succeeded, "+balanceReserved+" = "+balanceReserved+" - #am, "+balanceRefunded+" = "+balanceRefunded+" + #am",
		"#st = :reserved AND #fe = :fence",
		map[string]types.AttributeValue{":succeeded": str(string(refund.EntrySucceeded)), ":reserved": str(string(refund.EntryReserved)), ":fence": num(int64(fence))}, false)
	if err != nil || old == nil {
		return err
	}
	if e, err := entryOf(old, key); err != nil || e.State == refund.EntrySucceeded && e.Fence == fence {
		return err // done by this attempt's own earlier write
	}
	return refund.ErrFenced
}

// Release implements refund.Balances: reserved -> released for this
// fence, giving its amount back; or, when the entry has no state and its
// fence is absent or this one, a tombstone: released, with this fence.
func (b *Balances) Release(ctx context.Context, chargeID, key string, fence int) error {
	values := map[string]types.AttributeValue{
		":released": str(string(refund.EntryReleased)), ":reserved": str(string(refund.EntryReserved)), ":fence": num(int64(fence)),
	}
	old, _, err := b.update(ctx, chargeID, key,
		"SET #st = :released, "+balanceReserved+" = "+balanceReserved+" - #am, "+balanceRemaining+" = "+balanceRemaining+" + #am",
		"#st = :reserved AND #fe = :fence", values, false)
	if err != nil || old == nil {
		return err
	}
	e, err := entryOf(old, key)
	_, hasFence := old["fence_"+key]
	switch {
	case err != nil:
		return err
	case e.State == refund.EntryReleased && e.Fence == fence:
		return nil // done by this attempt's own earlier write
	case e.State != "" || hasFence && e.Fence != fence:
		return refund.ErrFenced
	}
	// Nothing reserved: mark it released, so no earlier attempt reserves.
	delete(values, ":reserved")
	old, _, err = b.update(ctx, chargeID, key, "SET #st = :released, #fe = :fence",
		"attribute_not_exists(#st) AND (attribute_not_exists(#fe) OR #fe = :fence)", values, false)
	if err != nil || old == nil {
		return err
	}
	if e, err := entryOf(old, key); err != nil || e.State == refund.EntryReleased && e.Fence == fence {
		return err
	}
	return refund.ErrFenced
}

// Get implements refund.Balances with a strongly consistent GetItem.
func (b *Balances) Get(ctx context.Context, chargeID string) (refund.Balance, error) {
	item, err := b.item(ctx, chargeID)
	if err != nil {
		return refund.Balance{}, err
	}
	bal := refund.Balance{
		ChargeAmount: intOf(item, balanceChargeAmount), Remaining: intOf(item, balanceRemaining),
		Reserved: intOf(item, balanceReserved), Refunded: intOf(item, balanceRefunded), Entries: int(intOf(item, balanceEntries)),
	}
	for name := range item {
		key, ok := strings.CutPrefix(name, "fence_")
		if !ok {
			continue // every entry has a fence: a stub has nothing else
		}
		e, err := entryOf(item, key)
		if err != nil {
			return refund.Balance{}, err
		}
		if bal.ByKey == nil {
			bal.ByKey = map[string]refund.Entry{}
		}
		bal.ByKey[key] = e
	}
	return bal, nil
}

// Entry implements refund.Balances with a strongly consistent GetItem.
func (b *Balances) Entry(ctx context.Context, chargeID, key string) (refund.Entry, bool, error) {
	item, err := b.item(ctx, chargeID)
	if err != nil {
		return refund.Entry{}, false, err
	}
	_, hasFence := item["fence_"+key]
	_, hasState := item["state_"+key]
	e, err := entryOf(item, key)
	return e, hasFence || hasState, err
}

func (b *Balances) item(ctx context.Context, chargeID string) (map[string]types.AttributeValue, error) {
	item, err := getItem(ctx, b.api, b.table, tabledef.BalancePrefix+chargeID)
	if err != nil {
		return nil, fmt.Errorf("balance of %s: %w", chargeID, err)
	}
	return item, nil
}

// entryOf is key's entry in item.
func entryOf(item map[string]types.AttributeValue, key string) (refund.Entry, error) {
	var e refund.Entry
	if s, ok := item["state_"+key].(*types.AttributeValueMemberS); ok {
		switch st := refund.State(s.Value); st {
		case refund.EntryReserved, refund.EntrySucceeded, refund.EntryReleased:
			e.State = st
		default:
			return e, fmt.Errorf("balance entry %s: state %q", key, s.Value)
		}
	}
	e.Fence = int(intOf(item, "fence_"+key))
	e.Amount = intOf(item, "amount_"+key)
	return e, nil
}

// intOf is item's number attribute name, 0 when absent (or not a number).
func intOf(item map[string]types.AttributeValue, name string) int64 {
	n, ok := item[name].(*types.AttributeValueMemberN)
	if !ok {
		return 0
	}
	v, _ := strconv.ParseInt(n.Value, 10, 64)
	return v
}

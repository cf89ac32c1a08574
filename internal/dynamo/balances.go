package dynamo

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idempotent-payments/idempay/internal/refund"
	"github.com/idempotent-payments/idempay/internal/tabledef"
)

// Balances are the refund.Balances on the table (Table.Balances): one item
// per charge, BALANCE#<charge id>, with the balance's figures, its two
// watermarks (released_through, a claim time in epoch milliseconds, and
// folded_at, the latest fold's time in epoch nanoseconds) and one entry
// per refund in flight (or succeeded, kept by an earlier version), three
// attributes named by its downstream key (state_K, fence_K, amount_K).
// Each step is one UpdateItem whose condition decides it (DESIGN §7); a
// refused one returns the item as it was
// (ReturnValuesOnConditionCheckFailure ALL_OLD), which tells an attempt's
// own earlier write from another's, and chooses the next write of a step
// that takes more than one. The item has no expires_at and no expiry
// bucket: it never expires, in either table mode. It holds at most
// refund.MaxEntries entries, so it is never larger than MaxBalanceBytes.
type Balances struct {
	api   API
	table string
}

// The balance item's attributes.
const (
	balanceChargeAmount    = "charge_amount"
	balanceRemaining       = "remaining"
	balanceReserved        = "reserved"
	balanceRefunded        = "refunded"
	balanceEntries         = "entries"
	balanceReleasedThrough = "released_through"
	balanceFoldedAt        = "folded_at"
)

// MaxBalanceBytes is the largest a balance item can be by DynamoDB's
// measure of an item (the UTF-8 bytes of each attribute's name and value,
// a number 1 byte and 1 per 2 digits): its key, its five figures and its
// two watermarks, the capture side's five figures, closing intent and
// closure (Captures), and refund.MaxEntries entries in their longest
// form, a capture's reserved and marked held for an operator, with a
// fence and an amount of 19 digits each. An update of it is billed 11
// write units (1 KB each); TestBalanceSizeIsBounded holds it against an
// item driven there on DynamoDB Local.
const MaxBalanceBytes = 11150

// entryNames are the expression names of key's entry that expr uses, of
// #st, #fe and #am (DynamoDB refuses a name no expression uses).
func entryNames(key, expr string) map[string]string {
	names := map[string]string{}
	for name, attribute := range map[string]string{"#st": "state_", "#fe": "fence_", "#am": "amount_", "#hd": entryHeld} {
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
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	if names := entryNames(key, update+" "+condition); len(names) > 0 { // DynamoDB refuses an empty map
		in.ExpressionAttributeNames = names
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

// The conditions on the claim watermark: the intent claimed at :claimed
// is folded, or it is not.
const (
	folded    = balanceReleasedThrough + " >= :claimed"
	notFolded = "(attribute_not_exists(" + balanceReleasedThrough + ") OR " + balanceReleasedThrough + " < :claimed)"
)

// claimed is the value of :claimed: an intent's claim time.
func claimed(in refund.Intent) types.AttributeValue { return num(in.Claimed.UnixMilli()) }

// foldedIn reports whether item's claim watermark folds the intent.
func foldedIn(item map[string]types.AttributeValue, in refund.Intent) bool {
	_, ok := item[balanceReleasedThrough]
	return ok && intOf(item, balanceReleasedThrough) >= in.Claimed.UnixMilli()
}

// stampFolded reports whether item's folded_at refuses a reservation
// issued at stamp.
func stampFolded(item map[string]types.AttributeValue, stamp time.Time) bool {
	_, ok := item[balanceFoldedAt]
	return ok && intOf(item, balanceFoldedAt) >= stamp.UnixNano()
}

// A mark is one watermark a fold raises: its attribute, the expression
// value that names its target, and the target.
type mark struct {
	attribute, value string
	to               int64
}

// marks are the watermarks a fold of in raises: folded_at to its FoldAt,
// and with byClaim released_through to its claim time.
func marks(in refund.Intent, byClaim bool) []mark {
	var ms []mark
	if !in.FoldAt.IsZero() {
		ms = append(ms, mark{balanceFoldedAt, ":foldAt", in.FoldAt.UnixNano()})
	}
	if byClaim {
		ms = append(ms, mark{balanceReleasedThrough, ":claimed", in.Claimed.UnixMilli()})
	}
	return ms
}

// raise is the SET clauses and the conditions of a write that raises
// each mark: where old (the item as the last refusal showed it, nil
// before the first write) has it at its target or above, the condition
// that it still is and no clause (DynamoDB has no max); else the
// condition that it is below or absent, and the clause that raises it.
// A mark only rises, so each write form a refusal rules out stays ruled
// out.
func raise(old map[string]types.AttributeValue, ms []mark, values map[string]types.AttributeValue) (set, conditions []string) {
	for _, m := range ms {
		values[m.value] = num(m.to)
		if _, ok := old[m.attribute]; ok && intOf(old, m.attribute) >= m.to {
			conditions = append(conditions, m.attribute+" >= "+m.value)
			continue
		}
		conditions = append(conditions, "(attribute_not_exists("+m.attribute+") OR "+m.attribute+" < "+m.value+")")
		set = append(set, m.attribute+" = "+m.value)
	}
	return set, conditions
}

// setAnd is an update expression of SET clauses (none: only the rest).
func setAnd(set []string, rest string) string {
	if len(set) == 0 {
		return rest
	}
	return strings.TrimSpace("SET " + strings.Join(set, ", ") + " " + rest)
}

// Reserve implements refund.Balances: one UpdateItem conditioned on the
// intent holding no entry, its claim after released_through and the
// reservation's stamp after folded_at, fewer than refund.MaxEntries
// entries, and room left. Without an amount it reserves what remains,
// resolved by the same write.
func (b *Balances) Reserve(ctx context.Context, r refund.Reservation) (refund.Entry, error) {
	if r.ChargeAmount > 0 && r.Amount > r.ChargeAmount {
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
	values := reservationValues(r.Intent, r.Fence, r.Stamp)
	values[":charged"] = num(r.ChargeAmount)
	condition := strings.Join(newEntry, " AND ")
	// What remains: the charge's amount until a step opens it, or, for an
	// authorization (nothing captured at creation), only once a capture's
	// success opened it.
	remains := "(attribute_not_exists(" + balanceRemaining + ") OR " + balanceRemaining
	if r.ChargeAmount == 0 {
		remains = "(" + balanceRemaining
	}
	update := "SET " + balanceChargeAmount + " = if_not_exists(" + balanceChargeAmount + ", :charged), " +
		balanceRefunded + " = if_not_exists(" + balanceRefunded + ", :zero), " +
		balanceEntries + " = if_not_exists(" + balanceEntries + ", :zero) + :one, #st = :reserved, #fe = :fence, "
	if r.Amount > 0 {
		values[":amount"] = num(r.Amount)
		condition += " AND " + remains + " >= :amount)"
		update += "#am = :amount, " +
			balanceRemaining + " = if_not_exists(" + balanceRemaining + ", :charged) - :amount, " +
			balanceReserved + " = if_not_exists(" + balanceReserved + ", :zero) + :amount"
	} else { // what remains: every right-hand side reads the item before this write
		condition += " AND " + remains + " > :zero)"
		update += "#am = if_not_exists(" + balanceRemaining + ", :charged), " +
			balanceReserved + " = if_not_exists(" + balanceReserved + ", :zero) + if_not_exists(" + balanceRemaining + ", :charged), " +
			balanceRemaining + " = :zero"
	}
	key := r.Intent.Key
	old, updated, err := b.update(ctx, r.ChargeID, key, update, condition, values, true)
	switch {
	case err != nil:
		return refund.Entry{}, err
	case old == nil:
		return entryOf(updated, key)
	}
	if e, decided, err := refusedEntry(old, r.Intent, r.Fence, r.Stamp); decided {
		return e, err
	}
	return refund.Entry{}, &refund.NoRoomError{Refundable: intOf(old, balanceRemaining)}
}

// newEntry are the conditions of every reservation, of any operation, on
// its intent's entry and the balance's watermarks and limit: the intent
// holds no entry, is not folded by its claim, the write's stamp is after
// folded_at, and fewer than refund.MaxEntries entries are held. Their
// values are reservationValues'.
var newEntry = []string{
	"attribute_not_exists(#fe)", notFolded,
	"(attribute_not_exists(" + balanceFoldedAt + ") OR " + balanceFoldedAt + " < :stamp)",
	"(attribute_not_exists(" + balanceEntries + ") OR " + balanceEntries + " < :max)",
}

// reservationValues are the values of newEntry and of the new entry's
// clauses (#st = :reserved, #fe = :fence, entries + :one, :zero).
func reservationValues(in refund.Intent, fence int, stamp time.Time) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		":zero": num(0), ":one": num(1), ":max": num(refund.MaxEntries),
		":reserved": str(string(refund.EntryReserved)), ":fence": num(int64(fence)), ":claimed": claimed(in),
		":stamp": num(stamp.UnixNano()),
	}
}

// refusedEntry says why old refused a reservation of in by fence,
// stamped stamp, when its entry, the watermarks or the limit decided it
// (decided); the entry is old's (its own reservation, answered again,
// with no error). Otherwise the operation's own conditions did.
func refusedEntry(old map[string]types.AttributeValue, in refund.Intent, fence int, stamp time.Time) (e refund.Entry, decided bool, err error) {
	e, err = entryOf(old, in.Key)
	if err != nil {
		return refund.Entry{}, true, err
	}
	_, hasFence := old["fence_"+in.Key]
	switch {
	case e.State == refund.EntryReserved && e.Fence == fence:
		return e, true, nil // this attempt's own reservation, answered again
	case hasFence:
		return e, true, refund.ErrFenced
	case foldedIn(old, in):
		return refund.Entry{State: refund.EntryReleased}, true, refund.ErrReleased
	case stampFolded(old, stamp):
		return refund.Entry{}, true, refund.ErrStampPassed
	case intOf(old, balanceEntries) >= refund.MaxEntries:
		return e, true, refund.ErrLimitReached
	}
	return e, false, nil
}

// Refence implements refund.Balances: fence_K = fence where the entry is
// reserved (or an earlier version's succeeded one) under a lower one;
// where the intent holds no entry, the fold (fold). Each write's refusal
// shows the item as it was, which chooses the next: an entry that
// appeared meanwhile (an earlier attempt's reservation, landing) is
// re-fenced. A refusal that finds fence_K = fence is this attempt's own
// write, answered again. An entry an earlier version left (released, or
// a stub) is folded in its place (foldLegacy).
func (b *Balances) Refence(ctx context.Context, chargeID string, in refund.Intent, fence int) (refund.Entry, error) {
	values := map[string]types.AttributeValue{":fence": num(int64(fence)), ":reserved": str(string(refund.EntryReserved)),
		":succeeded": str(string(refund.EntrySucceeded))}
	var old map[string]types.AttributeValue // the item as the last refusal showed it; nil before the first write
	for range maxSteps {
		var (
			updated map[string]types.AttributeValue
			err     error
			done    bool
		)
		e, err := entryOf(old, in.Key)
		if err != nil {
			return refund.Entry{}, err
		}
		_, hasFence := old["fence_"+in.Key]
		switch held := e.State == refund.EntryReserved || e.State == refund.EntrySucceeded; {
		case old == nil || held && e.Fence < fence:
			old, updated, err = b.update(ctx, chargeID, in.Key, "SET #fe = :fence",
				"#st IN (:reserved, :succeeded) AND #fe < :fence", values, true)
			if err == nil && old == nil {
				return entryOf(updated, in.Key)
			}
		case held && e.Fence == fence:
			return e, nil // this attempt's own write, answered again
		case held, e.State == "" && hasFence && e.Fence > fence:
			return e, refund.ErrFenced
		case hasFence:
			old, done, err = b.foldLegacy(ctx, chargeID, in, true, old)
		default: // no entry: no attempt reserved, or the intent ended; after the fold none can reserve
			old, done, err = b.fold(ctx, chargeID, in, old)
		}
		if err != nil {
			return refund.Entry{}, err
		}
		if done {
			return refund.Entry{State: refund.EntryReleased}, nil
		}
	}
	return refund.Entry{}, fmt.Errorf("balance of %s: the entry kept moving while re-fenced", chargeID)
}

// maxSteps bounds the writes of one step that takes more than one. Each
// refusal shows the item moved on, and each move happens once for an
// intent: an entry reserved (a late reservation landing), an earlier
// version's entry folded, a watermark passing its target. The longest
// run is Release's: give back, fold (an entry appeared), give back (a
// watermark passed its target), give back (the other one did).
const maxSteps = 6

// fold raises the watermarks of a fold of in (marks) where the intent
// holds no entry, as old (the item as the last refusal showed it, nil
// before the first write) says they stand. Every fold writes, unless old
// shows both at their targets already; done reports the fold made (or
// found made), else old is the item as the write's refusal showed it.
func (b *Balances) fold(ctx context.Context, chargeID string, in refund.Intent, old map[string]types.AttributeValue) (map[string]types.AttributeValue, bool, error) {
	values := map[string]types.AttributeValue{}
	set, conditions := raise(old, marks(in, true), values)
	if old != nil && len(set) == 0 {
		return old, true, nil // the item showed no entry and both marks reached
	}
	old, _, err := b.update(ctx, chargeID, in.Key, setAnd(set, ""),
		"attribute_not_exists(#fe) AND "+strings.Join(conditions, " AND "), values, false)
	return old, err == nil && old == nil, err
}

// foldEntry folds the entry the intent holds reserved under fence in
// one UpdateItem: its amount leaves reserved for the figure to (refunded
// on a success, remaining on a release), and foldReserved does the rest.
func (b *Balances) foldEntry(ctx context.Context, chargeID string, in refund.Intent, fence int, byClaim bool, to string, old map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
	moves := []string{balanceReserved + " = " + balanceReserved + " - #am", to + " = " + to + " + #am"}
	return b.foldReserved(ctx, chargeID, in, fence, byClaim, moves, nil, "", map[string]types.AttributeValue{}, old)
}

// foldReserved folds the entry the intent holds reserved under fence in
// one UpdateItem: the SET clauses moves (which read the entry's amount as
// #am, and values), the entry removed (and the attributes remove lists,
// comma-separated, besides), entries no longer counting it, and the
// watermarks raised (marks, byClaim); conditions are required besides the
// entry's. old is the item as the last refusal showed it (nil before the
// first write); it returns the item as this write's refusal showed it,
// nil when the fold landed.
func (b *Balances) foldReserved(ctx context.Context, chargeID string, in refund.Intent, fence int, byClaim bool, moves, conditions []string, remove string,
	values, old map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
	values[":reserved"], values[":fence"], values[":one"] = str(string(refund.EntryReserved)), num(int64(fence)), num(1)
	set, marked := raise(old, marks(in, byClaim), values)
	set = append(append(set, moves...), balanceEntries+" = "+balanceEntries+" - :one")
	if remove != "" {
		remove = ", " + remove
	}
	all := append(append([]string{"#st = :reserved AND #fe = :fence"}, conditions...), marked...)
	old, _, err := b.update(ctx, chargeID, in.Key, setAnd(set, "REMOVE #st, #fe, #am, #hd"+remove), strings.Join(all, " AND "), values, false)
	return old, err
}

// foldLegacy folds an entry an earlier version of the balance left behind
// (seen in old): a released one, which it kept as a tombstone, a
// take-over's stub (a fence and no state), or a succeeded one. The entry
// is removed, entries no longer counts it (it counted one that reserved:
// it has an amount), and the watermarks rise (marks, byClaim as the
// caller's fold), so no attempt of the intent can reserve. The condition
// is the entry as old shows it; done reports the fold made, else old is
// the item as the write's refusal showed it.
func (b *Balances) foldLegacy(ctx context.Context, chargeID string, in refund.Intent, byClaim bool, old map[string]types.AttributeValue) (map[string]types.AttributeValue, bool, error) {
	e, err := entryOf(old, in.Key)
	if err != nil {
		return nil, false, err
	}
	values := map[string]types.AttributeValue{":was": num(int64(e.Fence))}
	condition := "#fe = :was AND attribute_not_exists(#st)"
	if e.State != "" {
		values[":st"] = str(string(e.State))
		condition = "#fe = :was AND #st = :st"
	}
	set, conditions := raise(old, marks(in, byClaim), values)
	if _, counted := old["amount_"+in.Key]; counted {
		values[":one"] = num(1)
		set = append(set, balanceEntries+" = "+balanceEntries+" - :one")
	}
	if len(conditions) > 0 {
		condition += " AND " + strings.Join(conditions, " AND ")
	}
	old, _, err = b.update(ctx, chargeID, in.Key, setAnd(set, "REMOVE #st, #fe, #am"), condition, values, false)
	return old, err == nil && old == nil, err
}

// Succeed implements refund.Balances: a reserved entry of this fence is
// folded in one UpdateItem, its amount moved from reserved to refunded,
// the entry removed and the watermarks raised (released_through only
// when in is not a first attempt's). An intent with no entry has ended:
// done. An earlier version's succeeded entry of this fence is folded
// (foldLegacy). Each refusal chooses the next write from the item as it
// was.
func (b *Balances) Succeed(ctx context.Context, chargeID string, in refund.Intent, fence int) error {
	var old map[string]types.AttributeValue // the item as the last refusal showed it; nil before the first write
	for range maxSteps {
		e, err := entryOf(old, in.Key)
		if err != nil {
			return err
		}
		_, hasFence := old["fence_"+in.Key]
		switch {
		case old == nil || e.State == refund.EntryReserved && e.Fence == fence:
			old, err = b.foldEntry(ctx, chargeID, in, fence, !in.First, balanceRefunded, old)
		case e.State == refund.EntrySucceeded && e.Fence == fence:
			var done bool
			old, done, err = b.foldLegacy(ctx, chargeID, in, !in.First, old)
			if done {
				return err
			}
		case !hasFence:
			return nil // ended: succeeded by this attempt's own earlier write, or by another's
		default:
			return refund.ErrFenced
		}
		if err != nil || old == nil {
			return err
		}
	}
	return fmt.Errorf("balance of %s: the entry kept moving while it succeeded", chargeID)
}

// Release implements refund.Balances. A reserved entry of this fence is
// given back and removed in one UpdateItem, which also raises the
// watermarks. An intent that holds no entry is folded (fold), and an
// entry an earlier version left (foldLegacy). Each refusal chooses the
// next write from the item as it was.
func (b *Balances) Release(ctx context.Context, chargeID string, in refund.Intent, fence int) error {
	var old map[string]types.AttributeValue // the item as the last refusal showed it; nil before the first write
	for range maxSteps {
		e, err := entryOf(old, in.Key)
		if err != nil {
			return err
		}
		_, hasFence := old["fence_"+in.Key]
		done := false
		switch {
		case old == nil || e.State == refund.EntryReserved && e.Fence == fence:
			old, err = b.foldEntry(ctx, chargeID, in, fence, true, balanceRemaining, old)
			done = err == nil && old == nil
		case e.State == refund.EntryReleased || e.State == "" && hasFence && e.Fence <= fence:
			old, done, err = b.foldLegacy(ctx, chargeID, in, true, old)
		case hasFence:
			return refund.ErrFenced // another attempt's, or an earlier version's succeeded one
		default: // nothing reserved, or ended already
			old, done, err = b.fold(ctx, chargeID, in, old)
		}
		if err != nil || done {
			return err
		}
	}
	return fmt.Errorf("balance of %s: the entry kept moving while released", chargeID)
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
		Captured: intOf(item, captureCaptured),
	}
	if _, ok := item[balanceReleasedThrough]; ok {
		bal.ReleasedThrough = time.UnixMilli(intOf(item, balanceReleasedThrough)).UTC()
	}
	if _, ok := item[balanceFoldedAt]; ok {
		bal.FoldedAt = time.Unix(0, intOf(item, balanceFoldedAt)).UTC()
	}
	for name := range item {
		key, ok := strings.CutPrefix(name, "fence_")
		if !ok {
			continue // every entry has a fence
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
func (b *Balances) Entry(ctx context.Context, chargeID string, in refund.Intent) (refund.Entry, bool, error) {
	item, err := b.item(ctx, chargeID)
	if err != nil {
		return refund.Entry{}, false, err
	}
	if _, hasFence := item["fence_"+in.Key]; hasFence {
		e, err := entryOf(item, in.Key)
		return e, true, err
	}
	if foldedIn(item, in) {
		return refund.Entry{State: refund.EntryReleased}, true, nil
	}
	return refund.Entry{}, false, nil
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

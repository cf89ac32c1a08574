package dynamo

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idempotent-payments/idempay/internal/capture"
	"github.com/idempotent-payments/idempay/internal/refund"
)

// Captures are the capture.Balances on the table (Table.Captures): the
// capture side of the same balance items as Balances, on the same
// entries and watermarks (docs/design.md §8). The side's attributes are
// opened by its first step, from the authorization's amount the caller
// read from the charge's row; an item without them has no capture side.
// Each step is one UpdateItem whose condition decides it, and a refused
// one returns the item as it was, as for refunds.
type Captures struct{ b *Balances }

// The capture side's attributes: cap_capturable + cap_reserved +
// cap_captured + cap_released = cap_authorized; cap_closing names the
// void or final capture in flight (its downstream key) and
// cap_closing_kind its kind; cap_closed says how the authorization closed.
const (
	captureAuthorized  = "cap_authorized"
	captureCapturable  = "cap_capturable"
	captureReserved    = "cap_reserved"
	captureCaptured    = "cap_captured"
	captureReleased    = "cap_released"
	captureClosing     = "cap_closing"
	captureClosingKind = "cap_closing_kind"
	captureClosed      = "cap_closed"
)

// entryHeld prefixes the attribute that marks an entry held for an
// operator (capture.Balances.MarkHeld): held_<downstream key>, removed
// with the entry's other attributes by its fold.
const entryHeld = "held_"

// capturable is the expression of what remains capturable: the item's, or
// all of the authorization where the side is not opened yet.
const capturable = "if_not_exists(" + captureCapturable + ", :authorized)"

// opens are the SET clauses that open the capture side where a step finds
// it absent (each keeps what is there).
func opens(except ...string) []string {
	var set []string
	for _, attr := range []string{captureAuthorized, captureReserved, captureCaptured, captureReleased} {
		if !slices.Contains(except, attr) {
			value := ":zero"
			if attr == captureAuthorized {
				value = ":authorized"
			}
			set = append(set, attr+" = if_not_exists("+attr+", "+value+")")
		}
	}
	return set
}

// Reserve implements capture.Balances: one UpdateItem conditioned on the
// intent holding no entry and not folded, fewer than refund.MaxEntries
// entries, the authorization open with no closing intent in flight, no
// capture in flight for a Final capture or a Void (which then take the
// closing), and room. Without an amount (a Void always) it takes what
// remains, resolved by the same write.
func (c *Captures) Reserve(ctx context.Context, r capture.Reservation) (refund.Entry, error) {
	if r.Amount > r.Authorized && r.Kind != capture.Void {
		bal, err := c.Get(ctx, r.ChargeID) // only to say what remains: the answer decides nothing
		if err != nil {
			return refund.Entry{}, err
		}
		remains := r.Authorized
		if bal.Authorized != 0 {
			remains = bal.Capturable
		}
		return refund.Entry{}, &capture.NoRoomError{Capturable: remains}
	}
	values := reservationValues(r.Intent, r.Fence, r.Stamp)
	values[":authorized"] = num(r.Authorized)
	conditions := append(slices.Clone(newEntry), "attribute_not_exists("+captureClosed+")", "attribute_not_exists("+captureClosing+")")
	set := append(opens(captureReserved), balanceEntries+" = if_not_exists("+balanceEntries+", :zero) + :one", "#st = :reserved", "#fe = :fence")
	closes := r.Kind == capture.Final || r.Kind == capture.Void
	if closes {
		values[":key"], values[":kind"] = str(r.Intent.Key), str(string(r.Kind))
		conditions = append(conditions, "(attribute_not_exists("+captureReserved+") OR "+captureReserved+" = :zero)")
		set = append(set, captureClosing+" = :key", captureClosingKind+" = :kind")
	}
	if r.Amount > 0 && r.Kind != capture.Void {
		values[":amount"] = num(r.Amount)
		conditions = append(conditions, "(attribute_not_exists("+captureCapturable+") OR "+captureCapturable+" >= :amount)")
		set = append(set, "#am = :amount", captureCapturable+" = "+capturable+" - :amount",
			captureReserved+" = if_not_exists("+captureReserved+", :zero) + :amount")
	} else { // what remains: every right-hand side reads the item before this write
		conditions = append(conditions, "(attribute_not_exists("+captureCapturable+") OR "+captureCapturable+" > :zero)")
		set = append(set, "#am = "+capturable, captureReserved+" = if_not_exists("+captureReserved+", :zero) + "+capturable,
			captureCapturable+" = :zero")
	}
	key := r.Intent.Key
	old, updated, err := c.b.update(ctx, r.ChargeID, key, "SET "+strings.Join(set, ", "), strings.Join(conditions, " AND "), values, true)
	switch {
	case err != nil:
		return refund.Entry{}, err
	case old == nil:
		return entryOf(updated, key)
	}
	return refusedCapture(old, r)
}

// refusedCapture says why the item old refused r's reservation, in the
// order the memory balances decide it, from old alone: how it closed,
// and what is in flight.
func refusedCapture(old map[string]types.AttributeValue, r capture.Reservation) (refund.Entry, error) {
	e, decided, err := refusedEntry(old, r.Intent, r.Fence, r.Stamp)
	if decided {
		return e, err
	}
	remains := r.Authorized
	if _, opened := old[captureCapturable]; opened {
		remains = intOf(old, captureCapturable)
	}
	closed, _ := old[captureClosed].(*types.AttributeValueMemberS)
	_, closing := old[captureClosing]
	closes := r.Kind == capture.Final || r.Kind == capture.Void
	reserved := intOf(old, captureReserved) > 0
	takesWhatRemains := r.Amount == 0 || r.Kind == capture.Void
	switch {
	case closed != nil:
		return e, &capture.ClosedError{Closed: capture.Closed(closed.Value)}
	case closing, closes && reserved, takesWhatRemains && reserved:
		return e, inFlightOf(old)
	case takesWhatRemains:
		return e, capture.ErrNothingCapturable
	}
	return e, &capture.NoRoomError{Capturable: remains}
}

// inFlightOf is the *capture.InFlightError of an item whose intents in
// flight stop a step: the closing intent, held when its entry is marked
// so; else the captures in flight, held when one of them is.
func inFlightOf(item map[string]types.AttributeValue) *capture.InFlightError {
	if closing, ok := item[captureClosing].(*types.AttributeValueMemberS); ok {
		_, held := item[entryHeld+closing.Value]
		return &capture.InFlightError{Kind: kindOf(item), Held: held}
	}
	return &capture.InFlightError{Kind: capture.Partial, Held: heldIn(item) > 0}
}

// heldIn counts the entries of item marked held for an operator.
func heldIn(item map[string]types.AttributeValue) int {
	n := 0
	for name := range item {
		if strings.HasPrefix(name, entryHeld) {
			n++
		}
	}
	return n
}

// kindOf is the kind of the closing intent item holds.
func kindOf(item map[string]types.AttributeValue) capture.Kind {
	if s, ok := item[captureClosingKind].(*types.AttributeValueMemberS); ok {
		return capture.Kind(s.Value)
	}
	return ""
}

// Refence implements capture.Balances: the balance's own
// (Balances.Refence).
func (c *Captures) Refence(ctx context.Context, chargeID string, in refund.Intent, fence int) (refund.Entry, error) {
	return c.b.Refence(ctx, chargeID, in, fence)
}

// Entry implements capture.Balances: the balance's own (Balances.Entry).
func (c *Captures) Entry(ctx context.Context, chargeID string, in refund.Intent) (refund.Entry, bool, error) {
	return c.b.Entry(ctx, chargeID, in)
}

// Succeed implements capture.Balances: a reserved entry of this fence is
// folded in one UpdateItem that moves its amount as its kind says (and,
// for a Final capture or a Void, closes the authorization and gives the
// closing back) and raises the watermarks (the claim watermark unless it
// is a first attempt's). An intent with no entry has ended: done.
func (c *Captures) Succeed(ctx context.Context, chargeID string, in refund.Intent, fence int, kind capture.Kind) error {
	values := map[string]types.AttributeValue{}
	moves := []string{captureReserved + " = " + captureReserved + " - #am"}
	switch kind {
	case capture.Void:
		values[":closed"] = str(string(capture.ClosedVoided))
		moves = append(moves, captureReleased+" = "+captureReleased+" + #am", captureClosed+" = :closed")
	case capture.Final:
		values[":closed"] = str(string(capture.ClosedCaptured))
		moves = append(moves, captureCaptured+" = "+captureCaptured+" + #am", captureReleased+" = "+captureReleased+" + "+captureCapturable,
			captureCapturable+" = :zero", captureClosed+" = :closed")
	default:
		moves = append(moves, captureCaptured+" = "+captureCaptured+" + #am")
	}
	if kind != capture.Void { // captured: refundable from now on
		values[":zero"] = num(0)
		moves = append(moves, balanceRemaining+" = if_not_exists("+balanceRemaining+", :zero) + #am")
	}
	conditions, remove := kindConditions(in, kind, values)
	var old map[string]types.AttributeValue // the item as the last refusal showed it; nil before the first write
	for range maxSteps {
		e, err := entryOf(old, in.Key)
		if err != nil {
			return err
		}
		_, hasFence := old["fence_"+in.Key]
		switch {
		case old != nil && e.State == refund.EntryReserved && e.Fence == fence && !ofKind(old, in.Key, kind):
			return capture.ErrKindDiffers
		case old == nil || e.State == refund.EntryReserved && e.Fence == fence:
			old, err = c.b.foldReserved(ctx, chargeID, in, fence, !in.First, moves, conditions, remove, values, old)
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

// Release implements capture.Balances: a reserved entry of this fence is
// given back to what is capturable (with the closing, a Final capture's
// or a Void's) and folded in one UpdateItem; an intent that holds no
// entry is folded (Balances.fold).
func (c *Captures) Release(ctx context.Context, chargeID string, in refund.Intent, fence int, kind capture.Kind) error {
	values := map[string]types.AttributeValue{}
	moves := []string{captureReserved + " = " + captureReserved + " - #am", captureCapturable + " = " + captureCapturable + " + #am"}
	conditions, remove := kindConditions(in, kind, values)
	var old map[string]types.AttributeValue // the item as the last refusal showed it; nil before the first write
	for range maxSteps {
		e, err := entryOf(old, in.Key)
		if err != nil {
			return err
		}
		_, hasFence := old["fence_"+in.Key]
		done := false
		switch {
		case old != nil && e.State == refund.EntryReserved && e.Fence == fence && !ofKind(old, in.Key, kind):
			return capture.ErrKindDiffers
		case old == nil || e.State == refund.EntryReserved && e.Fence == fence:
			old, err = c.b.foldReserved(ctx, chargeID, in, fence, true, moves, conditions, remove, values, old)
			done = err == nil && old == nil
		case hasFence:
			return refund.ErrFenced
		default: // nothing reserved, or ended already
			old, done, err = c.b.fold(ctx, chargeID, in, old)
		}
		if err != nil || done {
			return err
		}
	}
	return fmt.Errorf("balance of %s: the entry kept moving while released", chargeID)
}

// kindConditions are the conditions, and the attributes to remove, of a
// success or a release of in's entry reserved as kind: a closing intent's
// entry is the item's cap_closing, of its kind, which the step removes; a
// capture's is not.
func kindConditions(in refund.Intent, kind capture.Kind, values map[string]types.AttributeValue) (conditions []string, remove string) {
	values[":key"] = str(in.Key)
	if kind == capture.Final || kind == capture.Void {
		values[":kind"] = str(string(kind))
		return []string{captureClosing + " = :key", captureClosingKind + " = :kind"}, captureClosing + ", " + captureClosingKind
	}
	return []string{"(attribute_not_exists(" + captureClosing + ") OR " + captureClosing + " <> :key)"}, ""
}

// ofKind reports whether item holds key's entry as reserved by kind: a
// closing intent's as its cap_closing, of its kind, a capture's not.
func ofKind(item map[string]types.AttributeValue, key string, kind capture.Kind) bool {
	closing, _ := item[captureClosing].(*types.AttributeValueMemberS)
	if kind == capture.Final || kind == capture.Void {
		return closing != nil && closing.Value == key && kindOf(item) == kind
	}
	return closing == nil || closing.Value != key
}

// Expire implements capture.Balances: one UpdateItem conditioned on the
// authorization open with nothing in flight, which releases what remains
// and closes it. A refusal says why: closed already (nil), or an intent
// in flight.
func (c *Captures) Expire(ctx context.Context, chargeID string, authorized int64) (capture.Closed, bool, error) {
	values := map[string]types.AttributeValue{":authorized": num(authorized), ":zero": num(0), ":closed": str(string(capture.ClosedExpired))}
	set := append(opens(captureReleased),
		captureReleased+" = if_not_exists("+captureReleased+", :zero) + "+capturable, captureCapturable+" = :zero", captureClosed+" = :closed")
	condition := "attribute_not_exists(" + captureClosed + ") AND attribute_not_exists(" + captureClosing + ")" +
		" AND (attribute_not_exists(" + captureReserved + ") OR " + captureReserved + " = :zero)"
	old, _, err := c.b.update(ctx, chargeID, "", "SET "+strings.Join(set, ", "), condition, values, false)
	closed, _ := old[captureClosed].(*types.AttributeValueMemberS)
	switch {
	case err != nil:
		return "", false, err
	case old == nil:
		return capture.ClosedExpired, true, nil
	case closed != nil:
		return capture.Closed(closed.Value), false, nil
	}
	return "", false, inFlightOf(old)
}

// MarkHeld implements capture.Balances: one UpdateItem conditioned on
// the entry reserved under fence sets its held_ attribute (or removes it).
// A refusal says why: an intent with no entry has ended (nil), else
// another attempt owns the entry.
func (c *Captures) MarkHeld(ctx context.Context, chargeID string, in refund.Intent, fence int, held bool) error {
	values := map[string]types.AttributeValue{":reserved": str(string(refund.EntryReserved)), ":fence": num(int64(fence))}
	update := "REMOVE #hd"
	if held {
		values[":held"], update = &types.AttributeValueMemberBOOL{Value: true}, "SET #hd = :held"
	}
	old, _, err := c.b.update(ctx, chargeID, in.Key, update, "#st = :reserved AND #fe = :fence", values, false)
	switch {
	case err != nil || old == nil:
		return err
	case old["fence_"+in.Key] == nil && old["state_"+in.Key] == nil:
		return nil // ended: it stops nothing
	}
	return refund.ErrFenced
}

// Get implements capture.Balances with a strongly consistent GetItem.
func (c *Captures) Get(ctx context.Context, chargeID string) (capture.Balance, error) {
	item, err := c.b.item(ctx, chargeID)
	if err != nil {
		return capture.Balance{}, err
	}
	bal := capture.Balance{Refunded: intOf(item, balanceRefunded)}
	if item[captureAuthorized] == nil {
		return bal, nil
	}
	bal.Authorized, bal.Capturable, bal.Reserved = intOf(item, captureAuthorized), intOf(item, captureCapturable), intOf(item, captureReserved)
	bal.Captured, bal.Released, bal.ClosingKind = intOf(item, captureCaptured), intOf(item, captureReleased), kindOf(item)
	bal.Held = heldIn(item)
	if s, ok := item[captureClosing].(*types.AttributeValueMemberS); ok {
		bal.Closing = s.Value
	}
	if s, ok := item[captureClosed].(*types.AttributeValueMemberS); ok {
		bal.Closed = capture.Closed(s.Value)
	}
	return bal, nil
}

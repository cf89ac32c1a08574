// Package refund is the refund domain's bound (DESIGN §7): the balance of
// each charge that refunds reserve from, so refunds under different keys
// never together exceed what was captured. Each step on a balance is one
// conditional write that the store decides; nothing here reads a balance
// to decide a write.
package refund

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// MaxEntries is how many refunds one charge may have succeeded or in
// flight (reserved) at once. A released one (declined, or never sent)
// gives its place back: its entry is folded into the balance's
// ReleasedThrough. The balance item holds one entry for each and no
// more, so its size has a fixed maximum whatever fails.
const MaxEntries = 50

// State is a refund entry's state.
type State string

// The states of an entry. EntryReserved moves to EntrySucceeded or
// EntryReleased, once; both are final. A released entry is not kept: the
// balance folds it (Balance.ReleasedThrough), and an intent it folded
// reads as EntryReleased.
const (
	EntryReserved  State = "reserved"
	EntrySucceeded State = "succeeded"
	EntryReleased  State = "released"
)

// Intent is one refund intent as its balance knows it: the downstream key
// that names its entry, and when its record was claimed (idem.Record's
// CreatedAt, to the millisecond), which orders it against the intents the
// balance has released.
type Intent struct {
	Key     string
	Claimed time.Time
}

// Entry is one refund intent's part of a balance. A folded intent's entry
// is EntryReleased with no fence and no amount.
type Entry struct {
	State State
	// Fence is the attempt of the refund record that last took the entry:
	// only that attempt may move it.
	Fence int
	// Amount is what the intent reserved: every attempt sends it.
	Amount int64
}

// Balance is what a charge's refunds have done: ChargeAmount =
// Remaining + Reserved + Refunded, each at least 0.
type Balance struct {
	ChargeAmount, Remaining, Reserved, Refunded int64
	// Entries counts the entries held: refunds reserved or succeeded.
	Entries int
	// ByKey is every held entry by its intent's downstream key (nil for a
	// charge never refunded).
	ByKey map[string]Entry
	// ReleasedThrough folds every released intent: an intent claimed at or
	// before it that holds no entry is released, and may never reserve.
	// Zero when no intent was released.
	ReleasedThrough time.Time
}

// Reservation asks to reserve for one refund intent.
type Reservation struct {
	// ChargeID and ChargeAmount name the charge and what it captured (its
	// ledger row, which never changes).
	ChargeID     string
	ChargeAmount int64
	// Intent is the refund intent, and Fence its record's attempt.
	Intent Intent
	Fence  int
	// Amount is what to reserve; 0 reserves what remains, resolved by the
	// same write.
	Amount int64
}

// Balances keeps the charges' balances. Each method is one conditional
// write, or a short series of them that each decide on their own (a
// refused condition returns the item as it was, which chooses the next
// write): two calls at the same instant on two instances are decided by
// the store, and a call retried after its answer was lost finds its own
// write and succeeds without applying it twice.
//
// Released intents are folded, not kept: a release removes the entry and
// raises ReleasedThrough to the intent's claim time, and an intent with no
// entry that was claimed at or before ReleasedThrough can never reserve.
// That is what stops an earlier attempt of a released intent from
// reserving after it, so the item holds at most MaxEntries entries and
// never grows with failures.
type Balances interface {
	// Reserve reserves r.Amount (or what remains) on the charge's balance
	// for the intent, if it holds no entry, was claimed after
	// ReleasedThrough, fewer than MaxEntries entries are held, and the
	// balance has room: it returns the entry. It fails with a
	// *NoRoomError when too little remains, ErrLimitReached when
	// MaxEntries entries are held, ErrReleased when the intent is folded,
	// and ErrFenced when its entry belongs to another attempt or has moved
	// on.
	Reserve(ctx context.Context, r Reservation) (Entry, error)
	// Refence makes fence the fence of the intent's entry if it has a
	// lower one, and returns the entry as it then is. A take-over calls it
	// before anything else, so no earlier attempt can reserve, succeed or
	// release any more: an intent with no entry is folded (released) by
	// the same call, since no attempt of it can have reserved, and comes
	// back EntryReleased. It fails with ErrFenced when the fence is
	// already higher; a fence already equal is this attempt's own write,
	// answered again, and succeeds (an attempt number belongs to one
	// lease).
	Refence(ctx context.Context, chargeID string, in Intent, fence int) (Entry, error)
	// Succeed moves a reserved entry of this fence to Succeeded: its
	// amount moves from reserved to refunded. A retry finds it done and
	// succeeds. ErrFenced otherwise.
	Succeed(ctx context.Context, chargeID, key string, fence int) error
	// Release gives a reserved entry of this fence back to what remains
	// and folds it, or folds an intent that holds no entry, so that no
	// earlier attempt can reserve afterwards. An intent already folded
	// succeeds (a retry, or another attempt's release). ErrFenced when the
	// entry belongs to another attempt or has succeeded: a succeeded entry
	// is never released.
	Release(ctx context.Context, chargeID string, in Intent, fence int) error
	// Get is the charge's balance (a zero Balance for a charge never
	// refunded) and Entry one intent's entry (ok false when it holds none
	// and is not folded).
	Get(ctx context.Context, chargeID string) (Balance, error)
	Entry(ctx context.Context, chargeID string, in Intent) (e Entry, ok bool, err error)
}

// ErrLimitReached: the charge already holds MaxEntries refunds, succeeded
// or in flight.
var ErrLimitReached = errors.New("refund: the charge has the most refunds allowed")

// ErrReleased: the intent holds no entry and was claimed at or before the
// balance's ReleasedThrough: it is released, and no attempt of it may
// reserve. Nothing was reserved for it, so nothing was sent.
var ErrReleased = errors.New("refund: the intent is released on the balance")

// ErrFenced: a later attempt of the intent's record took its entry, or the
// entry is not in the state the step moves it from.
var ErrFenced = errors.New("refund: the entry belongs to another attempt or has moved on")

// NoRoomError: the amount exceeds what remains refundable (the charge,
// minus succeeded refunds, minus refunds in flight), or nothing remains.
type NoRoomError struct {
	// Refundable is what remained when the reservation was refused.
	Refundable int64
}

func (e *NoRoomError) Error() string {
	return fmt.Sprintf("refund: only %d remains refundable", e.Refundable)
}

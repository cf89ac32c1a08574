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
)

// MaxEntries is how many refund intents may reserve on one charge,
// whatever became of them: the balance item keeps an entry for each, a
// declined or released one too, and stays far inside DynamoDB's 400 KB
// item limit.
const MaxEntries = 50

// State is a refund entry's state.
type State string

// The states of an entry. EntryReserved moves to EntrySucceeded or
// EntryReleased, once; both are final.
const (
	EntryReserved  State = "reserved"
	EntrySucceeded State = "succeeded"
	EntryReleased  State = "released"
)

// Entry is one refund intent's part of a balance, named by the intent's
// downstream key. A stub, written by a take-over before anything was
// reserved, has a Fence and no State.
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
	// Entries counts the intents that reserved.
	Entries int
	// ByKey is every intent's entry by its downstream key, stubs included
	// (nil for a charge never refunded).
	ByKey map[string]Entry
}

// Reservation asks to reserve for one refund intent.
type Reservation struct {
	// ChargeID and ChargeAmount name the charge and what it captured (its
	// ledger row, which never changes).
	ChargeID     string
	ChargeAmount int64
	// Key is the intent's downstream key and Fence its record's attempt.
	Key   string
	Fence int
	// Amount is what to reserve; 0 reserves what remains, resolved by the
	// same write.
	Amount int64
}

// Balances keeps the charges' balances. Each method is one conditional
// write: two calls at the same instant on two instances are decided by the
// store, and a call retried after its answer was lost finds its own write
// and succeeds without applying it twice.
type Balances interface {
	// Reserve reserves r.Amount (or what remains) on the charge's balance
	// for the intent, if its entry has no state, its fence is absent or
	// r.Fence, and the balance has room: it returns the entry. It fails
	// with a *NoRoomError when too little remains, ErrLimitReached when
	// MaxEntries intents have reserved, and ErrFenced when a later attempt
	// took the entry or the entry already moved on.
	Reserve(ctx context.Context, r Reservation) (Entry, error)
	// Refence makes fence the entry's fence if it has none or a lower one,
	// writing a stub when the intent has no entry yet, and returns the
	// entry as it then is. A take-over calls it before anything else, so
	// no earlier attempt can reserve, succeed or release any more. It
	// fails with ErrFenced when the fence is already higher; a fence
	// already equal is this attempt's own write, answered again, and
	// succeeds (an attempt number belongs to one lease).
	Refence(ctx context.Context, chargeID, key string, fence int) (Entry, error)
	// Succeed moves a reserved entry of this fence to Succeeded: its
	// amount moves from reserved to refunded. A retry finds it done and
	// succeeds. ErrFenced otherwise.
	Succeed(ctx context.Context, chargeID, key string, fence int) error
	// Release moves a reserved entry of this fence to Released, giving its
	// amount back to what remains, or marks a stub of this fence (or no
	// entry at all) Released, so that no earlier attempt can reserve
	// afterwards. A retry finds it done and succeeds. ErrFenced otherwise:
	// a succeeded entry is never released.
	Release(ctx context.Context, chargeID, key string, fence int) error
	// Get is the charge's balance (a zero Balance for a charge never
	// refunded) and Entry one intent's entry (ok false when it has none).
	Get(ctx context.Context, chargeID string) (Balance, error)
	Entry(ctx context.Context, chargeID, key string) (e Entry, ok bool, err error)
}

// ErrLimitReached: the charge already has MaxEntries refunds.
var ErrLimitReached = errors.New("refund: the charge has the most refunds allowed")

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

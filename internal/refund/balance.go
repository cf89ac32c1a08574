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

// MaxEntries is how many refunds one charge may have in flight
// (reserved) at once. An intent that ends, succeeded, declined or never
// sent, gives its place back: its entry is folded into the balance's
// figures and watermarks. The balance item holds one entry for each and
// no more, so its size has a fixed maximum however many refunds a
// charge has and whatever fails. (Entries that an earlier version kept
// for succeeded refunds count until their intent is touched again.)
const MaxEntries = 50

// State is a refund entry's state.
type State string

// The states of an entry. An entry is EntryReserved while its intent is
// in flight; when the intent ends, succeeded or released, the entry is
// folded: removed, and the intent then reads as EntryReleased (its row,
// when there is one, says how it ended). EntrySucceeded is an entry an
// earlier version kept for a succeeded refund: it is folded when its
// intent is next touched.
const (
	EntryReserved  State = "reserved"
	EntrySucceeded State = "succeeded"
	EntryReleased  State = "released"
)

// Intent is one refund intent as its balance knows it, at one step.
type Intent struct {
	// Key is the downstream key that names its entry.
	Key string
	// Claimed is when its record was claimed (idem.Record's CreatedAt, to
	// the millisecond), which orders it against ReleasedThrough.
	Claimed time.Time
	// FoldAt is what a fold of the intent raises FoldedAt to, at least:
	// the folder's clock, and never less than the fold's floor (the
	// reservation's stamp for a first attempt, the end of the lease it
	// took over for a take-over), so that no write of the intent issued
	// before the fold can reserve after it, whatever the clocks' skew.
	FoldAt time.Time
	// First is set for the intent's first attempt, the only one that
	// reserves: its success folds without raising ReleasedThrough (no
	// earlier attempt exists whose reservation it must stop).
	First bool
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

// Balance is what a charge's refunds have done: ChargeAmount + Captured =
// Remaining + Reserved + Refunded, each at least 0.
type Balance struct {
	ChargeAmount, Remaining, Reserved, Refunded int64
	// Captured is what the captures of an authorization made without its
	// capture took (the balance's capture side, package capture): each
	// capture's success adds its amount to Remaining. 0 for a charge
	// captured at creation, whose ChargeAmount is what it captured.
	Captured int64
	// Entries counts the entries held: refunds in flight (and succeeded
	// ones an earlier version kept).
	Entries int
	// ByKey is every held entry by its intent's downstream key (nil when
	// none is held).
	ByKey map[string]Entry
	// ReleasedThrough: an intent claimed at or before it that holds no
	// entry may never reserve. Every fold raises it to the intent's claim
	// time, but a first attempt's success. Zero when none did.
	ReleasedThrough time.Time
	// FoldedAt is the latest fold's FoldAt: a reservation issued at or
	// before it is refused. Zero when nothing was folded since balances
	// kept it.
	FoldedAt time.Time
}

// Reservation asks to reserve for one refund intent.
type Reservation struct {
	// ChargeID and ChargeAmount name the charge and what it captured at
	// creation (its ledger row, which never changes). ChargeAmount is 0
	// for an authorization made without its capture: then only what its
	// captures made refundable (Balance.Captured) may be reserved, and a
	// balance no capture opened refuses (a *NoRoomError of 0).
	ChargeID     string
	ChargeAmount int64
	// Intent is the refund intent, and Fence its record's attempt.
	Intent Intent
	Fence  int
	// Stamp is when the reservation's write was issued (idem.Lease.Stamp):
	// it reserves only if that is after the balance's FoldedAt, and every
	// try of the write carries it.
	Stamp time.Time
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
// Ended intents are folded, not kept: a success or a release removes the
// entry, moves its amount into the figures and raises FoldedAt to the
// intent's FoldAt (and ReleasedThrough to its claim time, but for a first
// attempt's success). A reservation issued at or before FoldedAt, or of
// an intent claimed at or before ReleasedThrough, can never reserve. That
// is what stops a write of an ended intent that lands late from reserving
// after it, so the item holds at most MaxEntries entries, the refunds in
// flight, whatever fails and however many refunds a charge has. Every
// fold writes, even where the watermarks already pass the intent.
type Balances interface {
	// Reserve reserves r.Amount (or what remains) on the charge's balance
	// for the intent, if it holds no entry, was claimed after
	// ReleasedThrough, r.Stamp is after FoldedAt, fewer than MaxEntries
	// entries are held, and the balance has room: it returns the entry.
	// It fails with a
	// *NoRoomError when too little remains, ErrLimitReached when
	// MaxEntries entries are held, ErrReleased when the intent is folded,
	// ErrStampPassed when only the stamp is too early, and ErrFenced when
	// its entry belongs to another attempt or has moved on.
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
	// Succeed folds a reserved entry of this fence: its amount moves from
	// reserved to refunded. An intent with no entry has ended, and the
	// caller, which holds the refund's row (written before the entry
	// moves, and only from the acquirer's answer to a reservation), takes
	// it as succeeded already: a retry, or another attempt's success. An
	// entry an earlier version kept as succeeded under this fence is
	// folded. ErrFenced otherwise.
	Succeed(ctx context.Context, chargeID string, in Intent, fence int) error
	// Release gives a reserved entry of this fence back to what remains
	// and folds it, or folds an intent that holds no entry, so that no
	// earlier attempt can reserve afterwards. An intent already folded
	// succeeds (a retry, or another attempt's release or success: a stale
	// attempt's, whose record's delete is then fenced). ErrFenced when the
	// entry belongs to another attempt or an earlier version kept it as
	// succeeded: a succeeded entry is never released.
	Release(ctx context.Context, chargeID string, in Intent, fence int) error
	// Get is the charge's balance (a zero Balance for a charge never
	// refunded) and Entry one intent's entry: ok false when it holds none
	// and ReleasedThrough does not pass its claim (an intent whose first
	// attempt succeeded holds none either: its row says so).
	Get(ctx context.Context, chargeID string) (Balance, error)
	Entry(ctx context.Context, chargeID string, in Intent) (e Entry, ok bool, err error)
}

// ErrLimitReached: the charge already holds MaxEntries refunds in flight.
var ErrLimitReached = errors.New("refund: the charge has the most refunds allowed")

// ErrReleased: the intent holds no entry and was claimed at or before the
// balance's ReleasedThrough: it may be folded, and no attempt of it may
// reserve. Nothing was reserved for it, so nothing was sent.
var ErrReleased = errors.New("refund: the intent is released on the balance")

// ErrStampPassed: the intent holds no entry and was claimed after
// ReleasedThrough, but the reservation was issued at or before the
// balance's FoldedAt. That write, and every other issued as early, may
// never reserve. To the first attempt that gets it as its call's answer,
// it means another intent ended while the write was on its way, and a
// write issued now may reserve: its own intent is folded only by its own
// success (after this call), its own release, or a take-over, and the
// last two raise ReleasedThrough (a take-over's fold's floor is besides
// past every stamp the earlier lease can issue). A stray try of a write
// that lands after its intent's first attempt succeeded meets it too.
var ErrStampPassed = errors.New("refund: an action ended while the reservation was on its way")

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

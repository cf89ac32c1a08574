// Package capture is the capture and void domain's bound (docs/design.md
// §8): the capture side of a charge's one balance, the item refunds
// reserve from (package refund), so that captures together never exceed
// the authorization, a void and a capture at the same instant never both
// win the same money, and a closed authorization is never captured again.
// Each step is one conditional write that the store decides; nothing here
// reads a balance to decide a write. Entries, fences, the watermarks and
// the limit of refund.MaxEntries intents in flight are the balance's own,
// shared with refunds (refund.Intent, refund.Entry).
package capture

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/refund"
)

// Kind is what an intent on the capture side does.
type Kind string

// The kinds of intent.
const (
	// Partial captures part of what remains and leaves the rest
	// capturable ("final": false).
	Partial Kind = "capture"
	// Final captures and releases the rest of the authorization at the
	// acquirer, closing it.
	Final Kind = "final"
	// Void releases all that remains capturable, closing it.
	Void Kind = "void"
)

// Closed says how an authorization was closed: never again captured.
type Closed string

// The ways an authorization closes, each spelled as the status a charge's
// GET then gives it when nothing was captured (charge.FiguresOf).
const (
	// ClosedCaptured: by a final capture (something captured).
	ClosedCaptured Closed = acquirer.StatusCaptured
	// ClosedVoided: by a void.
	ClosedVoided Closed = charge.StatusVoided
	// ClosedExpired: by the sweeper, once its expiry passed.
	ClosedExpired Closed = charge.StatusExpired
)

// Balance is the capture side of a charge's balance: Capturable +
// Reserved + Captured + Released = Authorized, each at least 0. A charge
// whose balance has no capture side (captured at creation, or never
// touched) reads with all of them 0 (Authorized 0 says so).
type Balance struct {
	Authorized, Capturable, Reserved, Captured, Released int64
	// Closing is the intent (its downstream key) of the void or final
	// capture in flight, and ClosingKind its kind; "" when none is.
	Closing     string
	ClosingKind Kind
	// Closed is how the authorization closed; "" while it is open.
	Closed Closed
	// Held counts the intents in flight whose entries are marked held
	// for an operator (MarkHeld): they end only when the operator
	// settles them.
	Held int
	// Refunded is what the charge's refunds returned: the refund side's,
	// read with the rest, so a charge's GET reads its balance once.
	Refunded int64
}

// Reservation asks to reserve for one capture or void intent.
type Reservation struct {
	// ChargeID and Authorized name the charge and its authorization's
	// amount (its ledger row, which never changes): the first step on a
	// balance opens it with all of it capturable.
	ChargeID   string
	Authorized int64
	// Intent is the intent, Fence its record's attempt, Kind what it does.
	Intent refund.Intent
	Fence  int
	Kind   Kind
	// Stamp is when the write was issued (idem.Lease.Stamp): it reserves
	// only after the balance's FoldedAt, and every try carries it.
	Stamp time.Time
	// Amount is what to capture; 0 takes all that remains capturable,
	// resolved and stored by the same write (a void always does).
	Amount int64
}

// Balances keeps the capture side of the charges' balances, on the same
// item and under the same rules as refund.Balances: each method is one
// conditional write (or a short series that each decide on their own),
// an intent's ended entry is folded behind the watermarks, and a retried
// call finds its own write. Refence and Entry are the balance's own,
// whatever the operation.
type Balances interface {
	// Reserve reserves for the intent, if it holds no entry, is not
	// folded (ReleasedThrough, FoldedAt as refund.Balances.Reserve), fewer
	// than refund.MaxEntries entries are held, the authorization is open
	// (a *ClosedError, which says how it closed) and no void or final
	// capture is in flight (a *InFlightError of that kind): a Partial or
	// Final capture of Amount (or what remains) when that much remains (a
	// *NoRoomError); a Final capture or a Void only while no capture is in
	// flight either (a *InFlightError of kind Partial), and they then hold
	// the balance's Closing. A Void, and a capture without an Amount, take
	// all that remains: when nothing does, a *InFlightError of kind
	// Partial while captures in flight hold it (they may yet give it back:
	// declined, or nothing sent), ErrNothingCapturable once none does. It
	// returns the entry; refund.ErrReleased, refund.ErrStampPassed,
	// refund.ErrLimitReached and refund.ErrFenced as for a refund.
	Reserve(ctx context.Context, r Reservation) (refund.Entry, error)
	// Refence is refund.Balances.Refence: the entry is the balance's,
	// whatever the operation.
	Refence(ctx context.Context, chargeID string, in refund.Intent, fence int) (refund.Entry, error)
	// Succeed folds a reserved entry of this fence, of kind: a capture's
	// amount moves from Reserved to Captured (and becomes refundable);
	// a Final capture also releases what remains and closes the
	// authorization ClosedCaptured; a Void's amount moves to Released and
	// closes it ClosedVoided. An intent with no entry has ended: done (the
	// caller holds its row). refund.ErrFenced otherwise, ErrKindDiffers
	// when kind is not the reservation's.
	Succeed(ctx context.Context, chargeID string, in refund.Intent, fence int, kind Kind) error
	// Release gives a reserved entry of this fence back to what is
	// capturable and folds it (a Final capture or a Void gives Closing
	// back too), or folds an intent that holds no entry. refund.ErrFenced
	// when the entry belongs to another attempt, ErrKindDiffers when kind
	// is not the reservation's.
	Release(ctx context.Context, chargeID string, in refund.Intent, fence int, kind Kind) error
	// MarkHeld marks the reserved entry of this fence held for an
	// operator (held true), before its record is held (the order of a
	// charge's held marker), so that an intent refused behind it knows
	// that no lease's end will free it (InFlightError.Held,
	// Balance.Held); held false takes the mark back, when the record's
	// hold was not written. The mark moves no money and no condition of
	// another step reads it; the entry's fold removes it. An intent that
	// holds no entry has ended: nil. refund.ErrFenced when the entry
	// belongs to another attempt.
	MarkHeld(ctx context.Context, chargeID string, in refund.Intent, fence int, held bool) error
	// Expire closes an open authorization of authorized whose expiry has
	// passed (the caller read it from the charge's row): what remains
	// capturable is released, ClosedExpired. It never closes one with a
	// capture or a void in flight (a *InFlightError: try again later).
	// An authorization already closed, however, is left as it is: nil.
	// It reports how the authorization is closed (by: ClosedExpired when
	// this call closed it, else the closing it found, read from the
	// refused write's own item) and whether this call closed it (now).
	Expire(ctx context.Context, chargeID string, authorized int64) (by Closed, now bool, err error)
	// Get is the charge's capture side (a zero Balance for none).
	Get(ctx context.Context, chargeID string) (Balance, error)
	// Entry is refund.Balances.Entry: one intent's entry, whatever the
	// operation.
	Entry(ctx context.Context, chargeID string, in refund.Intent) (e refund.Entry, ok bool, err error)
}

// Errors of a reservation.
var (
	// ErrClosed: the authorization is closed (voided, finally captured or
	// expired): nothing is ever captured again. A reservation's refusal is
	// a *ClosedError, which is ErrClosed.
	ErrClosed = errors.New("capture: the authorization is closed")
	// ErrNothingCapturable: nothing remains capturable, and nothing is
	// reserved either: all of it is captured.
	ErrNothingCapturable = errors.New("capture: nothing remains capturable")
	// ErrKindDiffers: a success or a release named another kind than the
	// intent's reservation holds (a closing intent's kind is the
	// balance's Closing and ClosingKind): nothing is moved. A wiring
	// mistake, never a race.
	ErrKindDiffers = errors.New("capture: the step's kind differs from the reservation's")
)

// ClosedError: the authorization is closed, and Closed says how, as the
// refused write found the balance. It is ErrClosed.
type ClosedError struct{ Closed Closed }

func (e *ClosedError) Error() string {
	return fmt.Sprintf("capture: the authorization is closed (%s)", e.Closed)
}

// Is makes it ErrClosed.
func (e *ClosedError) Is(target error) bool { return target == ErrClosed }

// InFlightError: another intent of the charge in flight stops this one
// (answered 409 with Retry-After; nothing is reserved or sent, and the
// retry decides again). Kind is what is in flight: Partial, a capture
// that a void or a final capture must wait for; Final or Void, the
// closing intent every other capture and void waits for. Held is set
// when an intent that stops this one is marked held for an operator
// (Balances.MarkHeld): only the operator's settlement frees it.
type InFlightError struct {
	Kind Kind
	Held bool
}

func (e *InFlightError) Error() string {
	if e.Held {
		return fmt.Sprintf("capture: a %s of the charge is held for an operator", e.Kind)
	}
	return fmt.Sprintf("capture: a %s of the charge is in flight", e.Kind)
}

// NoRoomError: the amount exceeds what remains capturable.
type NoRoomError struct {
	// Capturable is what remained when the reservation was refused.
	Capturable int64
}

func (e *NoRoomError) Error() string {
	return fmt.Sprintf("capture: only %d remains capturable", e.Capturable)
}

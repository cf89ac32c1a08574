// Package outbox turns the table's changes into outcome events. The table
// is the outbox: every event comes from a change that is already durable
// (a ledger row inserted, a record held, a held record released), never
// from what a function meant to do, so a crash anywhere leaves the event to
// be published from the change. A change is published at least once; the
// events' ids make a redelivery the same event (package event).
package outbox

import (
	"cmp"
	"errors"
	"fmt"
	"time"

	"github.com/idempotent-payments/idempay/internal/event"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/operations"
)

// Change is one item's change, decoded by the table's adapter: the record
// before and after it (nil when absent or not a record), or the ledger row
// it inserted. It carries nothing of the stream's own (its time, its
// sequence): each region's replica stamps those its own way, and an event
// published by every region must read the same from each.
type Change struct {
	OldRecord, NewRecord *idem.Record
	// Inserted is the ledger row the change wrote, of any operation (rows
	// are written once: an insert is the only change that says what a row
	// is).
	Inserted Row
	// Expired is an authorization's ledger row the change marked expired
	// (operations.ExpiredRow): the sweeper closed its balance at its
	// expiry.
	Expired Row
}

// Row is an operation's ledger row (operations.ChargeRow,
// operations.RefundRow): its id, the region that wrote it ("" in one
// region), and the one event its insert makes.
type Row interface {
	RowID() string
	RowRegion() string
	RowEvent() (event.Event, error)
}

// ErrUnreadable: a change's stored data cannot make its event (a row whose
// status is no outcome, a refund record whose request does not decode).
// Retrying cannot help: the publisher skips such a change, as it skips a
// stream record that does not decode, and says so.
var ErrUnreadable = errors.New("the change's data makes no event")

// Events are the events a change makes, none for most:
//   - a ledger row inserted: captured, authorized or declined; an action's
//     row inserted: its succeeded or declined;
//   - an authorization's row marked expired: expired, in every region
//     (the row's own terms: the same body everywhere);
//   - a record that becomes held: held, with the hold's reason and time,
//     once (a held record touched again for another reason stays held and
//     makes none): made by the record's operation (operations.ByName);
//   - a held record deleted: released (an operator's void-confirmed is the
//     only step that deletes a held record), at the time of the void's
//     settling take-over, which the deleted record carries (Hold.Settling),
//     so every region publishes the same body under the release's id.
//     A record deleted without one (voided before voids recorded their
//     decision) is released at its hold's time, the same in every region
//     too.
//
// A held record an operator accepts makes no event of its own: its
// ledger row's insert says captured or declined. A record of any other
// operation makes none.
func Events(c Change) ([]event.Event, error) {
	if row := cmp.Or(c.Inserted, c.Expired); row != nil {
		e, err := row.RowEvent()
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnreadable, err)
		}
		return []event.Event{e}, nil
	}
	rec := cmp.Or(c.NewRecord, c.OldRecord)
	if rec == nil {
		return nil, nil
	}
	reg, ok := operations.ByName(rec.Operation)
	if !ok {
		return nil, nil
	}
	var e event.Event
	var err error
	switch {
	case c.NewRecord != nil && c.NewRecord.Held() && (c.OldRecord == nil || !c.OldRecord.Held()):
		e, err = reg.Held(c.NewRecord, c.NewRecord.Hold.At)
	case c.NewRecord == nil && c.OldRecord != nil && c.OldRecord.Held():
		e, err = reg.Released(c.OldRecord, releasedAt(c.OldRecord.Hold))
	default:
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnreadable, err)
	}
	return []event.Event{e}, nil
}

// releasedAt is when the held record of h was released: its void's
// settling take-over, or, for a record that carries none, its hold's time.
func releasedAt(h *idem.Hold) time.Time {
	if h.Settling != nil {
		return h.Settling.At
	}
	return h.At
}

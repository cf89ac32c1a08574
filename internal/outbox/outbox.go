// Package outbox turns the table's changes into outcome events. The table
// is the outbox: every event comes from a change that is already durable
// (a ledger row inserted, a record held, a held record released), never
// from what a function meant to do, so a crash anywhere leaves the event to
// be published from the change. A change is published at least once; the
// events' ids make a redelivery the same event (package event).
package outbox

import (
	"time"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/event"
	"github.com/idempotent-payments/idempay/internal/idem"
)

// Change is one item's change, decoded by the table's adapter: the record
// before and after it (nil when absent or not a record), or the ledger row
// it inserted.
type Change struct {
	OldRecord, NewRecord *idem.Record
	// InsertedRow is the ledger row the change wrote (rows are written
	// once: an insert is the only change a row has).
	InsertedRow *charge.Charge
	// At is when the change was made (the stream's time): a release's
	// time, since a deleted record keeps none.
	At time.Time
}

// Events are the events a change makes, none for most:
//   - a ledger row inserted: captured or declined;
//   - a record that becomes held: held, with the hold's reason and time,
//     once (a held record touched again for another reason stays held and
//     makes none);
//   - a held record deleted: released (an operator's void-confirmed is the
//     only step that deletes a held record).
//
// A held record an operator accepts makes no event of its own: its
// ledger row's insert says captured or declined.
func Events(c Change) ([]event.Event, error) {
	switch {
	case c.InsertedRow != nil:
		e, err := RowEvent(*c.InsertedRow)
		if err != nil {
			return nil, err
		}
		return []event.Event{e}, nil
	case c.NewRecord != nil && c.NewRecord.Held() && (c.OldRecord == nil || !c.OldRecord.Held()):
		return []event.Event{event.OfHold(holdOf(c.NewRecord, c.NewRecord.Hold.At))}, nil
	case c.NewRecord == nil && c.OldRecord != nil && c.OldRecord.Held():
		return []event.Event{event.OfRelease(holdOf(c.OldRecord, c.At))}, nil
	}
	return nil, nil
}

// RowEvent is the event of the ledger row c: Captured or Declined.
func RowEvent(c charge.Charge) (event.Event, error) {
	return event.OfRow(event.Row{
		Charge: event.Charge{
			ID: c.ID, Status: c.Status, Amount: c.Amount, Currency: c.Currency, AuthorizationID: c.AuthorizationID, DeclineCode: c.DeclineCode,
		},
		Account: c.Account, IdempotencyKey: c.IdempotencyKey, Source: c.Source, CreatedAt: c.CreatedAt,
	})
}

func holdOf(rec *idem.Record, at time.Time) event.Hold {
	return event.Hold{
		ChargeID: charge.ChargeID(rec.DownstreamKey), Account: rec.Account, IdempotencyKey: rec.Key,
		Source: rec.Source, Reason: rec.Hold.Reason, At: at,
	}
}

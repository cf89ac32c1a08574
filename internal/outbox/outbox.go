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

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/event"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/refund"
)

// Change is one item's change, decoded by the table's adapter: the record
// before and after it (nil when absent or not a record), or the ledger row
// it inserted. It carries nothing of the stream's own (its time, its
// sequence): each region's replica stamps those its own way, and an event
// published by every region must read the same from each.
type Change struct {
	OldRecord, NewRecord *idem.Record
	// InsertedRow is the ledger row the change wrote (rows are written
	// once: an insert is the only change a row has).
	InsertedRow *charge.Charge
	// InsertedRefund is the refund row the change wrote, likewise.
	InsertedRefund *refund.Refund
}

// ErrUnreadable: a change's stored data cannot make its event (a row whose
// status is no outcome, a refund record whose request does not decode).
// Retrying cannot help: the publisher skips such a change, as it skips a
// stream record that does not decode, and says so.
var ErrUnreadable = errors.New("the change's data makes no event")

// Events are the events a change makes, none for most:
//   - a ledger row inserted: captured or declined; a refund row inserted:
//     refund succeeded or declined;
//   - a record that becomes held: held, with the hold's reason and time,
//     once (a held record touched again for another reason stays held and
//     makes none): a charge's or a refund's, by the record's operation;
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
	if c.InsertedRefund != nil {
		e, err := RefundEvent(*c.InsertedRefund)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnreadable, err)
		}
		return []event.Event{e}, nil
	}
	rec := cmp.Or(c.NewRecord, c.OldRecord)
	if rec != nil && rec.Operation == refund.Operation {
		return refundRecordEvents(c)
	}
	if rec != nil && rec.Operation != charge.Operation {
		return nil, nil
	}
	switch {
	case c.InsertedRow != nil:
		e, err := RowEvent(*c.InsertedRow)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnreadable, err)
		}
		return []event.Event{e}, nil
	case c.NewRecord != nil && c.NewRecord.Held() && (c.OldRecord == nil || !c.OldRecord.Held()):
		return []event.Event{event.OfHold(holdOf(c.NewRecord, c.NewRecord.Hold.At))}, nil
	case c.NewRecord == nil && c.OldRecord != nil && c.OldRecord.Held():
		return []event.Event{event.OfRelease(holdOf(c.OldRecord, releasedAt(c.OldRecord.Hold)))}, nil
	}
	return nil, nil
}

// refundRecordEvents are the events of a refund's record, by the rules
// for a charge's: held once, released when a held one is deleted.
func refundRecordEvents(c Change) ([]event.Event, error) {
	var (
		of  func(event.RefundHold) event.Event
		rec *idem.Record
		at  time.Time
	)
	switch {
	case c.NewRecord != nil && c.NewRecord.Held() && (c.OldRecord == nil || !c.OldRecord.Held()):
		of, rec, at = event.OfRefundHold, c.NewRecord, c.NewRecord.Hold.At
	case c.NewRecord == nil && c.OldRecord != nil && c.OldRecord.Held():
		of, rec, at = event.OfRefundRelease, c.OldRecord, releasedAt(c.OldRecord.Hold)
	default:
		return nil, nil
	}
	h, err := refundHoldOf(rec, at)
	if err != nil {
		return nil, err
	}
	return []event.Event{of(h)}, nil
}

// refundHoldOf is what a refund record's events say of it: the charge
// comes from its stored request.
func refundHoldOf(rec *idem.Record, at time.Time) (event.RefundHold, error) {
	canonical, err := idem.DecodeCanonical(rec.Request)
	var req refund.Request
	if err == nil {
		req, err = refund.RequestFromCanonical(canonical)
	}
	if err != nil {
		return event.RefundHold{}, fmt.Errorf("%w: refund record %s: its request: %w", ErrUnreadable, idem.Ref(rec.PK), err)
	}
	return event.RefundHold{
		RefundID: refund.ID(rec.DownstreamKey), ChargeID: req.ChargeID, Account: rec.Account, IdempotencyKey: rec.Key,
		Source: rec.Source, Reason: rec.Hold.Reason, At: at,
	}, nil
}

// RefundEvent is the event of the refund row r: succeeded or declined.
func RefundEvent(r refund.Refund) (event.Event, error) {
	return event.OfRefundRow(event.RefundRow{
		Refund:  event.Refund{ID: r.ID, ChargeID: r.ChargeID, Status: r.Status, Amount: r.Amount, Currency: r.Currency, DeclineCode: r.DeclineCode},
		Account: r.Account, IdempotencyKey: r.IdempotencyKey, Source: r.Source, CreatedAt: r.CreatedAt,
	})
}

// releasedAt is when the held record of h was released: its void's
// settling take-over, or, for a record that carries none, its hold's time.
func releasedAt(h *idem.Hold) time.Time {
	if h.Settling != nil {
		return h.Settling.At
	}
	return h.At
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
		ChargeID: charge.ID(rec.DownstreamKey), Account: rec.Account, IdempotencyKey: rec.Key,
		Source: rec.Source, Reason: rec.Hold.Reason, At: at,
	}
}

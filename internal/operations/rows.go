package operations

import (
	"fmt"
	"time"

	"github.com/idempotent-payments/idempay/internal/capture"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/event"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/refund"
)

// ChargeRow is a charge's ledger row as the outbox sees it (outbox.Row):
// its insert makes captured, authorized or declined.
type ChargeRow struct{ charge.Charge }

// RowID is the row's id.
func (r ChargeRow) RowID() string { return r.ID }

// RowRegion is the region that wrote the row ("" in one region).
func (r ChargeRow) RowRegion() string { return r.Region }

// RowEvent is the row's event: Captured, Authorized or Declined.
func (r ChargeRow) RowEvent() (event.Event, error) { return event.OfRow(r.eventRow()) }

// eventRow is what the row's events say of it.
func (r ChargeRow) eventRow() event.Row {
	c := r.Charge
	ec := event.Charge{
		ID: c.ID, Status: c.Status, Amount: c.Amount, Currency: c.Currency, AuthorizationID: c.AuthorizationID, DeclineCode: c.DeclineCode,
	}
	if !c.AuthorizationExpiresAt.IsZero() {
		expires := c.AuthorizationExpiresAt.UTC()
		ec.AuthorizationExpiresAt = &expires
	}
	return event.Row{Charge: ec, Account: c.Account, IdempotencyKey: c.IdempotencyKey, Source: c.Source, CreatedAt: c.CreatedAt}
}

// ExpiredRow is an authorization's ledger row as its expiry marked it
// (charge.Charge.Expired, outbox.Change.Expired): it makes the charge's
// expired event, under the row's id, in every region alike.
type ExpiredRow struct{ charge.Charge }

// RowID is the row's id.
func (r ExpiredRow) RowID() string { return r.ID }

// RowRegion is the region that wrote the row ("" in one region).
func (r ExpiredRow) RowRegion() string { return r.Region }

// RowEvent is event.Expired of the row, from what its insert's event says
// of it.
func (r ExpiredRow) RowEvent() (event.Event, error) { return event.OfExpiry(ChargeRow(r).eventRow()) }

// ActionRow is a capture's or a void's row as the outbox sees it
// (outbox.Row): its insert makes the succeeded or the declined event of
// its kind.
type ActionRow struct{ capture.Row }

// RowID is the row's id.
func (r ActionRow) RowID() string { return r.ID }

// RowRegion is the region that wrote the row ("" in one region).
func (r ActionRow) RowRegion() string { return r.Region }

// RowEvent is the row's event: Succeeded or Declined of event.Captures,
// or of event.Voids.
func (r ActionRow) RowEvent() (event.Event, error) {
	a, kind := r.Row, event.Captures
	if a.Kind == capture.Void {
		kind = event.Voids
	}
	return kind.OfRow(event.ActionRow{
		Action: event.Action{ID: a.ID, ChargeID: a.ChargeID, Status: a.Status, Amount: a.Amount, Currency: a.Currency,
			DeclineCode: a.DeclineCode, Final: a.Final() && a.Succeeded()},
		Account: a.Account, IdempotencyKey: a.IdempotencyKey, Source: a.Source, CreatedAt: a.CreatedAt,
	})
}

// RefundRow is a refund's row as the outbox sees it (outbox.Row): its
// insert makes refund succeeded or declined.
type RefundRow struct{ refund.Refund }

// RowID is the row's id.
func (r RefundRow) RowID() string { return r.ID }

// RowRegion is the region that wrote the row ("" in one region).
func (r RefundRow) RowRegion() string { return r.Region }

// RowEvent is the row's event: RefundSucceeded or RefundDeclined.
func (r RefundRow) RowEvent() (event.Event, error) {
	f := r.Refund
	return event.Refunds.OfRow(event.ActionRow{
		Action:  event.Action{ID: f.ID, ChargeID: f.ChargeID, Status: f.Status, Amount: f.Amount, Currency: f.Currency, DeclineCode: f.DeclineCode},
		Account: f.Account, IdempotencyKey: f.IdempotencyKey, Source: f.Source, CreatedAt: f.CreatedAt,
	})
}

func chargeHeld(rec *idem.Record, at time.Time) (event.Event, error) {
	return event.OfHold(chargeHold(rec, at)), nil
}

func chargeReleased(rec *idem.Record, at time.Time) (event.Event, error) {
	return event.OfRelease(chargeHold(rec, at)), nil
}

func chargeHold(rec *idem.Record, at time.Time) event.Hold {
	return event.Hold{
		ChargeID: charge.ID(rec.DownstreamKey), Account: rec.Account, IdempotencyKey: rec.Key,
		Source: rec.Source, Reason: rec.Hold.Reason, At: at,
	}
}

func refundHeld(rec *idem.Record, at time.Time) (event.Event, error) {
	return actionHold(rec, at, refund.ID, chargeOfRefund, event.Refunds.OfHold)
}

func refundReleased(rec *idem.Record, at time.Time) (event.Event, error) {
	return actionHold(rec, at, refund.ID, chargeOfRefund, event.Refunds.OfRelease)
}

// captureHold and voidHold are the held or released events (of) of a
// capture's or a void's record.
func captureHold(of func(event.ActionHold) event.Event) func(*idem.Record, time.Time) (event.Event, error) {
	return func(rec *idem.Record, at time.Time) (event.Event, error) {
		return actionHold(rec, at, capture.CaptureID, chargeOfCapture, of)
	}
}

func voidHold(of func(event.ActionHold) event.Event) func(*idem.Record, time.Time) (event.Event, error) {
	return func(rec *idem.Record, at time.Time) (event.Event, error) {
		return actionHold(rec, at, capture.VoidID, chargeOfVoid, of)
	}
}

// actionHold is event of of an action's record rec at at: the action's id
// derives from its downstream key (id), its charge from its stored
// request (chargeOf).
func actionHold(rec *idem.Record, at time.Time, id func(string) string, chargeOf func(idem.Canonical) (string, error),
	of func(event.ActionHold) event.Event) (event.Event, error) {
	canonical, err := idem.DecodeCanonical(rec.Request)
	var chargeID string
	if err == nil {
		chargeID, err = chargeOf(canonical)
	}
	if err != nil {
		return event.Event{}, fmt.Errorf("%s record %s: its request: %w", rec.Operation, idem.Ref(rec.PK), err)
	}
	return of(event.ActionHold{
		ActionID: id(rec.DownstreamKey), ChargeID: chargeID, Account: rec.Account, IdempotencyKey: rec.Key,
		Source: rec.Source, Reason: rec.Hold.Reason, At: at,
	}), nil
}

func chargeOfRefund(c idem.Canonical) (string, error) {
	r, err := refund.RequestFromCanonical(c)
	return r.ChargeID, err
}

func chargeOfCapture(c idem.Canonical) (string, error) {
	r, err := capture.RequestFromCanonical(c)
	return r.ChargeID, err
}

func chargeOfVoid(c idem.Canonical) (string, error) {
	r, err := capture.VoidRequestFromCanonical(c)
	return r.ChargeID, err
}

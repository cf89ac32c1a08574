package operations

import (
	"fmt"
	"time"

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
func (r ChargeRow) RowEvent() (event.Event, error) {
	c := r.Charge
	ec := event.Charge{
		ID: c.ID, Status: c.Status, Amount: c.Amount, Currency: c.Currency, AuthorizationID: c.AuthorizationID, DeclineCode: c.DeclineCode,
	}
	if !c.AuthorizationExpiresAt.IsZero() {
		expires := c.AuthorizationExpiresAt.UTC()
		ec.AuthorizationExpiresAt = &expires
	}
	return event.OfRow(event.Row{
		Charge:  ec,
		Account: c.Account, IdempotencyKey: c.IdempotencyKey, Source: c.Source, CreatedAt: c.CreatedAt,
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
	return event.OfRefundRow(event.RefundRow{
		Refund:  event.Refund{ID: f.ID, ChargeID: f.ChargeID, Status: f.Status, Amount: f.Amount, Currency: f.Currency, DeclineCode: f.DeclineCode},
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
	h, err := refundHold(rec, at)
	if err != nil {
		return event.Event{}, err
	}
	return event.OfRefundHold(h), nil
}

func refundReleased(rec *idem.Record, at time.Time) (event.Event, error) {
	h, err := refundHold(rec, at)
	if err != nil {
		return event.Event{}, err
	}
	return event.OfRefundRelease(h), nil
}

// refundHold is what a refund record's events say of it: its charge
// comes from its stored request.
func refundHold(rec *idem.Record, at time.Time) (event.RefundHold, error) {
	canonical, err := idem.DecodeCanonical(rec.Request)
	var req refund.Request
	if err == nil {
		req, err = refund.RequestFromCanonical(canonical)
	}
	if err != nil {
		return event.RefundHold{}, fmt.Errorf("refund record %s: its request: %w", idem.Ref(rec.PK), err)
	}
	return event.RefundHold{
		RefundID: refund.ID(rec.DownstreamKey), ChargeID: req.ChargeID, Account: rec.Account, IdempotencyKey: rec.Key,
		Source: rec.Source, Reason: rec.Hold.Reason, At: at,
	}, nil
}

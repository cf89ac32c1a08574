package outbox_test

import (
	"errors"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/event"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/operations"
	"github.com/idempotent-payments/idempay/internal/outbox"
	"github.com/idempotent-payments/idempay/internal/refund"
)

// TestEvents: the changes that make an event, and those that do not.
func TestEvents(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	key := "0123456789abcdef0123456789abcdef01234567"
	record := func(status idem.Status, held bool) *idem.Record {
		r := &idem.Record{PK: "IDEM#x", Operation: charge.Operation, Account: "acct_1", Key: "order-1-try-1", Source: event.SourceQueue("orders"), Status: status, DownstreamKey: key}
		if held {
			r.Hold = &idem.Hold{Reason: "amount_differs", At: at}
		}
		return r
	}
	row := &charge.Charge{Origin: op.Origin{ID: charge.ID(key), Account: "acct_1", Source: event.SourceHTTP,
		CreatedAt: at}, Status: "captured", Amount: 100, Currency: "BRL", AuthorizationID: "auth_1"}
	for _, c := range []struct {
		name   string
		change outbox.Change
		want   []event.Type
	}{
		{"a ledger row", outbox.Change{Inserted: operations.ChargeRow{Charge: *row}}, []event.Type{event.Captured}},
		{"a claim", outbox.Change{NewRecord: record(idem.StatusInProgress, false)}, nil},
		{"a hold", outbox.Change{OldRecord: record(idem.StatusInProgress, false), NewRecord: record(idem.StatusInProgress, true)}, []event.Type{event.Held}},
		{"a held record touched again", outbox.Change{OldRecord: record(idem.StatusInProgress, true), NewRecord: record(idem.StatusInProgress, true)}, nil},
		{"a held record released", outbox.Change{OldRecord: record(idem.StatusInProgress, true)}, []event.Type{event.Released}},
		{"a held record accepted", outbox.Change{OldRecord: record(idem.StatusInProgress, true), NewRecord: record(idem.StatusCompleted, true)}, nil},
		{"a completion", outbox.Change{OldRecord: record(idem.StatusInProgress, false), NewRecord: record(idem.StatusCompleted, false)}, nil},
		{"a release of a record never held", outbox.Change{OldRecord: record(idem.StatusInProgress, false)}, nil},
	} {
		got, err := outbox.Events(c.change)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(got) != len(c.want) {
			t.Fatalf("%s: %d events, want %v", c.name, len(got), c.want)
		}
		for i, e := range got {
			if e.Type != c.want[i] || e.Charge == nil || e.Charge.ID != charge.ID(key) {
				t.Fatalf("%s: %+v, want %s of the record's charge", c.name, e, c.want[i])
			}
		}
	}
	// A refund's record: held, then released, as a charge's, with the
	// charge its request names; other operations make none.
	refundRecord := func(held bool) *idem.Record {
		r := record(idem.StatusInProgress, held)
		r.Operation, r.Request = refund.Operation, refund.Request{ChargeID: charge.ID(key), Amount: 300}.Canonical().Encode()
		return r
	}
	for name, c := range map[string]struct {
		change outbox.Change
		want   event.Type
	}{
		"a refund's hold":             {outbox.Change{OldRecord: refundRecord(false), NewRecord: refundRecord(true)}, event.RefundHeld},
		"a refund's held record gone": {outbox.Change{OldRecord: refundRecord(true)}, event.RefundReleased},
	} {
		got, err := outbox.Events(c.change)
		if err != nil || len(got) != 1 || got[0].Type != c.want || got[0].Refund == nil || got[0].Refund.ID != refund.ID(key) ||
			got[0].Refund.ChargeID != charge.ID(key) || got[0].Charge != nil {
			t.Fatalf("%s: %+v, %v", name, got, err)
		}
	}
	for name, c := range map[string]outbox.Change{
		"a refund's claim":      {NewRecord: refundRecord(false)},
		"a refund's completion": {OldRecord: refundRecord(false), NewRecord: func() *idem.Record { r := refundRecord(false); r.Status = idem.StatusCompleted; return r }()},
		"another operation's hold": {OldRecord: record(idem.StatusInProgress, false), NewRecord: func() *idem.Record {
			r := record(idem.StatusInProgress, true)
			r.Operation = "payout"
			return r
		}()},
	} {
		if got, err := outbox.Events(c); err != nil || len(got) != 0 {
			t.Fatalf("%s: %v, %v; want none", name, got, err)
		}
	}
	unreadable := refundRecord(true)
	unreadable.Request = []byte("not a request")
	if got, err := outbox.Events(outbox.Change{OldRecord: refundRecord(false), NewRecord: unreadable}); !errors.Is(err, outbox.ErrUnreadable) || got != nil {
		t.Fatalf("a held refund whose request does not decode: %v, %v; want an error and no event", got, err)
	}
	refundRow := refund.Refund{
		Origin: op.Origin{ID: refund.ID(key), Account: "acct_1", IdempotencyKey: "refund-1",
			Source: event.SourceHTTP, CreatedAt: at},
		ChargeID: charge.ID(key), Status: "declined", DeclineCode: "insufficient_funds", Amount: 300, Currency: "BRL",
	}
	if got, err := outbox.Events(outbox.Change{Inserted: operations.RefundRow{Refund: refundRow}}); err != nil || len(got) != 1 || got[0].Type != event.RefundDeclined ||
		got[0].Refund.Amount != 300 || got[0].Refund.DeclineCode != "insufficient_funds" || !got[0].CreatedAt.Equal(at) {
		t.Fatalf("a refund row: %+v, %v", got, err)
	}
	held, _ := outbox.Events(outbox.Change{OldRecord: record(idem.StatusInProgress, false), NewRecord: record(idem.StatusInProgress, true)})
	if e := held[0]; e.Producer != "orders" || e.Reason != "amount_differs" || e.IdempotencyKey != "order-1-try-1" || !e.CreatedAt.Equal(at) {
		t.Fatalf("held event %+v", e)
	}
	voided := record(idem.StatusInProgress, true)
	voided.Hold.Settling = &idem.Settlement{Action: idem.SettleVoidConfirmed, By: "ops:ana", Decision: "dec-outbox-1", At: at.Add(time.Hour)}
	released, _ := outbox.Events(outbox.Change{OldRecord: voided})
	if e := released[0]; e.Type != event.Released || !e.CreatedAt.Equal(at.Add(time.Hour)) {
		t.Fatalf("released event %+v, want the void's settling time", e)
	}
}

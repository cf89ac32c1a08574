package outbox_test

import (
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/event"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/outbox"
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
	row := &charge.Charge{ID: charge.ID(key), Account: "acct_1", Source: event.SourceHTTP, Status: "captured", Amount: 100, Currency: "BRL", AuthorizationID: "auth_1", CreatedAt: at}
	for _, c := range []struct {
		name   string
		change outbox.Change
		want   []event.Type
	}{
		{"a ledger row", outbox.Change{InsertedRow: row}, []event.Type{event.Captured}},
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
	refundHeld, refundReleased := record(idem.StatusInProgress, true), record(idem.StatusInProgress, true)
	refundHeld.Operation, refundReleased.Operation = "refund", "refund"
	for name, c := range map[string]outbox.Change{
		"a refund's hold":             {OldRecord: record(idem.StatusInProgress, false), NewRecord: refundHeld},
		"a refund's held record gone": {OldRecord: refundReleased},
	} {
		if got, err := outbox.Events(c); err != nil || len(got) != 0 {
			t.Fatalf("%s: %v, %v; want no charge event", name, got, err)
		}
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

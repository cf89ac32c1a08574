package systemtest_test

import (
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/idempotent-payments/idempay/internal/command"
	"github.com/idempotent-payments/idempay/internal/event"
	"github.com/idempotent-payments/idempay/internal/event/eventtest"
	"github.com/idempotent-payments/idempay/internal/localapi"
	"github.com/idempotent-payments/idempay/internal/route"
)

// told sends the command c on the producer's queue and returns the one
// event its producer then receives, which must be of type want.
func told(t *testing.T, s *localapi.Stack, schema *jsonschema.Schema, c command.Command, want event.Type) event.Event {
	t.Helper()
	body, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	send(t, s, body)
	got := receiveEvents(t, s, schema, testProducer.Name, 1, 30*time.Second)
	if len(got) != 1 || got[0].Type != want || got[0].IdempotencyKey != c.IdempotencyKey {
		t.Fatalf("the %s command %s told %+v; want %s", c.Type, c.IdempotencyKey, got, want)
	}
	return got[0]
}

// TestAuthorizeCaptureRefundVoidOverTheQueue: the README's walk-through,
// over the producer's queue: an authorization, a partial capture, a
// refund of part of it, an HTTP retry of the capture's key (one capture);
// then another authorization, voided; and a capture after the void,
// refused and told. Each command's event says what docs/api.md says.
func TestAuthorizeCaptureRefundVoidOverTheQueue(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	schema := eventtest.Schema(t)
	const acct = "acct_q"
	authorize := func(key string) string {
		e := told(t, s, schema, command.Charge(acct, key, []byte(`{"amount": 1000, "currency": "BRL", "order_id": "w-1", "payment_method": "pm_card_visa", "capture": false}`)), event.Authorized)
		return e.Charge.ID
	}
	ch := authorize("walk-authorize-1")
	captured := told(t, s, schema, command.Capture(acct, ch, "walk-capture-1", []byte(`{"amount": 600, "final": false}`)), event.CaptureSucceeded)
	if captured.Capture.Amount != 600 || captured.Capture.ChargeID != ch || captured.Capture.Final || captured.Source != event.SourceQueue(testProducer.Name) {
		t.Fatalf("the capture's event %+v", captured.Capture)
	}
	if e := told(t, s, schema, command.Refund(acct, ch, "walk-refund-1", []byte(`{"amount": 200}`)), event.RefundSucceeded); e.Refund.Amount != 200 {
		t.Fatalf("the refund's event %+v", e.Refund)
	}
	retry := postAction(t, s, route.Capture, acct, "walk-capture-1", ch, `{"amount": 600, "final": false}`)
	if retry.status != 201 || retry.header.Get("Location") != route.CaptureLocation(captured.Capture.ID) {
		t.Fatalf("the HTTP retry of the queued capture: %d %s", retry.status, retry.body)
	}
	if f := figuresOf(t, s, acct, ch); f.Status != "authorized" || f.Captured != 600 || f.Capturable != 400 || f.Refunded != 200 {
		t.Fatalf("the charge after its capture and refund: %+v", f)
	}

	other := authorize("walk-authorize-2")
	voided := told(t, s, schema, command.Void(acct, other, "walk-void-1", []byte(`{"reason": "abandoned"}`)), event.VoidSucceeded)
	if voided.Void.Amount != 1000 || voided.Void.ChargeID != other {
		t.Fatalf("the void's event %+v", voided.Void)
	}
	refused := told(t, s, schema, command.Capture(acct, other, "walk-capture-2", []byte(`{}`)), event.CaptureRejected)
	if refused.Reason != "CHARGE_NOT_CAPTURABLE" || refused.Capture == nil || refused.Capture.ChargeID != other {
		t.Fatalf("a capture after the void told %+v", refused)
	}
	if f := figuresOf(t, s, acct, other); f.Status != "voided" || f.Captured != 0 || f.Capturable != 0 {
		t.Fatalf("the voided charge: %+v", f)
	}
	if n := len(s.Sandbox.Captures()); n != 1 {
		t.Fatalf("%d acquirer captures, want 1", n)
	}
}

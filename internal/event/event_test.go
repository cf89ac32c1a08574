package event_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/idempotent-payments/idempay/internal/event"
	"github.com/idempotent-payments/idempay/internal/event/eventtest"
)

func validate(t *testing.T, s *jsonschema.Schema, b []byte) error {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return s.Validate(v)
}

var at = time.Date(2026, 12, 1, 12, 0, 0, 123e6, time.UTC)

const chargeID = "ch_0123456789abcdef0123456789abcdef01234567"

func examples(t testing.TB) []event.Event {
	t.Helper()
	row := event.Row{Charge: event.Charge{ID: chargeID, Status: "captured", Amount: 25000, Currency: "BRL", AuthorizationID: "auth_1"},
		Account: "acct_1", IdempotencyKey: "order-1-try-1", Source: event.SourceQueue("orders"), CreatedAt: at}
	captured, err := event.OfRow(row)
	if err != nil {
		t.Fatal(err)
	}
	expires := at.Add(7 * 24 * time.Hour)
	authorizedRow := row
	authorizedRow.Charge.Status, authorizedRow.Charge.AuthorizationExpiresAt = "authorized", &expires
	authorized, err := event.OfRow(authorizedRow)
	if err != nil || authorized.Type != event.Authorized {
		t.Fatalf("%+v, %v", authorized, err)
	}
	// An expiry belongs to an authorization, and an authorization has one.
	authorizedRow.Charge.AuthorizationExpiresAt = nil
	if _, err := event.OfRow(authorizedRow); err == nil {
		t.Fatal("an authorization without its expiry made an event")
	}
	row.Charge.Status, row.Charge.DeclineCode, row.Source = "declined", "card_declined", event.SourceHTTP
	declined, err := event.OfRow(row)
	if err != nil {
		t.Fatal(err)
	}
	withExpiry := row
	withExpiry.Charge.AuthorizationExpiresAt = &expires
	if _, err := event.OfRow(withExpiry); err == nil {
		t.Fatal("a declined row with an expiry made an event")
	}
	h := event.Hold{ChargeID: chargeID, Account: "acct_1", IdempotencyKey: "order-1-try-1", Source: event.SourceQueue("orders"), Reason: "amount_differs", At: at}
	refundRow := event.ActionRow{Action: event.Action{ID: refundID, ChargeID: chargeID, Status: "succeeded", Amount: 300, Currency: "BRL"},
		Account: "acct_1", IdempotencyKey: "refund-1-try-1", Source: event.SourceHTTP, CreatedAt: at}
	succeeded, err := event.Refunds.OfRow(refundRow)
	if err != nil {
		t.Fatal(err)
	}
	refundRow.Action.Status, refundRow.Action.DeclineCode = "declined", "insufficient_funds"
	refundDeclined, err := event.Refunds.OfRow(refundRow)
	if err != nil {
		t.Fatal(err)
	}
	rh := event.ActionHold{ActionID: refundID, ChargeID: chargeID, Account: "acct_1", IdempotencyKey: "refund-1-try-1", Reason: "amount_differs", At: at}
	refundAndCharge := []event.Event{captured, authorized, declined, event.OfHold(h), event.OfRelease(h),
		event.OfRejection("059f36b4-87a3-44ab-83d2-661975830a7d", "orders", "acct_1", "", "PRODUCER_NOT_ALLOWED", at),
		succeeded, refundDeclined, event.Refunds.OfHold(rh), event.Refunds.OfRelease(rh),
		event.Refunds.OfRejection("059f36b4-87a3-44ab-83d2-661975830a7d", "orders", "acct_1", "refund-1-try-1", "VALIDATION_FAILED", at),
		event.Refunds.OfRefusal(event.Refusal{ActionID: refundID, ChargeID: chargeID, Account: "acct_1", IdempotencyKey: "refund-1-try-1",
			Source: event.SourceQueue("orders"), Code: "REFUND_EXCEEDS_CHARGE", At: at})}
	all := append(refundAndCharge, actionExamples(t, event.Captures, captureID, "CAPTURE_EXCEEDS_AUTHORIZATION")...)
	return append(all, actionExamples(t, event.Voids, voidID, "CHARGE_NOT_CAPTURABLE")...)
}

const (
	captureID = "cp_0123456789abcdef0123456789abcdef01234567"
	voidID    = "vd_0123456789abcdef0123456789abcdef01234567"
)

// actionExamples are the events of kind k about the action id: its row's
// two, its hold's two and its two rejections.
func actionExamples(t testing.TB, k event.Kind, id, refusal string) []event.Event {
	t.Helper()
	row := event.ActionRow{Action: event.Action{ID: id, ChargeID: chargeID, Status: "succeeded", Amount: 2500, Currency: "BRL", Final: k.Succeeded == event.CaptureSucceeded},
		Account: "acct_1", IdempotencyKey: "order-1-capture-1", Source: event.SourceQueue("orders"), CreatedAt: at}
	succeeded, err := k.OfRow(row)
	if err != nil {
		t.Fatal(err)
	}
	row.Action.Status, row.Action.DeclineCode, row.Action.Final = "declined", "authorization_expired", false
	declined, err := k.OfRow(row)
	if err != nil {
		t.Fatal(err)
	}
	h := event.ActionHold{ActionID: id, ChargeID: chargeID, Account: "acct_1", IdempotencyKey: "order-1-capture-1", Reason: "amount_differs", At: at}
	return []event.Event{succeeded, declined, k.OfHold(h), k.OfRelease(h),
		k.OfRejection("059f36b4-87a3-44ab-83d2-661975830a7d", "orders", "acct_1", "order-1-capture-1", "VALIDATION_FAILED", at),
		k.OfRefusal(event.Refusal{ActionID: id, ChargeID: chargeID, Account: "acct_1", IdempotencyKey: "order-1-capture-1",
			Source: event.SourceQueue("orders"), Code: refusal, At: at})}
}

const refundID = "re_89abcdef0123456789abcdef0123456789abcdef"

// TestEventsMatchTheirSchema: every type, as encoded, is valid against
// docs/events.schema.json, which refuses a member it does not name.
func TestEventsMatchTheirSchema(t *testing.T) {
	t.Parallel()
	s := eventtest.Schema(t)
	for _, e := range examples(t) {
		b, err := e.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if err := validate(t, s, b); err != nil {
			t.Errorf("%s: %s\n%v", e.Type, b, err)
		}
	}
	for name, bad := range map[string]string{
		"an unknown member":                  `{"id":"evt_0123456789abcdef0123456789abcdef","type":"charge.rejected","version":1,"producer":"orders","source":"queue:orders","account":"a","reason":"X","created_at":"2026-12-01T12:00:00Z","extra":1}`,
		"a captured event without terms":     `{"id":"evt_0123456789abcdef0123456789abcdef","type":"charge.captured","version":1,"producer":"http","source":"http","account":"a","charge":{"id":"` + chargeID + `","status":"captured"},"created_at":"2026-12-01T12:00:00Z"}`,
		"another version":                    `{"id":"evt_0123456789abcdef0123456789abcdef","type":"charge.rejected","version":2,"producer":"orders","source":"queue:orders","account":"a","reason":"X","created_at":"2026-12-01T12:00:00Z"}`,
		"a refund event without terms":       `{"id":"evt_0123456789abcdef0123456789abcdef","type":"refund.succeeded","version":1,"producer":"http","source":"http","account":"a","refund":{"id":"` + refundID + `","charge_id":"` + chargeID + `","status":"succeeded"},"created_at":"2026-12-01T12:00:00Z"}`,
		"a refund event with a charge":       `{"id":"evt_0123456789abcdef0123456789abcdef","type":"refund.held","version":1,"producer":"http","source":"http","account":"a","reason":"x","refund":{"id":"` + refundID + `","charge_id":"` + chargeID + `","status":"held"},"charge":{"id":"` + chargeID + `","status":"held"},"created_at":"2026-12-01T12:00:00Z"}`,
		"a rejected refund with a charge":    `{"id":"evt_0123456789abcdef0123456789abcdef","type":"refund.rejected","version":1,"producer":"orders","source":"queue:orders","account":"a","reason":"x","charge":{"id":"` + chargeID + `","status":"held"},"created_at":"2026-12-01T12:00:00Z"}`,
		"a rejected refund without a code":   `{"id":"evt_0123456789abcdef0123456789abcdef","type":"refund.rejected","version":1,"producer":"orders","source":"queue:orders","account":"a","created_at":"2026-12-01T12:00:00Z"}`,
		"a succeeded refund called rejected": `{"id":"evt_0123456789abcdef0123456789abcdef","type":"refund.succeeded","version":1,"producer":"http","source":"http","account":"a","refund":{"id":"` + refundID + `","charge_id":"` + chargeID + `","status":"rejected","amount":1,"currency":"BRL"},"created_at":"2026-12-01T12:00:00Z"}`,
		"a refund that is final":             `{"id":"evt_0123456789abcdef0123456789abcdef","type":"refund.succeeded","version":1,"producer":"http","source":"http","account":"a","refund":{"id":"` + refundID + `","charge_id":"` + chargeID + `","status":"succeeded","amount":1,"currency":"BRL","final":true},"created_at":"2026-12-01T12:00:00Z"}`,
		"a void event about a capture":       `{"id":"evt_0123456789abcdef0123456789abcdef","type":"void.held","version":1,"producer":"http","source":"http","account":"a","reason":"x","capture":{"id":"` + captureID + `","charge_id":"` + chargeID + `","status":"held"},"created_at":"2026-12-01T12:00:00Z"}`,
		"a void under a capture's id":        `{"id":"evt_0123456789abcdef0123456789abcdef","type":"void.held","version":1,"producer":"http","source":"http","account":"a","reason":"x","void":{"id":"` + captureID + `","charge_id":"` + chargeID + `","status":"held"},"created_at":"2026-12-01T12:00:00Z"}`,
		"a capture event without terms":      `{"id":"evt_0123456789abcdef0123456789abcdef","type":"capture.succeeded","version":1,"producer":"http","source":"http","account":"a","capture":{"id":"` + captureID + `","charge_id":"` + chargeID + `","status":"succeeded"},"created_at":"2026-12-01T12:00:00Z"}`,
		"a charge event with a refund":       `{"id":"evt_0123456789abcdef0123456789abcdef","type":"charge.held","version":1,"producer":"http","source":"http","account":"a","reason":"x","refund":{"id":"` + refundID + `","charge_id":"` + chargeID + `","status":"held"},"charge":{"id":"` + chargeID + `","status":"held"},"created_at":"2026-12-01T12:00:00Z"}`,
	} {
		if err := validate(t, s, []byte(bad)); err == nil {
			t.Errorf("the schema accepts %s", name)
		}
	}
}

// TestEventIDs: an id names the charge and the type, so a redelivery has
// the same one and a charge's held and captured events differ.
func TestEventIDs(t *testing.T) {
	t.Parallel()
	seen := map[string]event.Type{}
	for _, e := range examples(t) {
		if prev, ok := seen[e.ID]; ok {
			t.Fatalf("%s and %s share the id %s", prev, e.Type, e.ID)
		}
		seen[e.ID] = e.Type
	}
	again := examples(t)
	for i, e := range examples(t) {
		if again[i].ID != e.ID {
			t.Fatalf("%s: the id changed between two builds of the same event", e.Type)
		}
	}
	b, _ := examples(t)[0].Encode()
	var m map[string]any
	if json.Unmarshal(b, &m) != nil || m["producer"] != "orders" || !strings.HasPrefix(m["id"].(string), "evt_") {
		t.Fatalf("captured event %s", b)
	}
	if _, err := event.OfRow(event.Row{Charge: event.Charge{ID: chargeID, Status: "pending"}}); err == nil {
		t.Fatal("a row that is neither captured nor declined made an event")
	}
	if _, err := event.Refunds.OfRow(event.ActionRow{Action: event.Action{ID: refundID, Status: "pending"}}); err == nil {
		t.Fatal("a refund row that is neither succeeded nor declined made an event")
	}
}

// TestDecode: every type decodes to what was encoded, and what could mean
// two things (an unknown, duplicate or case-variant member, trailing bytes)
// is refused.
func TestDecode(t *testing.T) {
	for _, e := range examples(t) {
		b, err := e.Encode()
		if err != nil {
			t.Fatal(err)
		}
		got, err := event.Decode(b)
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		again, _ := got.Encode()
		if !bytes.Equal(again, b) {
			t.Errorf("decoded %s, encoded again %s", b, again)
		}
	}
	for _, bad := range []string{
		`{"id":"x","id":"y"}`, `{"ID":"x"}`, `{"id":"x","extra":1}`, `{"id":"x"} {}`, "{\"id\":\"\xff\"}",
	} {
		if _, err := event.Decode([]byte(bad)); err == nil {
			t.Errorf("%q decoded", bad)
		}
	}
}

// FuzzDecode: Decode never panics, and what it accepts encodes and decodes
// again to the same event.
func FuzzDecode(f *testing.F) {
	for _, e := range examples(f) {
		b, _ := e.Encode()
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := event.Decode(b)
		if err != nil {
			return
		}
		again, err := e.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if e2, err := event.Decode(again); err != nil || !reflect.DeepEqual(e, e2) {
			t.Fatalf("%q decoded to %+v, which encodes to %q: %+v, %v", b, e, again, e2, err)
		}
	})
}

// TestEventsMdExamples: docs/events.md shows one valid example of every
// type the schema names.
func TestEventsMdExamples(t *testing.T) {
	t.Parallel()
	s := eventtest.Schema(t)
	md, err := os.ReadFile(filepath.Join("..", "..", "docs", "events.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(md), "```jsonl\n")
	block, _, ended := strings.Cut(block, "```")
	if !ok || !ended {
		t.Fatal("docs/events.md has no jsonl block of examples")
	}
	shown := map[event.Type]bool{}
	for line := range strings.Lines(block) {
		if err := validate(t, s, []byte(line)); err != nil {
			t.Errorf("%s: %v", line, err)
		}
		e, err := event.Decode([]byte(strings.TrimSpace(line)))
		if err != nil {
			t.Fatal(err)
		}
		shown[e.Type] = true
	}
	for _, typ := range schemaTypes(t) {
		if !shown[typ] {
			t.Errorf("docs/events.md shows no %s", typ)
		}
	}
}

// schemaTypes are the types docs/events.schema.json names.
func schemaTypes(t *testing.T) []event.Type {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "events.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Properties struct {
			Type struct{ Enum []event.Type }
		}
	}
	if err := json.Unmarshal(b, &doc); err != nil || len(doc.Properties.Type.Enum) == 0 {
		t.Fatalf("the schema's types: %v", err)
	}
	return doc.Properties.Type.Enum
}

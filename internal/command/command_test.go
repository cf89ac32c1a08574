package command_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/idempotent-payments/idempay/internal/command"
	"github.com/idempotent-payments/idempay/internal/strictjson"
)

const visa = `{"amount": 25000, "currency": "BRL", "order_id": "123", "payment_method": "pm_card_visa"}`

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	for _, c := range []command.Command{
		command.Charge("acct_7Hq2", "order-123-attempt", []byte(visa)),
		command.Charge("acct_7Hq2", "", []byte(visa)), // no key: the consumer refuses it, the format carries it
		command.Charge("", "order-123-attempt", []byte(`"not an object"`)),
		command.Reconcile("IDEM#6:charge4:acct8:some-key"),
		command.Refund("acct_7Hq2", "ch_0123456789abcdef0123456789abcdef01234567", "order-123-refund-1", []byte(`{"amount": 5000}`)),
		command.Refund("acct_7Hq2", "", "", []byte(`{}`)), // the service refuses both; the format carries them
		command.Capture("acct_7Hq2", "ch_0123456789abcdef0123456789abcdef01234567", "order-123-capture-1", []byte(`{"amount": 1500, "final": true}`)),
		command.Void("acct_7Hq2", "ch_0123456789abcdef0123456789abcdef01234567", "order-123-void", []byte(`{"reason": "abandoned"}`)),
	} {
		body, err := c.Encode()
		if err != nil {
			t.Fatalf("Encode(%+v): %v", c, err)
		}
		back, err := command.Decode(body)
		if err != nil || !reflect.DeepEqual(back, c) {
			t.Fatalf("Decode(%s) = %+v, %v; want %+v", body, back, err, c)
		}
	}
	body, _ := command.Charge("acct_7Hq2", "order-123-attempt", []byte(visa)).Encode()
	if want := `{"type":"charge","account":"acct_7Hq2","idempotency_key":"order-123-attempt","request":` + visa + `}`; body != want {
		t.Fatalf("Encode = %s\nwant     %s", body, want)
	}
}

func TestEncodeRefuses(t *testing.T) {
	t.Parallel()
	for _, c := range []command.Command{
		command.Charge("acct_1", "order-123-attempt", []byte(`{},"account":"acct_victim"`)),
		command.Charge("acct_1", "order-123-attempt", nil),
		command.Reconcile(""),
		command.Reconcile("CHARGE#ch_0123"),
		command.Refund("acct_1", "ch_1", "order-123-refund-1", []byte(`{},"account":"acct_victim"`)),
		{Type: "payout"},
	} {
		if body, err := c.Encode(); err == nil {
			t.Errorf("Encode(%+v) = %s, want an error", c, body)
		}
	}
}

// TestDecodeRefuses: every envelope that could mean two things, or is not
// a command, is refused at its member.
func TestDecodeRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ body, field, message string }{
		{`{"type":"charge","account":"acct_victim","account":"acct_other","idempotency_key":"order-1-try1","request":` + visa + `}`, "account", "duplicate member"},
		{`{"type":"charge","Account":"acct_other","account":"acct_victim","idempotency_key":"order-1-try1","request":` + visa + `}`, "Account", `unknown member: names are case-sensitive (did you mean "account"?)`},
		{`{"type":"charge","account":"acct_1","idempotency_key":"order-1-try1","request":` + visa + `,"priority":"high"}`, "priority", "unknown member"},
		{`{"type":"charge","account":"acct_1","idempotency_key":"order-1-try1","idempotency_key":"order-1-try2","request":` + visa + `}`, "idempotency_key", "duplicate member"},
		{`{"type":"charge","account":"acct_1","request":` + visa + `,"pk":"IDEM#x"}`, "pk", "not a member of a charge command"},
		{`{"type":"charge","idempotency_key":"order-1-try1","request":` + visa + `}`, "account", "required"},
		{`{"type":"charge","account":"acct_1","idempotency_key":"order-1-try1"}`, "request", "required"},
		{`{"type":"reconcile","pk":"IDEM#x","account":"acct_1"}`, "account", "not a member of a reconcile command"},
		{`{"type":"reconcile","pk":""}`, "pk", "required"},
		// A pk that is not an idempotency record's is
		// refused here, so it is dead-lettered at once as MALFORMED.
		{`{"type":"reconcile","pk":"IDEM#x"}`, "pk", "not an idempotency record's key: part 1 has no valid length"},
		{`{"type":"reconcile","pk":"CHARGE#ch_0123456789abcdef0123456789abcdef01234567"}`, "pk", "not an idempotency record's key: no IDEM# prefix"},
		{`{"type":"reconcile","pk":"IDEM#6:charge9:acct_7Hq25:short"}`, "pk", "not an idempotency record's key: idempotency key invalid: length 5, want 8–128"},
		{`{"type":"payout"}`, "type", `must be "charge", "refund", "capture", "void" or "reconcile"`},
		{`{"type":"charge","account":"acct_1","charge_id":"ch_1","request":` + visa + `}`, "charge_id", "not a member of a charge command"},
		{`{"type":"refund","account":"acct_1","request":{}}`, "charge_id", "required"},
		{`{"type":"capture","account":"acct_1","request":{}}`, "charge_id", "required"},
		{`{"type":"void","account":"acct_1","charge_id":"ch_1","pk":"IDEM#x","request":{}}`, "pk", "not a member of a void command"},
		{`{"type":"refund","charge_id":"ch_1","request":{}}`, "account", "required"},
		{`{"type":"refund","account":"acct_1","charge_id":"ch_1"}`, "request", "required"},
		{`{"type":"refund","account":"acct_1","charge_id":"ch_1","pk":"IDEM#x","request":{}}`, "pk", "not a member of a refund command"},
		{`{"type":"refund","account":"acct_1","charge_id":"ch_1","charge_id":"ch_2","request":{}}`, "charge_id", "duplicate member"},
		{`{"type":"reconcile","pk":"IDEM#6:charge1:a8:key-1234","charge_id":"ch_1"}`, "charge_id", "not a member of a reconcile command"},
		{`{"pk":"IDEM#x"}`, "type", "required"},
		{`{"type":"reconcile","pk":"IDEM#x"} {}`, "", "malformed JSON (a lone surrogate escape, an invalid character, or more than one value)"},
		{`not json`, "", "malformed JSON (a lone surrogate escape, an invalid character, or more than one value)"},
	} {
		_, err := command.Decode(tc.body)
		var e *strictjson.Error
		if !errors.As(err, &e) || e.Field != tc.field || e.Message != tc.message {
			t.Errorf("Decode(%s) = %v; want %s: %s", tc.body, err, tc.field, tc.message)
		}
		if _, in := command.RequestError(err); in {
			t.Errorf("Decode(%s): an envelope error reported inside the request", tc.body)
		}
	}
}

// TestRequestError: what the envelope's decoder finds inside the request is
// reported relative to it, so the consumer answers as the HTTP route does.
func TestRequestError(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ request, field, message string }{
		{`{"amount":100,"amount":99999999}`, "amount", "duplicate member"},
		{`{"amount":100,"currency":"\ud800"}`, "currency", "malformed JSON (a lone surrogate escape, an invalid character, or more than one value)"},
		// Not well-formed at all: the request's, as over HTTP.
		{`{not json}`, "", "malformed JSON (a lone surrogate escape, an invalid character, or more than one value)"},
		{`{"amount":100,}`, "", "malformed JSON (a lone surrogate escape, an invalid character, or more than one value)"},
		{`{"amount":01}`, "", "malformed JSON (a lone surrogate escape, an invalid character, or more than one value)"},
	} {
		body := `{"type":"charge","account":"acct_1","idempotency_key":"order-1-try1","request":` + tc.request + `}`
		_, err := command.Decode(body)
		e, in := command.RequestError(err)
		if !in || e.Field != tc.field || e.Message != tc.message {
			t.Errorf("Decode(%s) = %v; RequestError = %+v, %v; want %s: %s", body, err, e, in, tc.field, tc.message)
		}
	}
	// A syntax error in the envelope around the request is not the request's.
	for _, body := range []string{
		`{"type":"charge","account":"a","request":{"amount":1},}`,
		`{"type":"charge","account":"a","request":{"amount":1}`,
		`{"type":"reconcile","pk":"IDEM#6:charge1:a8:key-1234","request":{}}`,
	} {
		if _, err := command.Decode(body); err == nil {
			t.Errorf("Decode(%s) succeeded", body)
		} else if _, in := command.RequestError(err); in {
			t.Errorf("Decode(%s): %v reported inside the request", body, err)
		}
	}
	// A request with a case variant decodes (it is a raw value here); the
	// consumer's request parser refuses it.
	if _, err := command.Decode(`{"type":"charge","account":"a","request":{"AMOUNT":1}}`); err != nil {
		t.Fatalf("raw request refused by the envelope: %v", err)
	}
}

// FuzzDecode: never a panic; a refusal is a *strictjson.Error; a decoded
// command encodes and decodes again to itself.
func FuzzDecode(f *testing.F) {
	f.Add(`{"type":"charge","account":"acct_1","idempotency_key":"order-1-try1","request":` + visa + `}`)
	f.Add(`{"type":"reconcile","pk":"IDEM#6:charge1:a8:key-1234"}`)
	f.Add(`{"type":"charge","account":"a","account":"b","request":{}}`)
	f.Add(`{"type":"charge","Account":"a","request":{"amount":1,"amount":2}}`)
	f.Add(`{"type":"refund","account":"acct_1","charge_id":"ch_0123456789abcdef0123456789abcdef01234567","idempotency_key":"refund-1-try1","request":{"amount":1}}`)
	f.Add(`{"type":"capture","account":"acct_1","charge_id":"ch_0123456789abcdef0123456789abcdef01234567","idempotency_key":"capture-1-try1","request":{"amount":1,"final":false}}`)
	f.Add(`{"type":"void","account":"acct_1","charge_id":"ch_0123456789abcdef0123456789abcdef01234567","idempotency_key":"void-1-try1","request":{}}`)
	f.Fuzz(func(t *testing.T, body string) {
		c, err := command.Decode(body)
		if err != nil {
			var e *strictjson.Error
			if !errors.As(err, &e) {
				t.Fatalf("untyped error %T %v", err, err)
			}
			return
		}
		enc, err := c.Encode()
		if err != nil {
			t.Fatalf("decoded %+v does not encode: %v", c, err)
		}
		back, err := command.Decode(enc)
		if err != nil || back.Type != c.Type || back.Account != c.Account || back.IdempotencyKey != c.IdempotencyKey || back.PK != c.PK ||
			back.ChargeID != c.ChargeID || string(back.Request) != string(c.Request) {
			t.Fatalf("%q → %+v → %q → %+v, %v", body, c, enc, back, err)
		}
	})
}

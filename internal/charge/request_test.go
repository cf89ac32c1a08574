package charge_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/idem"
)

func TestParseRequest(t *testing.T) {
	t.Parallel()
	ok := `{"amount": 25000, "currency": "BRL", "order_id": "123", "payment_method": "pm_card_visa", "description": "Pedido 123"}`
	req, err := charge.ParseRequest([]byte(ok), 0)
	if err != nil || req != (charge.Request{Amount: 25000, Currency: "BRL", OrderID: "123", PaymentMethod: "pm_card_visa", Description: "Pedido 123"}) {
		t.Fatalf("ParseRequest(valid) = %+v, %v", req, err)
	}
	for body, fields := range map[string]string{
		`{}`: "amount currency order_id payment_method",
		`{"amount": 0, "currency": "brl", "order_id": "a b", "payment_method": "pm"}`:       "amount currency order_id",
		`{"amount": 100000001, "currency": "BRL", "order_id": "1", "payment_method": "pm"}`: "amount",
		`{"amount": 1e3, "currency": "BRL", "order_id": "1", "payment_method": "pm"}`:       "amount",
		`{"amount": null, "currency": "BRL", "order_id": "1", "payment_method": "pm"}`:      "amount",
		`{"amount": 1, "currency": "BRL", "order_id": "1", "payment_method": "pm"} {}`:      "body",
		`[1]`:              "body",
		`{"amount": true}`: "amount currency order_id payment_method",
		`{"amount": 1, "currency": "BRL", "order_id": "1", "payment_method": "pm", "description": "a\u0000b"}`:    "description",
		`{"amount": 1, "currency": "BRL", "order_id": "` + strings.Repeat("9", 65) + `", "payment_method": "pm"}`: "order_id",
	} {
		checkFields(t, body, fields)
	}
}

// TestParseRequestStrict: each input could mean two charges to two readers;
// each is refused at the field that carries it.
func TestParseRequestStrict(t *testing.T) {
	t.Parallel()
	const rest = `"currency": "BRL", "order_id": "1", "payment_method": "pm_card_visa"`
	for _, tc := range []struct{ body, field, message string }{
		{`{"amount": 100, "AMOUNT": 99999999, ` + rest + `}`, "AMOUNT", `unknown member: names are case-sensitive (did you mean "amount"?)`},
		{`{"amount": 100, ` + rest + `, "amount": 99999999}`, "amount", "duplicate member"},
		{`{"amount": 100, "currency": "BRL", "order_id": "1", "payment_method": "pm_card_declined", "Payment_Method": "pm_card_visa"}`, "Payment_Method", `unknown member: names are case-sensitive (did you mean "payment_method"?)`},
		{"{\"amount\": 100, \"currency\": \"BRL\", \"order_id\": \"1\xff\", \"payment_method\": \"pm\"}", "order_id", "invalid UTF-8"},
		{`{"amount": 100, "currency": "BRL", "order_id": "\ud800", "payment_method": "pm"}`, "order_id", "malformed JSON (a lone surrogate escape, an invalid character, or more than one value)"},
		{`{"amount": 100, "currency": "BRL", "order_id": "1\u200b", "payment_method": "pm"}`, "order_id", "must not contain control or invisible format characters"},
		{"{\"amount\": 100, \"currency\": \"BRL\", \"order_id\": \"1\", \"payment_method\": \"pm_card_visa\u202e\"}", "payment_method", "must not contain control or invisible format characters"},
		{`{"amount": 100, "currency": "BRL", "order_id": "\ufeff1", "payment_method": "pm"}`, "order_id", "must not contain control or invisible format characters"},
		{`{"amount": 100, "currency": "BRL", "order_id": "1\ufffd", "payment_method": "pm"}`, "order_id", "must not contain control or invisible format characters"},
		{`{"amount": 100, "currency": "BRL", "order_id": "1\ufe0f", "payment_method": "pm"}`, "order_id", "must not contain control or invisible format characters"},
		{`{"amount": 100, "currency": "BRL", "order_id": "1\u034f", "payment_method": "pm"}`, "order_id", "must not contain control or invisible format characters"},
		{`{"amount": 100, "currency": "BRL", "order_id": "1\u3164", "payment_method": "pm"}`, "order_id", "must not contain control or invisible format characters"},
		{`{"amount": 100, ` + rest + `, "description": "caf\ufffd"}`, "description", "must not contain control characters, bidirectional overrides or U+FFFD"},
		{`{"amount": 100, ` + rest + `, "description": "abc\u202edef"}`, "description", "must not contain control characters, bidirectional overrides or U+FFFD"},
		{`{"amount": 100, ` + rest + `, "description": "abc\u2066def"}`, "description", "must not contain control characters, bidirectional overrides or U+FFFD"},
		{`{"amount": 100, ` + rest + `, "description": "line\nbreak"}`, "description", "must not contain control characters, bidirectional overrides or U+FFFD"},
		{`{"amount": 100, ` + rest + `, "tip": 5}`, "tip", "unknown member"},
		{`{"amount": 100, ` + rest + `, "capture": "false"}`, "capture", "must be true or false"},
		{`{"amount": 100, ` + rest + `, "capture": null}`, "capture", "must be true or false"},
		{`{"amount": 100, ` + rest + `, "capture": 0}`, "capture", "must be true or false"},
		{`{"amount": 100, ` + rest + `, "capture": false, "capture": true}`, "capture", "duplicate member"},
		{`{"amount": 100, ` + rest + `, "Capture": false}`, "Capture", `unknown member: names are case-sensitive (did you mean "capture"?)`},
		{`{"amount": 100, ` + rest + `} {"amount": 1}`, "body", "malformed JSON (a lone surrogate escape, an invalid character, or more than one value)"},
	} {
		_, err := charge.ParseRequest([]byte(tc.body), 0)
		var v *charge.ValidationError
		if !errors.As(err, &v) || len(v.Errors) != 1 || v.Errors[0] != (charge.FieldError{Field: tc.field, Message: tc.message}) {
			t.Errorf("ParseRequest(%q) = %v, want %s: %s", tc.body, err, tc.field, tc.message)
		}
	}
	// Not everything unusual is refused: a zero-width joiner is part of an
	// emoji in a description, and a MAX_AMOUNT override is the bound.
	req, err := charge.ParseRequest([]byte(`{"amount": 5000, `+rest+`, "description": "presente \ud83d\udc68\u200d\ud83d\udc69"}`), 5000)
	if err != nil || req.Amount != 5000 {
		t.Fatalf("valid request refused: %v", err)
	}
	if _, err := charge.ParseRequest([]byte(`{"amount": 5001, `+rest+`}`), 5000); err == nil || !strings.Contains(err.Error(), "at most 5000") {
		t.Fatalf("amount over MAX_AMOUNT: %v", err)
	}
}

// TestCaptureMember: "capture" is kept as it was sent. Absent, the request
// and its fingerprint are what they were before the member existed; true
// and absent are two requests under one key; false authorizes only.
func TestCaptureMember(t *testing.T) {
	t.Parallel()
	const rest = `"amount": 100, "currency": "BRL", "order_id": "1", "payment_method": "pm_card_visa"`
	prints := map[string]charge.Capture{}
	for body, want := range map[string]charge.Capture{
		`{` + rest + `}`:                   charge.CaptureAbsent,
		`{` + rest + `, "capture": true}`:  charge.CaptureTrue,
		`{` + rest + `, "capture": false}`: charge.CaptureFalse,
	} {
		req, err := charge.ParseRequest([]byte(body), 0)
		if err != nil || req.Capture != want || req.AuthorizeOnly() != (want == charge.CaptureFalse) {
			t.Fatalf("ParseRequest(%s) = %+v, %v; want capture %q", body, req, err, want)
		}
		if back, err := charge.RequestFromCanonical(req.Canonical()); err != nil || back != req {
			t.Fatalf("RequestFromCanonical of %s = %+v, %v", body, back, err)
		}
		if again, err := charge.ParseRequest(req.JSON(), 0); err != nil || again != req {
			t.Fatalf("ParseRequest(%s) = %+v, %v", req.JSON(), again, err)
		}
		prints[idem.Fingerprint(charge.Operation, req.Canonical())] = want
	}
	if len(prints) != 3 {
		t.Fatalf("fingerprints %v: want three", prints)
	}
	// Without the member, the canonical form is the five fields it had
	// before the member existed.
	req, _ := charge.ParseRequest([]byte(`{`+rest+`}`), 0)
	if c := req.Canonical(); len(c) != 5 || c[4].Name != "description" || string(req.JSON()) != `{"amount":100,"currency":"BRL","order_id":"1","payment_method":"pm_card_visa"}` {
		t.Fatalf("canonical %v, body %s", c, req.JSON())
	}
	if _, err := charge.RequestFromCanonical(idem.Canonical{{Name: "capture", Value: "no"}}); err == nil {
		t.Fatal("a canonical capture that is neither true nor false accepted")
	}
}

// checkFields: body is refused with errors on fields (space-separated), in order.
func checkFields(t *testing.T, body, fields string) {
	t.Helper()
	_, err := charge.ParseRequest([]byte(body), 0)
	var v *charge.ValidationError
	if !errors.As(err, &v) || !errors.Is(err, charge.ErrValidation) {
		t.Fatalf("ParseRequest(%s) = %v, want a ValidationError", body, err)
	}
	var got []string
	for _, fe := range v.Errors {
		got = append(got, fe.Field)
	}
	if strings.Join(got, " ") != fields {
		t.Errorf("ParseRequest(%s): fields %v, want %s", body, got, fields)
	}
}

func TestCanonicalRoundTrip(t *testing.T) {
	t.Parallel()
	req := charge.Request{Amount: 1, Currency: "JPY", OrderID: "o", PaymentMethod: "pm", Description: "d"}
	back, err := charge.RequestFromCanonical(req.Canonical())
	if err != nil || back != req {
		t.Fatalf("RequestFromCanonical = %+v, %v", back, err)
	}
	// The canonical body's member names are the schema's: it parses back.
	if again, err := charge.ParseRequest(req.JSON(), 0); err != nil || again != req {
		t.Fatalf("ParseRequest(%s) = %+v, %v", req.JSON(), again, err)
	}
	if _, err := charge.RequestFromCanonical(idem.Canonical{{Name: "tip", Value: "1"}}); err == nil {
		t.Fatal("unknown canonical field accepted")
	}
}

// FuzzParseRequest: never a panic; a rejection is always a ValidationError;
// an accepted request is within every limit and round-trips through its
// canonical form.
func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{
		`{"amount": 25000, "currency": "BRL", "order_id": "123", "payment_method": "pm_card_visa"}`,
		`{"amount": "1"}`, `{"amount": 1e400}`, `{"currency": null}`, `[]`, `"x"`, `{"a":1,"a":2}`, "\xff",
		`{"amount": 1, "AMOUNT": 2}`, `{"amount": 1, "currency": "BRL", "order_id": "\ud800", "payment_method": "pm"}`,
		`{"amount": 1, "currency": "BRL", "order_id": "1", "payment_method": "pm", "description": "\u200d\u2028 <&>"}`,
		`{"amount": 1, "currency": "BRL", "order_id": "1", "payment_method": "pm", "capture": false}`,
		`{"amount": 1, "currency": "BRL", "order_id": "1", "payment_method": "pm", "capture": "true"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := charge.ParseRequest(body, 0)
		if err != nil {
			if !errors.Is(err, charge.ErrValidation) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if req.Amount <= 0 || req.Amount > charge.DefaultMaxAmount || !charge.IsCurrency(req.Currency) || req.OrderID == "" || req.PaymentMethod == "" {
			t.Fatalf("accepted out-of-bounds request %+v", req)
		}
		if back, err := charge.RequestFromCanonical(req.Canonical()); err != nil || back != req {
			t.Fatalf("canonical round trip: %+v, %v", back, err)
		}
		// The canonical body parses back to the same fingerprint.
		again, err := charge.ParseRequest(req.JSON(), 0)
		if err != nil || idem.Fingerprint(charge.Operation, again.Canonical()) != idem.Fingerprint(charge.Operation, req.Canonical()) {
			t.Fatalf("%q accepted, its canonical body %q parses to %+v, %v", body, req.JSON(), again, err)
		}
	})
}

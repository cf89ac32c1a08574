package refund_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/refund"
)

var chargeID = charge.ID(strings.Repeat("a", 40))

// TestParseRequest: what a refund body may say, and what it may not.
func TestParseRequest(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]refund.Request{
		`{}`:                                     {ChargeID: chargeID},
		`{"amount": 300}`:                        {ChargeID: chargeID, Amount: 300},
		`{"amount": 300, "reason": "duplicate"}`: {ChargeID: chargeID, Amount: 300, Reason: refund.ReasonDuplicate},
		` {"reason": "fraudulent"} `:             {ChargeID: chargeID, Reason: refund.ReasonFraudulent},
	} {
		got, err := refund.ParseRequest(chargeID, []byte(body), 0)
		if err != nil || got != want {
			t.Errorf("%s: %+v, %v; want %+v", body, got, err, want)
		}
	}
	for body, field := range map[string]string{
		``:                                    "body",
		`null`:                                "body",
		" null ":                              "body",
		`[]`:                                  "body",
		`{"amount": 0}`:                       "amount",
		`{"amount": -5}`:                      "amount",
		`{"amount": 1.5}`:                     "amount",
		`{"amount": "300"}`:                   "amount",
		`{"amount": null}`:                    "amount",
		`{"amount": 100000001}`:               "amount",
		`{"amount": 1, "amount": 2}`:          "amount",
		`{"amount": 1, "Amount": 2}`:          "Amount",
		`{"reason": "other"}`:                 "reason",
		`{"reason": "Duplicate"}`:             "reason",
		`{"reason": "duplicate\u200b"}`:       "reason",
		`{"currency": "BRL"}`:                 "currency",
		"{\"reason\": \"dup\xff\"}":           "reason",
		`{"amount": 1} {"amount": 2}`:         "body",
		`{"amount": 1, "reason": null}`:       "reason",
		`{"amount": 1, "metadata": {"a": 1}}`: "metadata",
	} {
		_, err := refund.ParseRequest(chargeID, []byte(body), 0)
		var v *charge.ValidationError
		if !errors.As(err, &v) || !slices.ContainsFunc(v.Errors, func(e charge.FieldError) bool { return e.Field == field }) {
			t.Errorf("%q: %v; want an error on %s", body, err, field)
		}
	}
}

// TestCanonical: the fingerprint covers the charge and the body as sent:
// {} and {"amount": N} are two requests, and so are one body on two
// charges.
func TestCanonical(t *testing.T) {
	t.Parallel()
	fp := func(r refund.Request) string { return idem.Fingerprint(refund.Operation, r.Canonical()) }
	all := refund.Request{ChargeID: chargeID}
	some := refund.Request{ChargeID: chargeID, Amount: 777}
	other := refund.Request{ChargeID: charge.ID(strings.Repeat("b", 40))}
	if fp(all) == fp(some) || fp(all) == fp(other) {
		t.Fatal("two requests share a fingerprint")
	}
	for _, r := range []refund.Request{all, some, {ChargeID: chargeID, Amount: 1, Reason: refund.ReasonFraudulent}} {
		if back, err := refund.RequestFromCanonical(r.Canonical()); err != nil || back != r {
			t.Fatalf("round trip of %+v: %+v, %v", r, back, err)
		}
	}
}

// FuzzParseRequest: whatever the body, the parser answers a request
// within bounds or a field error, never panics, and what it accepts
// survives the canonical round trip.
func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{`{}`, `null`, `{"amount": 300, "reason": "duplicate"}`, `{"amount": 1e400}`, `{"reason": null}`,
		`{"a":1,"a":2}`, "\xff", `{"amount": 1, "AMOUNT": 2}`, `{"reason": "\ud800"}`, `[]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := refund.ParseRequest(chargeID, body, 0)
		if err != nil {
			if !errors.Is(err, charge.ErrValidation) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if req.Amount < 0 || req.Amount > charge.DefaultMaxAmount || (req.Reason != "" && !slices.Contains(refund.Reasons(), req.Reason)) || req.ChargeID != chargeID {
			t.Fatalf("accepted out-of-bounds request %+v", req)
		}
		if back, err := refund.RequestFromCanonical(req.Canonical()); err != nil || back != req {
			t.Fatalf("canonical round trip: %+v, %v", back, err)
		}
	})
}

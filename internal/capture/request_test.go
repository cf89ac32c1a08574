package capture_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/idempotent-payments/idempay/internal/capture"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/idem"
)

var chargeID = charge.ID(strings.Repeat("a", 40))

// TestParseRequest: a capture's body as sent, each member optional; what
// could mean two things is refused at the field that carries it.
func TestParseRequest(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]capture.Request{
		`{}`:                              {ChargeID: chargeID},
		`{"amount": 600}`:                 {ChargeID: chargeID, Amount: 600},
		`{"amount": 600, "final": false}`: {ChargeID: chargeID, Amount: 600, Final: capture.FinalFalse},
		`{"final": true}`:                 {ChargeID: chargeID, Final: capture.FinalTrue},
	} {
		got, err := capture.ParseRequest(chargeID, []byte(body), 0)
		if err != nil || got != want {
			t.Errorf("ParseRequest(%s) = %+v, %v; want %+v", body, got, err, want)
		}
		if want.Final == capture.FinalFalse && got.Kind() != capture.Partial || want.Final != capture.FinalFalse && got.Kind() != capture.Final {
			t.Errorf("%s: kind %s", body, got.Kind())
		}
	}
	for body, field := range map[string]string{
		`{"amount": 0}`:                   "amount",
		`{"amount": "600"}`:               "amount",
		`{"amount": 1e3}`:                 "amount",
		`{"final": "false"}`:              "final",
		`{"final": null}`:                 "final",
		`{"final": false, "final": true}`: "final",
		`{"Final": false}`:                "Final",
		`{"amount": 1, "AMOUNT": 9}`:      "AMOUNT",
		`{"tip": 1}`:                      "tip",
		`[]`:                              "body",
		"{\"final\": tru\xff}":            "final",
		`{"amount": 600} {}`:              "body",
	} {
		_, err := capture.ParseRequest(chargeID, []byte(body), 0)
		var v *charge.ValidationError
		if !errors.As(err, &v) || len(v.Errors) != 1 || v.Errors[0].Field != field {
			t.Errorf("ParseRequest(%q) = %v, want an error on %s", body, err, field)
		}
	}
	if _, err := capture.ParseRequest(chargeID, []byte(`{"amount": `+strings.Repeat(" ", capture.MaxBodyBytes)+`1}`), 0); err == nil {
		t.Error("a body over the limit accepted")
	}
}

// TestCanonicalForms: the fingerprint covers the body as sent: an absent
// member and one that says what it would resolve to are two requests;
// each request rebuilds from its canonical form.
func TestCanonicalForms(t *testing.T) {
	t.Parallel()
	prints := map[string]bool{}
	for _, r := range []capture.Request{
		{ChargeID: chargeID}, {ChargeID: chargeID, Final: capture.FinalTrue}, {ChargeID: chargeID, Final: capture.FinalFalse},
		{ChargeID: chargeID, Amount: 600}, {ChargeID: chargeID, Amount: 600, Final: capture.FinalFalse},
	} {
		back, err := capture.RequestFromCanonical(r.Canonical())
		if err != nil || back != r {
			t.Fatalf("%+v: back %+v, %v", r, back, err)
		}
		prints[idem.Fingerprint(capture.OperationCapture, r.Canonical())] = true
	}
	if len(prints) != 5 {
		t.Fatalf("%d fingerprints for five requests", len(prints))
	}
	for _, r := range []capture.VoidRequest{{ChargeID: chargeID}, {ChargeID: chargeID, Reason: capture.ReasonAbandoned}} {
		if back, err := capture.VoidRequestFromCanonical(r.Canonical()); err != nil || back != r {
			t.Fatalf("%+v: back %+v, %v", r, back, err)
		}
	}
	for _, c := range []idem.Canonical{
		{{Name: "charge_id", Value: chargeID}, {Name: "final", Value: "yes"}},
		{{Name: "charge_id", Value: "ch_1"}},
		{{Name: "charge_id", Value: chargeID}, {Name: "tip", Value: "1"}},
	} {
		if _, err := capture.RequestFromCanonical(c); err == nil {
			t.Errorf("canonical %v accepted", c)
		}
	}
	if _, err := capture.VoidRequestFromCanonical(idem.Canonical{{Name: "charge_id", Value: chargeID}, {Name: "reason", Value: "bored"}}); err == nil {
		t.Error("a canonical void with an unknown reason accepted")
	}
}

// TestParseVoidRequest: {} or a known reason, strictly.
func TestParseVoidRequest(t *testing.T) {
	t.Parallel()
	for body, want := range map[string]capture.VoidRequest{
		`{}`:                      {ChargeID: chargeID},
		`{"reason": "abandoned"}`: {ChargeID: chargeID, Reason: capture.ReasonAbandoned},
		`{"reason": "duplicate"}`: {ChargeID: chargeID, Reason: capture.ReasonDuplicate},
	} {
		if got, err := capture.ParseVoidRequest(chargeID, []byte(body)); err != nil || got != want {
			t.Errorf("ParseVoidRequest(%s) = %+v, %v", body, got, err)
		}
	}
	for _, body := range []string{`{"reason": "bored"}`, `{"reason": 1}`, `{"reason": null}`, `{"amount": 1}`, `{"Reason": "duplicate"}`, `{"reason": "duplicate", "reason": "fraudulent"}`} {
		if _, err := capture.ParseVoidRequest(chargeID, []byte(body)); !errors.Is(err, charge.ErrValidation) {
			t.Errorf("ParseVoidRequest(%s) = %v, want a validation error", body, err)
		}
	}
}

// FuzzParseRequest: never a panic; a refusal is always a validation
// error; an accepted capture is within the limits and rebuilds from its
// canonical form; an accepted void too.
func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{`{}`, `{"amount": 600, "final": false}`, `{"final": true}`, `{"amount": "1"}`, `{"final": 0}`,
		`{"amount": 1, "amount": 2}`, `{"reason": "abandoned"}`, "\xff", `[]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := capture.ParseRequest(chargeID, body, 0)
		if err != nil && !errors.Is(err, charge.ErrValidation) {
			t.Fatalf("untyped error %v", err)
		}
		if err == nil {
			if req.Amount < 0 || req.Amount > charge.DefaultMaxAmount {
				t.Fatalf("accepted out-of-bounds %+v", req)
			}
			if back, err := capture.RequestFromCanonical(req.Canonical()); err != nil || back != req {
				t.Fatalf("canonical round trip of %+v: %+v, %v", req, back, err)
			}
		}
		v, err := capture.ParseVoidRequest(chargeID, body)
		if err != nil && !errors.Is(err, charge.ErrValidation) {
			t.Fatalf("untyped void error %v", err)
		}
		if err == nil {
			if back, err := capture.VoidRequestFromCanonical(v.Canonical()); err != nil || back != v {
				t.Fatalf("canonical round trip of %+v: %+v, %v", v, back, err)
			}
		}
	})
}

package operator_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/operator"
	"github.com/idempotent-payments/idempay/internal/strictjson"
)

var pk = idem.Scope{Operation: "charge", Account: "acct_ops", Key: "order-123-attempt-1"}.PK()

// TestRequestRoundTrip: every valid request decodes to itself.
func TestRequestRoundTrip(t *testing.T) {
	t.Parallel()
	for _, r := range []operator.Request{
		{Action: operator.Look, Record: pk, Intent: "9f2c0a"},
		{Action: operator.Reconcile, Record: pk, Intent: "9f2c0a", Decision: "dec-00000001"},
		{Action: operator.Release, Record: pk, Intent: "9f2c0a", Decision: "dec-00000002"},
		{Action: operator.VoidConfirmed, Record: pk, Intent: "9f2c0a", Decision: "dec-00000003"},
		{Action: operator.Accept, Record: pk, Intent: "9f2c0a", Decision: "dec-00000004", Terms: &operator.Terms{AuthorizationID: "auth_1", Status: "captured", Amount: 1000, Currency: "BRL"}},
		{Action: operator.ReadBack, Record: pk, Intent: "9f2c0a", Decision: "dec-00000004", Of: operator.Accept},
	} {
		b, err := r.Encode()
		if err != nil {
			t.Fatal(err)
		}
		got, err := operator.Decode(b)
		if err != nil || got.Action != r.Action || got.Record != r.Record || got.Intent != r.Intent || got.Decision != r.Decision || got.Of != r.Of ||
			(r.Terms != nil) != (got.Terms != nil) || (r.Terms != nil && *got.Terms != *r.Terms) {
			t.Errorf("%s: %+v, %v", b, got, err)
		}
	}
}

// TestDecodeRefuses: what could mean two things, or asks for what the
// channel does not do, is refused, naming the member.
func TestDecodeRefuses(t *testing.T) {
	t.Parallel()
	base := `"record":"` + pk + `","intent":"9f2c0a"`
	for body, field := range map[string]string{
		`{"action":"look",` + base + `,"action":"accept"}`:                   "action",
		`{"Action":"look",` + base + `}`:                                     "Action",
		`{"action":"look",` + base + `,"by":"arn:aws:iam::1:user/x"}`:        "by",
		`{"action":"look",` + base + `,"decision":"dec-00000001"}`:           "decision",
		`{"action":"void_confirmed",` + base + `}`:                           "decision",
		`{"action":"void_confirmed",` + base + `,"decision":"short"}`:        "decision",
		`{"action":"void_confirmed",` + base + `,"decision":"dec 00000001"}`: "decision",
		`{"action":"accept",` + base + `,"decision":"dec-00000001"}`:         "terms",
		`{"action":"void_confirmed",` + base + `,"decision":"dec-00000001","terms":{"authorization_id":"a","status":"captured","amount":1,"currency":"BRL"}}`: "terms",
		`{"action":"drop",` + base + `}`:                                                   "action",
		`{"action":"look","record":"CHARGE#ch_1","intent":"9f2c0a"}`:                       "record",
		`{"action":"look","record":"` + pk + `","intent":""}`:                              "intent",
		`{"action":"look","record":"` + pk + `","intent":"9f2c\u00a00a"}`:                  "intent",
		`{"action":"look","record":"` + pk + `"}`:                                          "intent",
		`{"action":"read_back",` + base + `,"decision":"dec-00000001"}`:                    "of",
		`{"action":"read_back",` + base + `,"decision":"dec-00000001","of":"release"}`:     "of",
		`{"action":"read_back",` + base + `,"of":"accept"}`:                                "decision",
		`{"action":"void_confirmed",` + base + `,"decision":"dec-00000001","of":"accept"}`: "of",
	} {
		_, err := operator.Decode([]byte(body))
		var e *strictjson.Error
		if !errors.As(err, &e) || e.Field != field {
			t.Errorf("%s: %v, want a refusal of %q", body, err, field)
		}
	}
	if _, err := operator.Decode(make([]byte, operator.MaxRequest+1)); err == nil {
		t.Error("a body over MaxRequest was decoded")
	}
}

// TestSettlementOutcomesAreTheStates: a settlement's answer names the
// state charge.Service.Settle read back, by the outcome the tool reads.
func TestSettlementOutcomesAreTheStates(t *testing.T) {
	t.Parallel()
	var names []string
	for s := op.StillHeld; s <= op.InProgress; s++ {
		names = append(names, s.String())
	}
	want := []string{operator.OutcomeStillHeld, operator.OutcomeReleasedByThis, operator.OutcomeCompletedByThis, operator.OutcomeReleasedByAnother,
		operator.OutcomeCompletedByAnother, operator.OutcomeNotHeld, operator.OutcomeGone, operator.OutcomeInProgress}
	if !slices.Equal(names, want) {
		t.Fatalf("charge's states %v, the channel's outcomes %v", names, want)
	}
}

// FuzzDecode: Decode never panics, and what it accepts encodes back to a
// request it accepts as the same.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"action":"look","record":"` + pk + `","intent":"9f2c0a"}`))
	f.Add([]byte(`{"action":"accept","record":"` + pk + `","intent":"9f2c0a","decision":"dec-00000004","terms":{"authorization_id":"auth_1","status":"captured","amount":1000,"currency":"BRL"}}`))
	f.Add([]byte(`{"action":"void_confirmed","record":"` + pk + `","intent":"9f2c0a","decision":"dec-00000003"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := operator.Decode(body)
		if err != nil {
			return
		}
		b, err := r.Encode()
		if err != nil {
			t.Fatal(err)
		}
		again, err := operator.Decode(b)
		if err != nil || again.Action != r.Action || again.Record != r.Record || again.Intent != r.Intent || again.Decision != r.Decision {
			t.Fatalf("%q decoded to %+v, which re-decodes to %+v, %v", body, r, again, err)
		}
	})
}

// TestTermsWithoutAnAuthorization: a refund row's terms, which name no
// authorization, say nothing of one rather than an empty one.
func TestTermsWithoutAnAuthorization(t *testing.T) {
	b, err := json.Marshal(operator.Terms{RefundID: "rf_1", Status: "succeeded", Amount: 100, Currency: "BRL"})
	if err != nil || strings.Contains(string(b), "authorization_id") {
		t.Fatalf("%s, %v", b, err)
	}
}

package acquirer

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestCheckTerms: the terms must be the ones asked, byte for byte, every
// answer states them, and an echoed key must be the one sent.
func TestCheckTerms(t *testing.T) {
	t.Parallel()
	asked := Request{Amount: 1000, Currency: "BRL"}
	good := Authorization{ID: "auth_1", Status: StatusCaptured, Amount: 1000, Currency: "BRL", IdempotencyKey: "k-1"}
	for _, c := range []struct {
		name   string
		change func(*Authorization)
		reason string
	}{
		{"agrees", func(*Authorization) {}, ""},
		{"no echo", func(a *Authorization) { a.IdempotencyKey = "" }, ""},
		{"a decline with its terms", func(a *Authorization) { a.Status, a.DeclineCode = StatusDeclined, "card_declined" }, ""},
		{"10x", func(a *Authorization) { a.Amount = 10000 }, ReasonAmount},
		{"another currency", func(a *Authorization) { a.Currency = "JPY" }, ReasonCurrency},
		{"lower case", func(a *Authorization) { a.Currency = "brl" }, ReasonCurrency},
		{"another key", func(a *Authorization) { a.IdempotencyKey = "k-2" }, ReasonKey},
		{"a decline without an amount", func(a *Authorization) { a.Status, a.Amount = StatusDeclined, 0 }, ReasonTermsMissing},
		{"no currency", func(a *Authorization) { a.Currency = "" }, ReasonTermsMissing},
		{"a negative amount", func(a *Authorization) { a.Amount = -1000 }, ReasonTermsMissing},
	} {
		a := good
		c.change(&a)
		err := CheckTerms(a, "k-1", asked)
		var m *MismatchError
		switch {
		case c.reason == "" && err != nil:
			t.Errorf("%s: %v, want agreement", c.name, err)
		case c.reason != "" && (!errors.As(err, &m) || m.Reason != c.reason || !errors.Is(err, ErrMismatch)):
			t.Errorf("%s: %v, want a mismatch for %s", c.name, err, c.reason)
		}
	}
}

// TestCheckRefundTerms: a refund states its terms and the authorization it
// refunds, and each must be the one asked.
func TestCheckRefundTerms(t *testing.T) {
	t.Parallel()
	asked := RefundRequest{AuthorizationID: "auth_1", Amount: 300, Currency: "BRL"}
	good := Refund{ID: "rf_1", Status: RefundSucceeded, AuthorizationID: "auth_1", Amount: 300, Currency: "BRL", IdempotencyKey: "k-1"}
	for _, c := range []struct {
		name   string
		change func(*Refund)
		reason string
	}{
		{"agrees", func(*Refund) {}, ""},
		{"no echo", func(r *Refund) { r.IdempotencyKey = "" }, ""},
		{"a decline with its terms", func(r *Refund) { r.Status, r.DeclineCode = RefundDeclined, "exceeds_authorization" }, ""},
		{"10x", func(r *Refund) { r.Amount = 3000 }, ReasonAmount},
		{"another currency", func(r *Refund) { r.Currency = "brl" }, ReasonCurrency},
		{"another authorization", func(r *Refund) { r.AuthorizationID = "auth_2" }, ReasonAuthorization},
		{"no authorization", func(r *Refund) { r.AuthorizationID = "" }, ReasonTermsMissing},
		{"another key", func(r *Refund) { r.IdempotencyKey = "k-2" }, ReasonKey},
		{"a decline without an amount", func(r *Refund) { r.Status, r.Amount = RefundDeclined, 0 }, ReasonTermsMissing},
	} {
		r := good
		c.change(&r)
		err := CheckRefundTerms(r, "k-1", asked)
		var m *RefundMismatchError
		switch {
		case c.reason == "" && err != nil:
			t.Errorf("%s: %v, want agreement", c.name, err)
		case c.reason != "" && (!errors.As(err, &m) || m.Reason != c.reason || !errors.Is(err, ErrMismatch)):
			t.Errorf("%s: %v, want a mismatch for %s", c.name, err, c.reason)
		}
	}
	ev := (&RefundMismatchError{Reason: ReasonAmount, Endpoint: EndpointRefund, HTTPStatus: 201, Stated: good}).Evidence("k-1", asked)
	if want := `"asked":{"authorization_id":"auth_1","amount":300,"currency":"BRL","idempotency_key":"k-1"}`; !strings.Contains(string(ev), want) {
		t.Fatalf("evidence %s, want %s in it", ev, want)
	}
}

// FuzzAnswer: whatever the acquirer answers, reading it never panics; an
// answer read as an outcome pairs its status as the table says and, once
// CheckTerms passes, states exactly the terms asked; anything else is a
// mismatch or unknown, never a guess.
func FuzzAnswer(f *testing.F) {
	f.Add(uint8(0), 201, `{"id":"auth_1","status":"captured","amount":100,"currency":"BRL","idempotency_key":"k-1"}`)
	f.Add(uint8(0), 201, `{"id":"auth_1","status":"declined","amount":100,"currency":"BRL"}`)
	f.Add(uint8(1), 200, `{"id":"auth_1","status":"declined","decline_code":"card_declined","amount":100,"currency":"brl"}`)
	f.Add(uint8(0), 402, `{"id":"auth_1","status":"captured","status":"declined"}`)
	f.Add(uint8(2), 201, `{"id":"rf_1","status":"succeeded","authorization_id":"auth_1","amount":100,"currency":"BRL","idempotency_key":"k-1"}`)
	f.Add(uint8(3), 200, `{"id":"rf_1","status":"declined","decline_code":"exceeds_authorization","authorization_id":"auth_1","amount":100,"currency":"BRL"}`)
	endpoints := []string{EndpointAuthorize, EndpointLookup, EndpointRefund, EndpointRefundLookup}
	f.Fuzz(func(t *testing.T, which uint8, status int, body string) {
		endpoint := endpoints[int(which)%len(endpoints)]
		if endpoint == EndpointRefund || endpoint == EndpointRefundLookup {
			fuzzRefund(t, endpoint, status, body)
			return
		}
		a, err := ReadAuthorization(endpoint, status, []byte(body))
		var m *MismatchError
		switch {
		case err == nil:
			if a.ID == "" || !slices.Contains(answerTable[endpoint][status], a.Status) {
				t.Fatalf("%s %d %q read as %+v", endpoint, status, body, a)
			}
			if CheckTerms(a, "k-1", Request{Amount: 100, Currency: "BRL"}) == nil && (a.Amount != 100 || a.Currency != "BRL" || (a.IdempotencyKey != "" && a.IdempotencyKey != "k-1")) {
				t.Fatalf("terms %+v agreed with 100 BRL under k-1", a)
			}
		case errors.As(err, &m):
			if m.Reason != ReasonStatusPairing || !carriesAnswer(endpoint, status) {
				t.Fatalf("mismatch %+v for %d", m, status)
			}
		case !errors.Is(err, ErrOutcomeUnknown):
			t.Fatalf("an answer read as neither outcome, mismatch nor unknown: %v", err)
		}
	})
}

// fuzzRefund is FuzzAnswer for a refund's endpoint.
func fuzzRefund(t *testing.T, endpoint string, status int, body string) {
	asked := RefundRequest{AuthorizationID: "auth_1", Amount: 100, Currency: "BRL"}
	r, err := ReadRefund(endpoint, status, []byte(body))
	var m *RefundMismatchError
	switch {
	case err == nil:
		if r.ID == "" || !pairs(endpoint, status, r.Status) {
			t.Fatalf("%s %d %q read as %+v", endpoint, status, body, r)
		}
		if CheckRefundTerms(r, "k-1", asked) == nil && (r.Amount != 100 || r.Currency != "BRL" || r.AuthorizationID != "auth_1" || (r.IdempotencyKey != "" && r.IdempotencyKey != "k-1")) {
			t.Fatalf("terms %+v agreed with 100 BRL of auth_1 under k-1", r)
		}
	case errors.As(err, &m):
		if m.Reason != ReasonStatusPairing || !carriesAnswer(endpoint, status) {
			t.Fatalf("mismatch %+v for %d", m, status)
		}
	case !errors.Is(err, ErrOutcomeUnknown):
		t.Fatalf("an answer read as neither outcome, mismatch nor unknown: %v", err)
	}
}

// TestMismatchText: a mismatch says what answered with what, and names an
// HTTP status only where the answer had one.
func TestMismatchText(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{&MismatchError{Reason: ReasonAmount, Endpoint: EndpointAuthorize, HTTPStatus: 201, Stated: Authorization{Status: StatusCaptured}},
			"amount_differs (authorize answered 201 captured)"},
		{&RefundMismatchError{Reason: ReasonAmount, Endpoint: EndpointRefundLookup, Stated: Refund{Status: RefundSucceeded}},
			"amount_differs (refund_lookup answered succeeded)"},
		{&RefundMismatchError{Reason: "entry_disagrees_with_row"}, "entry_disagrees_with_row (answered no status)"},
	} {
		if got := c.err.Error(); !strings.HasSuffix(got, c.want) || strings.Contains(got, "answered 0") {
			t.Errorf("%q, want it to end %q", got, c.want)
		}
	}
}

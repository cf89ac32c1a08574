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
		{"held, asked to capture", func(a *Authorization) { a.Status = StatusAuthorized }, ReasonCapture},
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
	f.Add(uint8(4), 201, `{"id":"cp_1","status":"succeeded","authorization_id":"auth_1","amount":100,"currency":"BRL","final":true,"idempotency_key":"k-1"}`)
	f.Add(uint8(7), 200, `{"id":"vd_1","status":"declined","decline_code":"authorization_closed","authorization_id":"auth_1","amount":0,"currency":"BRL"}`)
	endpoints := []string{EndpointAuthorize, EndpointLookup, EndpointRefund, EndpointRefundLookup,
		EndpointCapture, EndpointCaptureLookup, EndpointVoid, EndpointVoidLookup}
	f.Fuzz(func(t *testing.T, which uint8, status int, body string) {
		endpoint := endpoints[int(which)%len(endpoints)]
		switch endpoint {
		case EndpointRefund, EndpointRefundLookup:
			fuzzAction(t, endpoint, status, body, ReadRefund, func(r Refund) error {
				return CheckRefundTerms(r, "k-1", RefundRequest{AuthorizationID: "auth_1", Amount: 100, Currency: "BRL"})
			})
			return
		case EndpointCapture, EndpointCaptureLookup:
			fuzzAction(t, endpoint, status, body, ReadCapture, func(c Capture) error {
				err := CheckCaptureTerms(c, "k-1", CaptureRequest{AuthorizationID: "auth_1", Amount: 100, Currency: "BRL", Final: true})
				if err == nil && !c.Final {
					t.Fatalf("a capture %+v agreed with a final one", c)
				}
				return err
			})
			return
		case EndpointVoid, EndpointVoidLookup:
			fuzzAction(t, endpoint, status, body, ReadVoid, func(v Void) error {
				err := CheckVoidTerms(v, "k-1", VoidRequest{AuthorizationID: "auth_1", Amount: 100, Currency: "BRL"})
				if err == nil && v.Status == VoidDeclined && v.Amount != 0 {
					t.Fatalf("a declined void %+v that released something agreed", v)
				}
				return err
			})
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

// fuzzAction is FuzzAnswer for an action's endpoint: read reads the
// answer, check checks it against 100 BRL of auth_1 under k-1 (a declined
// void against 0).
func fuzzAction[T action](t *testing.T, endpoint string, status int, body string, read func(string, int, []byte) (T, error), check func(T) error) {
	a, err := read(endpoint, status, []byte(body))
	var m *ActionMismatchError[T]
	switch {
	case err == nil:
		if a.actionID() == "" || !pairs(endpoint, status, a.actionStatus()) {
			t.Fatalf("%s %d %q read as %+v", endpoint, status, body, a)
		}
		want := int64(100)
		if _, ok := any(a).(Void); ok && a.actionStatus() == VoidDeclined {
			want = 0
		}
		if st := a.terms(); check(a) == nil && (st.amount != want || st.currency != "BRL" || st.authorizationID != "auth_1" || (st.key != "" && st.key != "k-1")) {
			t.Fatalf("terms %+v agreed with %d BRL of auth_1 under k-1", a, want)
		}
	case errors.As(err, &m):
		if m.Reason != ReasonStatusPairing || !carriesAnswer(endpoint, status) {
			t.Fatalf("mismatch %+v for %d", m, status)
		}
	case !errors.Is(err, ErrOutcomeUnknown):
		t.Fatalf("an answer read as neither outcome, mismatch nor unknown: %v", err)
	}
}

// TestCheckCaptureTerms: a capture states its terms, the authorization
// and whether it is final, and each must be the one asked.
func TestCheckCaptureTerms(t *testing.T) {
	t.Parallel()
	asked := CaptureRequest{AuthorizationID: "auth_1", Amount: 600, Currency: "BRL"}
	good := Capture{ID: "cp_1", Status: CaptureSucceeded, AuthorizationID: "auth_1", Amount: 600, Currency: "BRL", IdempotencyKey: "k-1"}
	for _, c := range []struct {
		name   string
		change func(*Capture)
		reason string
	}{
		{"agrees", func(*Capture) {}, ""},
		{"a decline with its terms", func(c *Capture) { c.Status, c.DeclineCode = CaptureDeclined, "authorization_closed" }, ""},
		{"more", func(c *Capture) { c.Amount = 6000 }, ReasonAmount},
		{"another currency", func(c *Capture) { c.Currency = "USD" }, ReasonCurrency},
		{"another authorization", func(c *Capture) { c.AuthorizationID = "auth_2" }, ReasonAuthorization},
		{"another key", func(c *Capture) { c.IdempotencyKey = "k-2" }, ReasonKey},
		{"final, asked not", func(c *Capture) { c.Final = true }, ReasonFinal},
		{"no amount", func(c *Capture) { c.Amount = 0 }, ReasonTermsMissing},
	} {
		got := good
		c.change(&got)
		checkReason(t, c.name, CheckCaptureTerms(got, "k-1", asked), c.reason)
	}
	ev := (&CaptureMismatchError{Reason: ReasonFinal, Endpoint: EndpointCapture, HTTPStatus: 201, Stated: good}).Evidence("k-1", asked)
	if want := `"asked":{"authorization_id":"auth_1","amount":600,"currency":"BRL","final":false,"idempotency_key":"k-1"}`; !strings.Contains(string(ev), want) {
		t.Fatalf("evidence %s, want %s in it", ev, want)
	}
}

// TestCheckVoidTerms: a void that succeeded released exactly what was
// asked (what the books hold as remaining); a declined one released
// nothing.
func TestCheckVoidTerms(t *testing.T) {
	t.Parallel()
	asked := VoidRequest{AuthorizationID: "auth_1", Amount: 400, Currency: "BRL"}
	good := Void{ID: "vd_1", Status: VoidSucceeded, AuthorizationID: "auth_1", Amount: 400, Currency: "BRL", IdempotencyKey: "k-1"}
	for _, c := range []struct {
		name   string
		change func(*Void)
		reason string
	}{
		{"agrees", func(*Void) {}, ""},
		{"a decline, nothing released", func(v *Void) { v.Status, v.Amount = VoidDeclined, 0 }, ""},
		{"a decline that released", func(v *Void) { v.Status = VoidDeclined }, ReasonAmount},
		{"released less", func(v *Void) { v.Amount = 300 }, ReasonAmount},
		{"released nothing", func(v *Void) { v.Amount = 0 }, ReasonTermsMissing},
		{"another authorization", func(v *Void) { v.AuthorizationID = "auth_2" }, ReasonAuthorization},
		{"no currency", func(v *Void) { v.Currency = "" }, ReasonTermsMissing},
	} {
		got := good
		c.change(&got)
		checkReason(t, c.name, CheckVoidTerms(got, "k-1", asked), c.reason)
	}
}

// TestAuthorizeOnlyTerms: an authorization asked without its capture must
// come back authorized, not captured; a decline is a decline either way.
func TestAuthorizeOnlyTerms(t *testing.T) {
	t.Parallel()
	no := false
	asked := Request{Amount: 1000, Currency: "BRL", Capture: &no}
	held := Authorization{ID: "auth_1", Status: StatusAuthorized, Amount: 1000, Currency: "BRL"}
	checkReason(t, "authorized", CheckTerms(held, "k-1", asked), "")
	held.Status = StatusCaptured
	checkReason(t, "captured, asked to hold", CheckTerms(held, "k-1", asked), ReasonCapture)
	held.Status = StatusDeclined
	checkReason(t, "declined", CheckTerms(held, "k-1", asked), "")
}

// checkReason: err is nil for no reason, else a mismatch for reason.
func checkReason(t *testing.T, name string, err error, reason string) {
	t.Helper()
	switch {
	case reason == "" && err != nil:
		t.Errorf("%s: %v, want agreement", name, err)
	case reason != "" && (err == nil || !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), reason)):
		t.Errorf("%s: %v, want a mismatch for %s", name, err, reason)
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

package sandbox_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/acquirer/acquirerhttp"
	"github.com/idempotent-payments/idempay/internal/sandbox"
)

// capturing is a fresh sandbox behind a server, on a clock the test moves,
// with call: one request, its status, its body decoded into out.
type capturing struct {
	sb  *sandbox.Server
	now time.Time
	mu  sync.Mutex
	srv *httptest.Server
}

func newCapturing(t *testing.T) *capturing {
	t.Helper()
	c := &capturing{sb: sandbox.New(""), now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	c.sb.Now = func() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
	c.srv = httptest.NewServer(c.sb)
	t.Cleanup(c.srv.Close)
	return c
}

func (c *capturing) advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

func (c *capturing) call(t *testing.T, method, path, key string, body any, out any) int {
	t.Helper()
	var b []byte
	if body != nil {
		b, _ = json.Marshal(body)
	}
	req, _ := http.NewRequest(method, c.srv.URL+path, bytes.NewReader(b))
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
	}
	return resp.StatusCode
}

// authorizeOnly makes an authorization of amount BRL with "capture": false.
func (c *capturing) authorizeOnly(t *testing.T, key string, amount int64) acquirer.Authorization {
	t.Helper()
	no := false
	var auth acquirer.Authorization
	if status := c.call(t, "POST", "/v1/authorizations", key, acquirer.Request{Amount: amount, Currency: "BRL", PaymentMethod: "pm_card_visa", OrderID: "1", Capture: &no}, &auth); status != 201 {
		t.Fatalf("authorize only: %d", status)
	}
	return auth
}

func (c *capturing) capture(t *testing.T, key string, req acquirer.CaptureRequest) (int, acquirer.Capture) {
	t.Helper()
	var got acquirer.Capture
	status := c.call(t, "POST", "/v1/captures", key, req, &got)
	return status, got
}

func (c *capturing) void(t *testing.T, key string, req acquirer.VoidRequest) (int, acquirer.Void) {
	t.Helper()
	var got acquirer.Void
	status := c.call(t, "POST", "/v1/voids", key, req, &got)
	return status, got
}

// TestAuthorizeOnly: "capture": false is answered authorized, with the
// window's expiry; without the member the answer is today's, with no
// expiry; a declined card has none either.
func TestAuthorizeOnly(t *testing.T) {
	t.Parallel()
	c := newCapturing(t)
	auth := c.authorizeOnly(t, "auth-only", 1000)
	if auth.Status != acquirer.StatusAuthorized || !auth.ExpiresAt.Equal(c.now.Add(sandbox.DefaultAuthorizationWindow)) || auth.Amount != 1000 {
		t.Fatalf("authorize only: %+v", auth)
	}
	var captured acquirer.Authorization
	if status := c.call(t, "POST", "/v1/authorizations", "at-once", acquirer.Request{Amount: 1000, Currency: "BRL", PaymentMethod: "pm_card_visa", OrderID: "1"}, &captured); status != 201 ||
		captured.Status != acquirer.StatusCaptured || !captured.ExpiresAt.IsZero() {
		t.Fatalf("captured at once: %d %+v", status, captured)
	}
	no := false
	var declined acquirer.Authorization
	if status := c.call(t, "POST", "/v1/authorizations", "declined", acquirer.Request{Amount: 1000, Currency: "BRL", PaymentMethod: "pm_card_declined", OrderID: "1", Capture: &no}, &declined); status != 402 ||
		declined.Status != acquirer.StatusDeclined || !declined.ExpiresAt.IsZero() {
		t.Fatalf("declined: %d %+v", status, declined)
	}
	if status := c.call(t, "PUT", "/_sandbox/authorization-window", "", map[string]int64{"seconds": 60}, nil); status != 200 {
		t.Fatalf("set the window: %d", status)
	}
	if short := c.authorizeOnly(t, "short-window", 1000); !short.ExpiresAt.Equal(c.now.Add(time.Minute)) {
		t.Fatalf("a window of 60 s: %+v", short)
	}
	for _, body := range []any{map[string]int64{"seconds": 0}, map[string]string{"seconds": "1"}, map[string]int64{"minutes": 1}} {
		if status := c.call(t, "PUT", "/_sandbox/authorization-window", "", body, nil); status != 400 {
			t.Errorf("window %v: %d, want 400", body, status)
		}
	}
}

// TestCapturesAndVoids: partial captures until the authorization is used
// up, one capture per key, a final capture that closes it, a void that
// releases what captures left, and the sandbox's own bounds refusing what
// follows.
func TestCapturesAndVoids(t *testing.T) {
	t.Parallel()
	c := newCapturing(t)
	auth := c.authorizeOnly(t, "auth-1", 1000)
	part := acquirer.CaptureRequest{AuthorizationID: auth.ID, Amount: 600, Currency: "BRL"}
	status, first := c.capture(t, "capture-1", part)
	if status != 201 || first.Status != acquirer.CaptureSucceeded || first.Amount != 600 || first.IdempotencyKey != "capture-1" || first.Final {
		t.Fatalf("a partial capture: %d %+v", status, first)
	}
	if status, again := c.capture(t, "capture-1", part); status != 201 || again != first {
		t.Fatalf("the same key again: %d %+v, want the first", status, again)
	}
	if got, err := c.sb.LookupCapture(t.Context(), "capture-1"); err != nil || got != first {
		t.Fatalf("lookup: %+v %v", got, err)
	}
	if status, over := c.capture(t, "capture-2", part); status != 402 || over.DeclineCode != sandbox.DeclineExceedsAuthorization {
		t.Fatalf("600 more of the 400 left: %d %+v", status, over)
	}
	// A refund is bounded by what was captured, not by the authorization.
	if ref, _ := c.sb.Refund(t.Context(), "refund-1", acquirer.RefundRequest{AuthorizationID: auth.ID, Amount: 700, Currency: "BRL"}); ref.DeclineCode != sandbox.DeclineExceedsAuthorization {
		t.Fatalf("a refund of 700 of 600 captured: %+v", ref)
	}
	if ref, _ := c.sb.Refund(t.Context(), "refund-2", acquirer.RefundRequest{AuthorizationID: auth.ID, Amount: 600, Currency: "BRL"}); ref.Status != acquirer.RefundSucceeded {
		t.Fatalf("a refund of what was captured: %+v", ref)
	}
	final := acquirer.CaptureRequest{AuthorizationID: auth.ID, Amount: 300, Currency: "BRL", Final: true}
	if status, got := c.capture(t, "capture-3", final); status != 201 || !got.Final {
		t.Fatalf("a final capture of 300: %d %+v", status, got)
	}
	if status, got := c.capture(t, "capture-4", acquirer.CaptureRequest{AuthorizationID: auth.ID, Amount: 100, Currency: "BRL"}); status != 402 || got.DeclineCode != sandbox.DeclineAuthorizationClosed {
		t.Fatalf("a capture after the final one: %d %+v", status, got)
	}
	if status, got := c.void(t, "void-1", acquirer.VoidRequest{AuthorizationID: auth.ID, Amount: 100, Currency: "BRL"}); status != 402 || got.DeclineCode != sandbox.DeclineAuthorizationClosed {
		t.Fatalf("a void after the final capture: %d %+v", status, got)
	}
	if got := c.sb.Captured(auth.ID); got != 900 {
		t.Fatalf("captured %d, want 900", got)
	}

	voided := c.authorizeOnly(t, "auth-2", 1000)
	c.capture(t, "capture-5", acquirer.CaptureRequest{AuthorizationID: voided.ID, Amount: 250, Currency: "BRL"})
	status, v := c.void(t, "void-2", acquirer.VoidRequest{AuthorizationID: voided.ID, Amount: 750, Currency: "BRL"})
	if status != 201 || v.Status != acquirer.VoidSucceeded || v.Amount != 750 || v.IdempotencyKey != "void-2" {
		t.Fatalf("a void after a capture of 250: %d %+v", status, v)
	}
	if status, again := c.void(t, "void-2", acquirer.VoidRequest{AuthorizationID: voided.ID, Amount: 750, Currency: "BRL"}); status != 201 || again != v {
		t.Fatalf("the same void again: %d %+v", status, again)
	}
	if status, got := c.capture(t, "capture-6", acquirer.CaptureRequest{AuthorizationID: voided.ID, Amount: 1, Currency: "BRL"}); status != 402 || got.DeclineCode != sandbox.DeclineAuthorizationClosed {
		t.Fatalf("a capture after the void: %d %+v", status, got)
	}
	var list struct {
		Captures []acquirer.Capture `json:"captures"`
	}
	if c.call(t, "GET", "/v1/captures", "", nil, &list); len(list.Captures) != 6 {
		t.Fatalf("%d captures listed, want 6", len(list.Captures))
	}
	var looked acquirer.Void
	if status := c.call(t, "GET", "/v1/voids/void-2", "", nil, &looked); status != 200 || looked != v {
		t.Fatalf("void lookup: %d %+v", status, looked)
	}
	if status := c.call(t, "GET", "/v1/voids/void-9", "", nil, nil); status != 404 {
		t.Fatalf("lookup of a void never asked: %d", status)
	}
}

// TestCaptureDeclines: what no bound turns off (no such authorization, one
// captured at once, another currency), and the window's end; a void of
// what is wholly captured.
func TestCaptureDeclines(t *testing.T) {
	t.Parallel()
	c := newCapturing(t)
	auth := c.authorizeOnly(t, "auth-1", 1000)
	var atOnce acquirer.Authorization
	c.call(t, "POST", "/v1/authorizations", "at-once", acquirer.Request{Amount: 1000, Currency: "BRL", PaymentMethod: "pm_card_visa", OrderID: "1"}, &atOnce)
	for name, tc := range map[string]struct {
		req  acquirer.CaptureRequest
		want string
	}{
		"no such authorization": {acquirer.CaptureRequest{AuthorizationID: "auth_none", Amount: 1, Currency: "BRL"}, sandbox.DeclineNoSuchAuthorization},
		"captured at once":      {acquirer.CaptureRequest{AuthorizationID: atOnce.ID, Amount: 1, Currency: "BRL"}, sandbox.DeclineNotCapturable},
		"another currency":      {acquirer.CaptureRequest{AuthorizationID: auth.ID, Amount: 1, Currency: "USD"}, sandbox.DeclineCurrency},
	} {
		if status, got := c.capture(t, "decline-"+name, tc.req); status != 402 || got.DeclineCode != tc.want {
			t.Errorf("%s: %d %+v, want %s", name, status, got, tc.want)
		}
	}
	c.capture(t, "all", acquirer.CaptureRequest{AuthorizationID: auth.ID, Amount: 1000, Currency: "BRL"})
	if status, got := c.void(t, "void-all", acquirer.VoidRequest{AuthorizationID: auth.ID, Currency: "BRL"}); status != 402 || got.DeclineCode != sandbox.DeclineNothingToRelease {
		t.Fatalf("a void of what is wholly captured: %d %+v", status, got)
	}
	expiring := c.authorizeOnly(t, "auth-2", 1000)
	c.advance(sandbox.DefaultAuthorizationWindow)
	if status, got := c.capture(t, "late", acquirer.CaptureRequest{AuthorizationID: expiring.ID, Amount: 1, Currency: "BRL"}); status != 402 || got.DeclineCode != sandbox.DeclineAuthorizationExpired {
		t.Fatalf("a capture at the window's end: %d %+v", status, got)
	}
	for _, key := range []string{"", "no-body"} {
		if status := c.call(t, "POST", "/v1/captures", key, nil, nil); status != 400 {
			t.Errorf("key %q without a body: %d, want 400", key, status)
		}
	}
}

// TestCaptureBoundOff: with its own bounds off, the sandbox captures
// beyond the authorization and after a void, so that only the service's
// bounds are tested; its record still shows what it did.
func TestCaptureBoundOff(t *testing.T) {
	t.Parallel()
	c := newCapturing(t)
	if status := c.call(t, "PUT", "/_sandbox/capture-bound", "", map[string]bool{"enforced": false}, nil); status != 200 {
		t.Fatalf("bound off: %d", status)
	}
	auth := c.authorizeOnly(t, "auth-1", 1000)
	c.void(t, "void-1", acquirer.VoidRequest{AuthorizationID: auth.ID, Amount: 1000, Currency: "BRL"})
	for i, key := range []string{"over-1", "over-2"} {
		if status, got := c.capture(t, key, acquirer.CaptureRequest{AuthorizationID: auth.ID, Amount: 800, Currency: "BRL"}); status != 201 {
			t.Fatalf("capture %d with the bound off: %d %+v", i, status, got)
		}
	}
	if got := c.sb.Captured(auth.ID); got != 1600 || len(c.sb.Voids()) != 1 {
		t.Fatalf("the sandbox's record: captured %d, %d voids", got, len(c.sb.Voids()))
	}
}

// TestCaptureFaults: the faults of authorizations and refunds apply to
// captures and voids: an injected 500 processes nothing.
func TestCaptureFaults(t *testing.T) {
	t.Parallel()
	c := newCapturing(t)
	auth := c.authorizeOnly(t, "auth-1", 1000)
	c.sb.SetFaults(sandbox.Faults{ErrorRate: 1})
	if status, _ := c.capture(t, "capture-1", acquirer.CaptureRequest{AuthorizationID: auth.ID, Amount: 1, Currency: "BRL"}); status != 500 {
		t.Fatalf("a capture under an error rate of 1: %d", status)
	}
	if status, _ := c.void(t, "void-1", acquirer.VoidRequest{AuthorizationID: auth.ID, Currency: "BRL"}); status != 500 {
		t.Fatalf("a void under an error rate of 1: %d", status)
	}
	if len(c.sb.Captures()) != 0 || len(c.sb.Voids()) != 0 || c.sb.Captured(auth.ID) != 0 {
		t.Fatal("an injected 500 processed the request")
	}
}

// TestCaptureThroughTheClient: the acquirer client captures, voids and
// looks both up on the sandbox, and each answer agrees with what was
// asked (the evidence checks the service will run).
func TestCaptureThroughTheClient(t *testing.T) {
	t.Parallel()
	c := newCapturing(t)
	client, err := acquirerhttp.NewClient(c.srv.URL, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	no := false
	ask := acquirer.Request{Amount: 1000, Currency: "BRL", PaymentMethod: "pm_card_visa", OrderID: "1", Capture: &no}
	auth, err := client.Authorize(ctx, "auth-1", ask)
	if err != nil || acquirer.CheckTerms(auth, "auth-1", ask) != nil || auth.Status != acquirer.StatusAuthorized {
		t.Fatalf("authorize only: %+v, %v", auth, err)
	}
	capture := acquirer.CaptureRequest{AuthorizationID: auth.ID, Amount: 600, Currency: "BRL"}
	got, err := client.Capture(ctx, "capture-1", capture)
	if err != nil || acquirer.CheckCaptureTerms(got, "capture-1", capture) != nil {
		t.Fatalf("capture: %+v, %v", got, err)
	}
	if looked, err := client.LookupCapture(ctx, "capture-1"); err != nil || looked != got {
		t.Fatalf("capture lookup: %+v, %v", looked, err)
	}
	void := acquirer.VoidRequest{AuthorizationID: auth.ID, Amount: 400, Currency: "BRL"}
	v, err := client.Void(ctx, "void-1", void)
	if err != nil || acquirer.CheckVoidTerms(v, "void-1", void) != nil {
		t.Fatalf("void: %+v, %v", v, err)
	}
	if looked, err := client.LookupVoid(ctx, "void-1"); err != nil || looked != v {
		t.Fatalf("void lookup: %+v, %v", looked, err)
	}
	late, err := client.Capture(ctx, "capture-2", acquirer.CaptureRequest{AuthorizationID: auth.ID, Amount: 1, Currency: "BRL"})
	if err != nil || late.Status != acquirer.CaptureDeclined || late.DeclineCode != sandbox.DeclineAuthorizationClosed {
		t.Fatalf("a capture after the void: %+v, %v", late, err)
	}
	if _, err := client.LookupVoid(ctx, "void-2"); !errors.Is(err, acquirer.ErrNotFound) {
		t.Fatalf("a void never asked: %v", err)
	}
}

// TestListsWhileActing: the lists are read under the sandbox's lock while
// actions are made (go test -race).
func TestListsWhileActing(t *testing.T) {
	t.Parallel()
	c := newCapturing(t)
	auth := c.authorizeOnly(t, "auth-1", 1000)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			key := "action-" + string(rune('a'+i))
			c.sb.Capture(t.Context(), key, acquirer.CaptureRequest{AuthorizationID: auth.ID, Amount: 1, Currency: "BRL"})
			c.sb.Void(t.Context(), key, acquirer.VoidRequest{AuthorizationID: auth.ID, Currency: "BRL"})
			c.sb.Refund(t.Context(), key, acquirer.RefundRequest{AuthorizationID: auth.ID, Amount: 1, Currency: "BRL"})
		})
		wg.Go(func() { _, _, _ = c.sb.Captures(), c.sb.Voids(), c.sb.Refunds() })
	}
	wg.Wait()
	if n := len(c.sb.Captures()) + len(c.sb.Voids()) + len(c.sb.Refunds()); n != 60 {
		t.Fatalf("%d actions listed, want 60", n)
	}
}

package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/httpapi"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/idem/idemtest"
	"github.com/idempotent-payments/idempay/internal/sandbox"
)

// newHandler wires the handler to the memory store and the sandbox acquirer
// in process. The contract over the real stack is tested in internal/localapi.
func newHandler(t testing.TB) (*Handler, *sandbox.Server) {
	t.Helper()
	sb := sandbox.New("")
	acq, err := acquirer.NewClient("http://sandbox.invalid", "", sandbox.InProcess(sb))
	if err != nil {
		t.Fatal(err)
	}
	guard := idem.NewGuard(idemtest.NewMemoryStore(), idem.Config{CacheSize: 100})
	return &Handler{Service: charge.NewService(guard, acq, httpapi.Answer, charge.Config{}), AccountClaim: "sub"}, sb
}

func loadEvent(t testing.TB, name string) events.APIGatewayV2HTTPRequest {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	return ev
}

func TestHandleAPIGatewayEvent(t *testing.T) {
	t.Parallel()
	h, sb := newHandler(t)
	ev := loadEvent(t, "create-charge.json")
	first, err := h.Handle(context.Background(), ev)
	if err != nil || first.StatusCode != 201 || first.Headers["Location"] == "" {
		t.Fatalf("first: %+v, %v", first, err)
	}
	again, _ := h.Handle(context.Background(), ev)
	if again.Body != first.Body || again.Headers["Idempotent-Replay"] != "true" {
		t.Fatalf("replay: %+v", again)
	}
	get := ev
	get.RouteKey, get.PathParameters, get.Body = httpapi.RouteGet, map[string]string{"id": strings.TrimPrefix(first.Headers["Location"], "/v1/charges/")}, ""
	got, _ := h.Handle(context.Background(), get)
	if got.StatusCode != 200 || got.Body != first.Body {
		t.Fatalf("get: %+v", got)
	}
	if n := len(sb.Authorizations()); n != 1 {
		t.Fatalf("%d authorizations", n)
	}
}

func TestHandleRouting(t *testing.T) {
	t.Parallel()
	h, _ := newHandler(t)
	for name, tc := range map[string]struct {
		edit   func(*events.APIGatewayV2HTTPRequest)
		status int
	}{
		"no authorizer": {func(ev *events.APIGatewayV2HTTPRequest) { ev.RequestContext.Authorizer = nil }, 401},
		"other claim": {func(ev *events.APIGatewayV2HTTPRequest) {
			ev.RequestContext.Authorizer.JWT.Claims = map[string]string{"email": "a@b"}
		}, 401},
		"unknown route": {func(ev *events.APIGatewayV2HTTPRequest) { ev.RouteKey, ev.RawPath = "$default", "/v1/refunds" }, 404},
		"default route": {func(ev *events.APIGatewayV2HTTPRequest) { ev.RouteKey = "$default" }, 201},
		"default get": {func(ev *events.APIGatewayV2HTTPRequest) {
			ev.RouteKey, ev.RawPath, ev.RequestContext.HTTP.Method = "$default", "/v1/charges/ch_x", "GET"
		}, 404},
		"mixed-case key": {func(ev *events.APIGatewayV2HTTPRequest) {
			delete(ev.Headers, "idempotency-key")
			ev.Headers["Idempotency-Key"] = "mixed-case-key-1"
		}, 201},
		"base64 body": {func(ev *events.APIGatewayV2HTTPRequest) {
			ev.Headers["idempotency-key"], ev.Body, ev.IsBase64Encoded = "base64-key-1", base64.StdEncoding.EncodeToString([]byte(ev.Body)), true
		}, 201},
		"bad base64": {func(ev *events.APIGatewayV2HTTPRequest) { ev.Body, ev.IsBase64Encoded = "!!", true }, 400},
	} {
		ev := loadEvent(t, "create-charge.json")
		ev.Headers["idempotency-key"] = "routing-" + strings.ReplaceAll(name, " ", "-")
		tc.edit(&ev)
		resp, err := h.Handle(context.Background(), ev)
		if err != nil || resp.StatusCode != tc.status {
			t.Errorf("%s: %d %s, %v; want %d", name, resp.StatusCode, resp.Body, err, tc.status)
		}
	}
}

// FuzzHandle: whatever the client controls (key, body, path, claims), the
// handler never panics, never errors and never answers 5xx.
func FuzzHandle(f *testing.F) {
	f.Add("order-123-attempt", `{"amount": 25000, "currency": "BRL", "order_id": "123", "payment_method": "pm_card_visa"}`, "POST", "/v1/charges", "acct_1", false)
	f.Add(`"quoted\"key-1"`, `{"amount": 1, "currency": "JPY", "order_id": "1", "payment_method": "pm_card_declined"}`, "POST", "/v1/charges", "acct_2", false)
	f.Add("", "{", "GET", "/v1/charges/ch_1", "", true)
	h, _ := newHandler(f)
	f.Fuzz(func(t *testing.T, key, body, method, path, account string, b64 bool) {
		ev := events.APIGatewayV2HTTPRequest{
			RouteKey: "$default", RawPath: path, Body: body, IsBase64Encoded: b64,
			Headers: map[string]string{"idempotency-key": key},
			RequestContext: events.APIGatewayV2HTTPRequestContext{
				HTTP:       events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path},
				Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"sub": account}}},
			},
		}
		resp, err := h.Handle(context.Background(), ev)
		if err != nil || resp.StatusCode >= 500 || resp.StatusCode < 200 {
			t.Fatalf("Handle(key %q, body %q, %s %s, account %q) = %d %s, %v", key, body, method, path, account, resp.StatusCode, resp.Body, err)
		}
	})
}

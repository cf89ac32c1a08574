package httpapi

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idempotent-payments/idempay/internal/acquirer/acquirerhttp"
	"github.com/idempotent-payments/idempay/internal/capture/capturetest"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/event"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/idem/idemtest"
	"github.com/idempotent-payments/idempay/internal/obs"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/refund"
	"github.com/idempotent-payments/idempay/internal/route"
	"github.com/idempotent-payments/idempay/internal/sandbox"
)

// newHandler wires the handler to the memory store and the sandbox acquirer
// in process. The contract over the real stack is tested in internal/systemtest.
func newHandler(t testing.TB) (*Handler, *sandbox.Server) {
	t.Helper()
	sb := sandbox.New("")
	acq, err := acquirerhttp.NewClient("http://sandbox.invalid", "", sandbox.InProcess(sb))
	if err != nil {
		t.Fatal(err)
	}
	store := idemtest.NewMemoryStore()
	guard := idem.NewGuard(store, idem.Config{CacheSize: 100})
	return handlerOn(guard, acq, charge.Config{}), sb
}

// handlerOn is a handler of the three services on guard, with ledgers
// and balances in memory, sending to acq.
func handlerOn(guard *idem.Guard, acq capturetest.Acquirer, cfg charge.Config) *Handler {
	charges, refunds, captures := capturetest.Services(guard, acq, Render, RenderRefund, RenderCapture, cfg)
	return &Handler{Service: charges, Refunds: refunds, Captures: captures, AccountClaim: "sub"}
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

// refunded is a captured charge's POST answer as its GETs answer it: with
// its figures last, amount_refunded the last of them.
func refunded(postBody string, amount int64) string {
	var ch struct {
		Amount int64 `json:"amount"`
	}
	if err := json.Unmarshal([]byte(postBody), &ch); err != nil {
		panic(err)
	}
	return strings.TrimSuffix(postBody, "}") + `,"amount_captured":` + strconv.FormatInt(ch.Amount, 10) +
		`,"amount_capturable":0,"amount_refunded":` + strconv.FormatInt(amount, 10) + "}"
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
	get.RouteKey, get.PathParameters, get.Body = route.Get, map[string]string{"id": strings.TrimPrefix(first.Headers["Location"], "/v1/charges/")}, ""
	got, _ := h.Handle(context.Background(), get)
	if got.StatusCode != 200 || got.Body != refunded(first.Body, 0) {
		t.Fatalf("get: %+v", got)
	}
	if n := len(sb.Authorizations()); n != 1 {
		t.Fatalf("%d authorizations", n)
	}
	// The ledger row says the charge came over HTTP, with the client's key.
	res := h.Service.Get(context.Background(), "acct_7Hq2", strings.TrimPrefix(first.Headers["Location"], "/v1/charges/"))
	if res.Outcome != op.Found || res.Charge.Source != event.SourceHTTP || res.Charge.IdempotencyKey != ev.Headers["idempotency-key"] {
		t.Fatalf("the row: %s %+v; want source %s and the request's key", res.Outcome, res.Charge, event.SourceHTTP)
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
		"unknown route":     {func(ev *events.APIGatewayV2HTTPRequest) { ev.RouteKey, ev.RawPath = "POST /v1/refunds", "/v1/refunds" }, 404},
		"no $default route": {func(ev *events.APIGatewayV2HTTPRequest) { ev.RouteKey = "$default" }, 404},
		"get of no charge": {func(ev *events.APIGatewayV2HTTPRequest) {
			ev.RouteKey, ev.RawPath, ev.RequestContext.HTTP.Method = route.Get, "/v1/charges/ch_x", "GET"
			ev.PathParameters = map[string]string{"id": "ch_x"}
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

// TestLookupRoute: GET /v1/charges?idempotency_key=K answers the caller's
// charge for K, the key percent-encoded in the raw query string, as the
// client sent it in its Idempotency-Key header (a quoted header's key
// unquoted); another account's key is 404; a query that could mean two
// keys is 400 and reads nothing.
func TestLookupRoute(t *testing.T) {
	t.Parallel()
	h, _ := newHandler(t)
	ctx := context.Background()
	post := func(header string) events.APIGatewayV2HTTPResponse {
		ev := loadEvent(t, "create-charge.json")
		ev.Headers["idempotency-key"] = header
		resp, _ := h.Handle(ctx, ev)
		if resp.StatusCode != 201 {
			t.Fatalf("POST with key %s: %d %s", header, resp.StatusCode, resp.Body)
		}
		return resp
	}
	lookup := func(account, rawQuery string) events.APIGatewayV2HTTPResponse {
		ev := loadEvent(t, "create-charge.json")
		ev.RouteKey, ev.RawPath, ev.RawQueryString, ev.RequestContext.HTTP.Method, ev.Body = route.Lookup, route.ChargesPath, rawQuery, "GET", ""
		ev.RequestContext.Authorizer.JWT.Claims["sub"] = account
		resp, _ := h.Handle(ctx, ev)
		return resp
	}
	plain := post("lookup-plain-1")
	odd := post(`"a&b+c%d,e=f"`) // a quoted key with a comma
	for query, want := range map[string]events.APIGatewayV2HTTPResponse{
		"idempotency_key=lookup-plain-1":        plain,
		"idempotency_key=a%26b%2Bc%25d%2Ce%3Df": odd,
		"idempotency_key=a%26b+c%25d,e=f":       odd, // + and , stand for themselves
		"idempotency_key=%6cookup-plain-1":      plain,
		"idempotency%5Fkey=lookup-plain-1":      plain,
	} {
		got := lookup("acct_7Hq2", query)
		if got.StatusCode != 200 || got.Body != refunded(want.Body, 0) {
			t.Errorf("%s: %d %s, want 200 %s", query, got.StatusCode, got.Body, want.Body)
		}
	}
	for query, status := range map[string]int{
		"":                      400, // IDEMPOTENCY_KEY_MISSING
		"idempotency_key=":      400,
		"idempotency_key=short": 400,
		"idempotency_key=lookup-plain-1&idempotency_key=lookup-plain-1": 400,
		"idempotency_key=lookup-plain-1&idempotency_key=other-key-2":    400,
		"Idempotency_Key=lookup-plain-1":                                400,
		"idempotency_key=lookup-plain-1&expand=true":                    400,
		"idempotency_key=lookup%zzplain":                                400,
		"idempotency_key=never-used-key":                                404,
	} {
		if got := lookup("acct_7Hq2", query); got.StatusCode != status {
			t.Errorf("%q: %d %s, want %d", query, got.StatusCode, got.Body, status)
		}
	}
	if got := lookup("acct_other", "idempotency_key=lookup-plain-1"); got.StatusCode != 404 {
		t.Errorf("another account's key: %d %s, want 404", got.StatusCode, got.Body)
	}
}

// TestMediaTypes: a body is read only when it is announced as JSON, once,
// and not encoded. Refusals write nothing.
func TestMediaTypes(t *testing.T) {
	t.Parallel()
	h, sb := newHandler(t)
	for i, tc := range []struct {
		headers map[string]string
		status  int
	}{
		{map[string]string{"content-type": "application/json"}, 201},
		{map[string]string{"content-type": "application/json; charset=utf-8"}, 201},
		{map[string]string{"content-type": "Application/JSON; Charset=UTF-8"}, 201},
		{map[string]string{"content-type": "application/json; profile=charge"}, 201},
		{map[string]string{"content-type": "application/json", "content-encoding": "identity"}, 201},
		{map[string]string{}, 415},
		{map[string]string{"content-type": ""}, 415},
		{map[string]string{"content-type": "text/plain"}, 415},
		{map[string]string{"content-type": "application/x-www-form-urlencoded"}, 415},
		{map[string]string{"content-type": "application/json; charset=latin1"}, 415},
		{map[string]string{"content-type": "application/json; charset=utf-8; charset=latin1"}, 415},
		{map[string]string{"content-type": "application/json,text/plain"}, 415},
		{map[string]string{"content-type": "application/json", "Content-Type": "text/plain"}, 415},
		{map[string]string{"content-type": "application/jsonx"}, 415},
		{map[string]string{"content-type": "application/json", "content-encoding": "gzip"}, 415},
		{map[string]string{"content-type": "application/json", "content-encoding": "identity,gzip"}, 415},
	} {
		ev := loadEvent(t, "create-charge.json")
		delete(ev.Headers, "content-type")
		for k, v := range tc.headers {
			ev.Headers[k] = v
		}
		ev.Headers["idempotency-key"] = "media-type-key-" + strconv.Itoa(i)
		before := len(sb.Authorizations())
		resp, _ := h.Handle(context.Background(), ev)
		if resp.StatusCode != tc.status {
			t.Errorf("%v: %d %s, want %d", tc.headers, resp.StatusCode, resp.Body, tc.status)
		}
		if tc.status == 415 && (!strings.Contains(resp.Body, `"code":"UNSUPPORTED_MEDIA_TYPE"`) || resp.Headers["Content-Type"] != "application/problem+json" || len(sb.Authorizations()) != before) {
			t.Errorf("%v: %v %s, %d new authorizations", tc.headers, resp.Headers, resp.Body, len(sb.Authorizations())-before)
		}
	}
}

// TestKeyHeaderOnce: a key sent twice is refused however the event carries
// it: joined by API Gateway, or as two spellings of the name. The
// quoted form still works.
func TestKeyHeaderOnce(t *testing.T) {
	t.Parallel()
	h, sb := newHandler(t)
	for name, tc := range map[string]struct {
		headers map[string]string
		status  int
		code    string
	}{
		"joined":         {map[string]string{"idempotency-key": "order-1-try1,order-1-try1"}, 400, "IDEMPOTENCY_KEY_INVALID"},
		"joined, spaced": {map[string]string{"idempotency-key": "order-1-try1, order-1-try1"}, 400, "IDEMPOTENCY_KEY_INVALID"},
		"two spellings":  {map[string]string{"idempotency-key": "order-1-try1", "Idempotency-Key": "order-1-try1"}, 400, "IDEMPOTENCY_KEY_INVALID"},
		"quoted, joined": {map[string]string{"idempotency-key": `"order-1-try1","order-1-try1"`}, 400, "IDEMPOTENCY_KEY_INVALID"},
		"quoted":         {map[string]string{"idempotency-key": `"order-2-try1"`}, 201, ""},
		"quoted, comma":  {map[string]string{"idempotency-key": `"order-3,try1"`}, 201, ""},
		"absent":         {map[string]string{}, 400, "IDEMPOTENCY_KEY_MISSING"},
		"one mixed-case": {map[string]string{"IDEMPOTENCY-KEY": "order-4-try1"}, 201, ""},
	} {
		ev := loadEvent(t, "create-charge.json")
		delete(ev.Headers, "idempotency-key")
		for k, v := range tc.headers {
			ev.Headers[k] = v
		}
		before := len(sb.Authorizations())
		resp, _ := h.Handle(context.Background(), ev)
		if resp.StatusCode != tc.status || tc.code != "" && !strings.Contains(resp.Body, `"code":"`+tc.code+`"`) {
			t.Errorf("%s: %d %s, want %d %s", name, resp.StatusCode, resp.Body, tc.status, tc.code)
		}
		if tc.status != 201 && len(sb.Authorizations()) != before {
			t.Errorf("%s: refused, yet authorized", name)
		}
	}
}

// TestDecodedBodySizeLimit: the 16 KiB limit applies to the body after
// base64 decoding and after the media type checks.
func TestDecodedBodySizeLimit(t *testing.T) {
	t.Parallel()
	h, _ := newHandler(t)
	padded := func(n int) string { // a valid charge of n bytes
		body := `{"amount": 25000, "currency": "BRL", "order_id": "123", "payment_method": "pm_card_visa", "description": ""}`
		return strings.Replace(body, `""`, `"`+strings.Repeat("a", min(500, n-len(body)))+`"`+strings.Repeat(" ", max(0, n-len(body)-500)), 1)
	}
	for i, tc := range []struct {
		size        int
		contentType string
		status      int
	}{
		{charge.MaxBodyBytes, "application/json", 201}, // encoded, 21,848 bytes: the decoded size counts
		{charge.MaxBodyBytes + 1, "application/json", 400},
		{charge.MaxBodyBytes + 1, "text/plain", 415},
	} {
		ev := loadEvent(t, "create-charge.json")
		ev.Headers["idempotency-key"], ev.Headers["content-type"] = "size-limit-key-"+strconv.Itoa(i), tc.contentType
		body := padded(tc.size)
		if len(body) != tc.size {
			t.Fatalf("padded to %d bytes, want %d", len(body), tc.size)
		}
		ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString([]byte(body)), true
		if resp, _ := h.Handle(context.Background(), ev); resp.StatusCode != tc.status {
			t.Errorf("%d bytes as %s: %d %s, want %d", tc.size, tc.contentType, resp.StatusCode, resp.Body, tc.status)
		}
	}
}

// FuzzHandle: whatever the client controls (key, body, path, claims), the
// handler never panics, never errors and never answers 5xx.
func FuzzHandle(f *testing.F) {
	f.Add("order-123-attempt", `{"amount": 25000, "currency": "BRL", "order_id": "123", "payment_method": "pm_card_visa"}`, "POST", "/v1/charges", "", "acct_1", false, "application/json")
	f.Add(`"quoted\"key-1"`, `{"amount": 1, "currency": "JPY", "order_id": "1", "payment_method": "pm_card_declined"}`, "POST", "/v1/charges", "", "acct_2", false, "application/json; charset=utf-8")
	f.Add("", "{", "GET", "/v1/charges/ch_1", "", "", true, "")
	f.Add("order-1-try1,order-1-try1", `{"amount": 1, "AMOUNT": 2}`, "POST", "/v1/charges", "", "acct_3", false, "application/json; charset=latin1")
	f.Add("", "", "GET", "/v1/charges", "idempotency_key=order-123-attempt", "acct_1", false, "")
	f.Add("", "", "GET", "/v1/charges", "idempotency_key=a%26b&idempotency_key=c", "acct_1", false, "")
	h, _ := newHandler(f)
	f.Fuzz(func(t *testing.T, key, body, method, path, query, account string, b64 bool, contentType string) {
		// As API Gateway matches: POST /v1/charges, GET /v1/charges/{id},
		// GET /v1/charges, or a key the handler does not know.
		routeKey, params := method+" "+path, map[string]string(nil)
		if id, ok := strings.CutPrefix(path, route.ChargesPath+"/"); ok && method == "GET" {
			routeKey, params = route.Get, map[string]string{"id": id}
		}
		ev := events.APIGatewayV2HTTPRequest{
			RouteKey: routeKey, PathParameters: params, RawPath: path, RawQueryString: query, Body: body, IsBase64Encoded: b64,
			Headers: map[string]string{"idempotency-key": key, "content-type": contentType},
			RequestContext: events.APIGatewayV2HTTPRequestContext{
				HTTP:       events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path},
				Authorizer: &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"sub": account}}},
			},
		}
		resp, err := h.Handle(context.Background(), ev)
		if err != nil || resp.StatusCode >= 500 || resp.StatusCode < 200 {
			t.Fatalf("Handle(key %q, body %q, %s %s?%s, account %q, %q) = %d %s, %v", key, body, method, path, query, account, contentType, resp.StatusCode, resp.Body, err)
		}
	})
}

// TestEveryOutcomeHasAnAnswer: respond renders every outcome of a charge,
// and respondRefund every outcome of a refund, as a stored answer, a row
// or a problem with the outcome's own code in its operation (op.Codes)
// and its code's status, never INTERNAL, and a detail of what to do.
func TestEveryOutcomeHasAnAnswer(t *testing.T) {
	t.Parallel()
	for _, o := range op.Outcomes() {
		for _, c := range []struct {
			codes op.Codes
			reply reply
		}{
			{charge.Codes, respond(charge.Result{Outcome: o})},
			{refund.Codes, respondRefund(refund.Result{Outcome: o}, "")},
		} {
			code := c.codes.Of(o)
			if o == op.Executed || o == op.Replayed || o == op.Found {
				if code != "" {
					t.Errorf("%s is an answer, with code %q", o, code)
				}
				continue
			}
			var p struct{ Code, Detail string }
			if err := json.Unmarshal(c.reply.Response.Body, &p); err != nil || p.Code != string(code) || forms[code].status != c.reply.Response.StatusCode ||
				c.reply.Response.StatusCode == 500 {
				t.Errorf("%s: %d %s, want code %q", o, c.reply.Response.StatusCode, c.reply.Response.Body, code)
			}
			if p.Detail == "" && o != op.RequestInvalid { // an invalid request's detail is its field errors
				t.Errorf("%s: no detail", o)
			}
		}
	}
}

// TestReplayHeadersAreTheFirstAnswers: the record stores no headers; the
// replay's are rebuilt and equal the first answer's, plus
// Idempotent-Replay, for a captured and a declined charge, from the store
// (no warm cache) as from the cache.
func TestReplayHeadersAreTheFirstAnswers(t *testing.T) {
	t.Parallel()
	for _, cache := range []int{0, 100} {
		sb := sandbox.New("")
		acq, _ := acquirerhttp.NewClient("http://sandbox.invalid", "", sandbox.InProcess(sb))
		h := handlerOn(idem.NewGuard(idemtest.NewMemoryStore(), idem.Config{CacheSize: cache}), acq, charge.Config{})
		for i, body := range []string{
			`{"amount": 100, "currency": "BRL", "order_id": "1", "payment_method": "pm_card_visa"}`,
			`{"amount": 100, "currency": "BRL", "order_id": "1", "payment_method": "pm_card_declined"}`,
		} {
			ev := loadEvent(t, "create-charge.json")
			ev.Body, ev.Headers["idempotency-key"] = body, fmt.Sprintf("replay-headers-%d", i)
			first, _ := h.Handle(context.Background(), ev)
			again, _ := h.Handle(context.Background(), ev)
			want := maps.Clone(first.Headers)
			want["Idempotent-Replay"] = "true"
			if first.StatusCode != again.StatusCode || first.Body != again.Body || !maps.Equal(again.Headers, want) || first.Headers["Content-Type"] == "" {
				t.Fatalf("cache %d, %d: first %d %v, replay %d %v", cache, first.StatusCode, first.StatusCode, first.Headers, again.StatusCode, again.Headers)
			}
		}
	}
}

// TestHealth: the health route needs no token, makes one strongly
// consistent read of the table, and answers 200 or 503 with no body and no
// header beyond what every answer has: an unauthenticated caller learns
// nothing else.
func TestHealth(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ev := events.APIGatewayV2HTTPRequest{RouteKey: route.Health, RawPath: "/health",
		RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: http.MethodGet, Path: "/health"}}}
	for _, tc := range []struct {
		name  string
		store idem.Store
		want  int
	}{
		{"the table answers", idemtest.NewMemoryStore(), http.StatusOK},
		{"the table fails", failingReads{idemtest.NewMemoryStore()}, http.StatusServiceUnavailable},
	} {
		var logs bytes.Buffer
		h := handlerOn(idem.NewGuard(tc.store, idem.Config{}), nil, charge.Config{})
		h.Log = obs.NewLogger(&logs, "INFO")
		resp, err := h.Handle(ctx, ev)
		if err != nil || resp.StatusCode != tc.want || resp.Body != "" || len(resp.Headers) != 0 {
			t.Fatalf("%s: %d %q %v, %v; want %d, no body, no header", tc.name, resp.StatusCode, resp.Body, resp.Headers, err, tc.want)
		}
		if failed := strings.Contains(logs.String(), "injected"); failed != (tc.want != http.StatusOK) {
			t.Fatalf("%s: the error is logged for the operator (and never answered): %t\n%s", tc.name, failed, logs.String())
		}
	}
}

// failingReads is a store whose reads fail.
type failingReads struct{ idem.Store }

func (failingReads) Get(context.Context, string, time.Time) (*idem.Record, error) {
	return nil, errors.New("injected: the table is unreachable")
}

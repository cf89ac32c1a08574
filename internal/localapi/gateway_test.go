package localapi

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/golang-jwt/jwt/v5"
	"github.com/idempotent-payments/idempay/internal/route"
)

// echo is an Invoker that answers 200 with the event it received.
type echo struct {
	last events.APIGatewayV2HTTPRequest
}

func (e *echo) Invoke(_ context.Context, payload []byte) ([]byte, error) {
	if err := json.Unmarshal(payload, &e.last); err != nil {
		return nil, err
	}
	return json.Marshal(events.APIGatewayV2HTTPResponse{StatusCode: 200, Body: "ok"})
}

func newGateway() (*Gateway, *echo) {
	fn := &echo{}
	g := &Gateway{Trust: Trust{Secret: []byte("s3cret")}}
	for _, key := range route.All {
		g.Routes = append(g.Routes, Route{Key: key, Target: fn, Scope: route.Scopes[key]})
	}
	for _, key := range route.Public {
		g.Routes = append(g.Routes, Route{Key: key, Target: fn, Public: true})
	}
	return g, fn
}

// TestGatewayPublicRoutes: a route without the authorizer (route.Public)
// is invoked with no token, or any, and its event carries no authorizer
// context, as API Gateway sends it; every other route still wants one.
func TestGatewayPublicRoutes(t *testing.T) {
	t.Parallel()
	g, fn := newGateway()
	for _, authorization := range []string{"", "Bearer not-a-token"} {
		fn.last = events.APIGatewayV2HTTPRequest{}
		if rec := serve(g, "GET", "/health", authorization, ""); rec.Code != 200 || fn.last.RouteKey != route.Health || fn.last.RequestContext.Authorizer != nil {
			t.Fatalf("GET /health with %q: %d, event %+v", authorization, rec.Code, fn.last.RequestContext)
		}
	}
	if rec := serve(g, "GET", "/v1/charges/ch_abc", "", ""); rec.Code != 401 {
		t.Fatalf("a route with the authorizer, no token: %d", rec.Code)
	}
}

func serve(g *Gateway, method, path, authorization, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, "/", strings.NewReader(body))
	req.URL.Path, req.URL.RawQuery, _ = strings.Cut(path, "?") // set after parsing: the fuzzer's paths need not parse
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	req.Header.Set("Idempotency-Key", "k-12345678")
	rec := httptest.NewRecorder()
	g.ServeHTTP(rec, req)
	return rec
}

func sign(t *testing.T, method jwt.SigningMethod, key any, claims jwt.MapClaims) string {
	t.Helper()
	s, err := jwt.NewWithClaims(method, claims).SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return "Bearer " + s
}

func TestGatewayEvent(t *testing.T) {
	t.Parallel()
	g, fn := newGateway()
	tok, _ := g.Trust.Token("acct_1", time.Minute)
	rec := serve(g, "GET", "/v1/charges/ch_abc", "Bearer "+tok, "")
	if rec.Code != 200 {
		t.Fatalf("status %d", rec.Code)
	}
	ev := fn.last
	if ev.RouteKey != "GET /v1/charges/{id}" || ev.PathParameters["id"] != "ch_abc" || ev.Headers["idempotency-key"] != "k-12345678" ||
		ev.RequestContext.Authorizer.JWT.Claims["sub"] != "acct_1" || ev.Version != "2.0" || ev.RequestContext.HTTP.Method != "GET" {
		t.Fatalf("event: %+v", ev)
	}
	if _, err := json.Marshal(ev.RequestContext.Authorizer.JWT.Claims); err != nil || ev.RequestContext.Authorizer.JWT.Claims["exp"] == "" {
		t.Fatalf("numeric claims not stringified: %v", ev.RequestContext.Authorizer.JWT.Claims)
	}
}

// TestGatewayRejectsBadTokens: every token the deployed JWT authorizer
// would refuse, and every account claim that could name two accounts, is a
// 401 before the function runs.
func TestGatewayRejectsBadTokens(t *testing.T) {
	t.Parallel()
	g, fn := newGateway()
	key := g.Trust.Secret
	now := time.Now()
	exp := now.Add(time.Minute).Unix()
	valid := func(edit func(jwt.MapClaims)) jwt.MapClaims {
		c := jwt.MapClaims{"sub": "acct_1", "exp": exp, "iat": now.Unix(), "iss": DefaultIssuer, "aud": DefaultAudience, "scope": "charges:write charges:read"}
		edit(c)
		return c
	}
	crit := jwt.NewWithClaims(jwt.SigningMethodHS256, valid(func(jwt.MapClaims) {}))
	crit.Header["crit"] = []string{"exp"}
	critToken, _ := crit.SignedString(key)
	for name, auth := range map[string]string{
		"none":           "",
		"not bearer":     "Basic YTpi",
		"garbage":        "Bearer abc.def.ghi",
		"wrong secret":   sign(t, jwt.SigningMethodHS256, []byte("other"), valid(func(jwt.MapClaims) {})),
		"expired":        sign(t, jwt.SigningMethodHS256, key, valid(func(c jwt.MapClaims) { c["exp"] = now.Add(-time.Minute).Unix() })),
		"no expiry":      sign(t, jwt.SigningMethodHS256, key, valid(func(c jwt.MapClaims) { delete(c, "exp") })),
		"alg none":       sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, valid(func(jwt.MapClaims) {})),
		"HS512":          sign(t, jwt.SigningMethodHS512, key, valid(func(jwt.MapClaims) {})),
		"wrong issuer":   sign(t, jwt.SigningMethodHS256, key, valid(func(c jwt.MapClaims) { c["iss"] = "https://evil.example/" })),
		"no issuer":      sign(t, jwt.SigningMethodHS256, key, valid(func(c jwt.MapClaims) { delete(c, "iss") })),
		"wrong audience": sign(t, jwt.SigningMethodHS256, key, valid(func(c jwt.MapClaims) { c["aud"] = "other-api" })),
		"no audience":    sign(t, jwt.SigningMethodHS256, key, valid(func(c jwt.MapClaims) { delete(c, "aud") })),
		"future nbf":     sign(t, jwt.SigningMethodHS256, key, valid(func(c jwt.MapClaims) { c["nbf"] = now.Add(time.Minute).Unix() })),
		"future iat":     sign(t, jwt.SigningMethodHS256, key, valid(func(c jwt.MapClaims) { c["iat"] = now.Add(time.Minute).Unix() })),
		"string iat":     sign(t, jwt.SigningMethodHS256, key, valid(func(c jwt.MapClaims) { c["iat"] = "now" })),
		"crit header":    "Bearer " + critToken,
		"numeric sub":    sign(t, jwt.SigningMethodHS256, key, valid(func(c jwt.MapClaims) { c["sub"] = json.Number("9007199254740993") })),
		"fraction sub":   sign(t, jwt.SigningMethodHS256, key, valid(func(c jwt.MapClaims) { c["sub"] = 1.6 })),
		"empty sub":      sign(t, jwt.SigningMethodHS256, key, valid(func(c jwt.MapClaims) { c["sub"] = "" })),
		"no sub":         sign(t, jwt.SigningMethodHS256, key, valid(func(c jwt.MapClaims) { delete(c, "sub") })),
		"long sub":       sign(t, jwt.SigningMethodHS256, key, valid(func(c jwt.MapClaims) { c["sub"] = strings.Repeat("a", 257) })),
		"control sub":    sign(t, jwt.SigningMethodHS256, key, valid(func(c jwt.MapClaims) { c["sub"] = "acct\n1" })),
		"duplicate sub":  signRaw(key, `{"alg":"HS256","typ":"JWT"}`, fmt.Sprintf(`{"sub":"acct_victim","sub":"acct_1","exp":%d,"iss":%q,"aud":%q}`, exp, DefaultIssuer, DefaultAudience)),
		"duplicate alg":  signRaw(key, `{"alg":"none","alg":"HS256"}`, fmt.Sprintf(`{"sub":"acct_1","exp":%d,"iss":%q,"aud":%q}`, exp, DefaultIssuer, DefaultAudience)),
	} {
		fn.last = events.APIGatewayV2HTTPRequest{}
		if rec := serve(g, "POST", "/v1/charges", auth, "{}"); rec.Code != http.StatusUnauthorized || fn.last.RouteKey != "" {
			t.Errorf("%s: status %d (function ran: %v), want 401", name, rec.Code, fn.last.RouteKey != "")
		}
	}
	if rec := serve(g, "DELETE", "/v1/charges", "", ""); rec.Code != http.StatusNotFound {
		t.Errorf("unknown route: %d", rec.Code)
	}
	good := sign(t, jwt.SigningMethodHS256, key, valid(func(jwt.MapClaims) {}))
	twice := httptest.NewRequest("POST", "/v1/charges", strings.NewReader("{}"))
	twice.Header.Add("Authorization", good)
	twice.Header.Add("Authorization", good)
	rec := httptest.NewRecorder()
	if g.ServeHTTP(rec, twice); rec.Code != http.StatusUnauthorized {
		t.Errorf("two Authorization headers: %d, want 401", rec.Code)
	}
	unkeyed := &Gateway{Routes: g.Routes} // no secret: nothing verifies
	if rec := serve(unkeyed, "POST", "/v1/charges", sign(t, jwt.SigningMethodHS256, []byte{}, valid(func(jwt.MapClaims) {})), "{}"); rec.Code != http.StatusUnauthorized {
		t.Errorf("empty secret: %d, want 401", rec.Code)
	}
	// Accepted: an iat within the skew, an audience list holding ours, a
	// valid token signed with the raw signer (the control of the two above).
	for name, auth := range map[string]string{
		"iat within skew": sign(t, jwt.SigningMethodHS256, key, valid(func(c jwt.MapClaims) { c["iat"] = now.Add(2 * time.Second).Unix() })),
		"audience list":   sign(t, jwt.SigningMethodHS256, key, valid(func(c jwt.MapClaims) { c["aud"] = []string{"other-api", DefaultAudience} })),
		"raw":             signRaw(key, `{"alg":"HS256","typ":"JWT"}`, fmt.Sprintf(`{"sub":"acct_1","exp":%d,"iss":%q,"aud":%q,"scope":"charges:write"}`, exp, DefaultIssuer, DefaultAudience)),
	} {
		if rec := serve(g, "POST", "/v1/charges", auth, "{}"); rec.Code != 200 {
			t.Errorf("%s: status %d, want 200", name, rec.Code)
		}
	}
	// Numeric claims reach the function exactly as written, never rounded.
	serve(g, "POST", "/v1/charges", sign(t, jwt.SigningMethodHS256, key, valid(func(c jwt.MapClaims) { c["tenant"] = json.Number("9007199254740993") })), "{}")
	if got := fn.last.RequestContext.Authorizer.JWT.Claims; got["tenant"] != "9007199254740993" || got["exp"] != fmt.Sprint(exp) {
		t.Errorf("claims %v", got)
	}
}

// signRaw signs header and payload as given, for JSON a library would not write.
func signRaw(key []byte, header, payload string) string {
	enc := base64.RawURLEncoding
	signing := enc.EncodeToString([]byte(header)) + "." + enc.EncodeToString([]byte(payload))
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(signing))
	return "Bearer " + signing + "." + enc.EncodeToString(mac.Sum(nil))
}

// FuzzGateway: any Authorization header, path and body: never a panic, and
// only 401 or 404 unless the token verifies.
func FuzzGateway(f *testing.F) {
	g, _ := newGateway()
	tok, _ := g.Trust.Token("acct_1", time.Hour)
	f.Add(uint8(1), "/v1/charges", "Bearer "+tok, "{}")
	f.Add(uint8(0), "/v1/charges/x", "Bearer "+tok[:len(tok)-2], "")
	f.Add(uint8(0), "/v1/charges//", "Bearer e30.e30.", "")
	methods := []string{"GET", "POST", "PUT", "DELETE"}
	f.Fuzz(func(t *testing.T, m uint8, path, auth, body string) {
		method := methods[int(m)%len(methods)]
		rec := serve(g, method, path, auth, body)
		_, verified := g.verify(auth)
		switch {
		case rec.Code >= 500:
			t.Fatalf("%s %s with %q: %d", method, path, auth, rec.Code)
		case !verified && rec.Code != 401 && rec.Code != 404:
			t.Fatalf("unverified %q reached the function: %d", auth, rec.Code)
		}
	})
}

// TestGatewayClock: tokens are minted and checked by the Trust's clock.
func TestGatewayClock(t *testing.T) {
	t.Parallel()
	at := time.Unix(1_800_000_000, 0)
	minter := Trust{Secret: []byte("s3cret"), Now: func() time.Time { return at }}
	tok, err := minter.Token("acct_1", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		now  time.Time
		want int
	}{
		"at minting":          {at, 200},
		"59 min later":        {at.Add(59 * time.Minute), 200},
		"past exp":            {at.Add(61 * time.Minute), http.StatusUnauthorized},
		"iat 1 min in future": {at.Add(-time.Minute), http.StatusUnauthorized},
	} {
		g, _ := newGateway()
		g.Trust.Now = func() time.Time { return tc.now }
		if rec := serve(g, "POST", "/v1/charges", "Bearer "+tok, "{}"); rec.Code != tc.want {
			t.Errorf("%s: %d, want %d", name, rec.Code, tc.want)
		}
	}
}

// TestGatewayScopes: each route demands its scope, from "scope"
// (separated by U+0020 only) or "scp" (a list), as the deployed authorizer's route
// scopes do: without it the answer is 403 and nothing is invoked.
func TestGatewayScopes(t *testing.T) {
	t.Parallel()
	g, fn := newGateway()
	now := time.Now()
	token := func(extra jwt.MapClaims) string {
		c := jwt.MapClaims{"sub": "acct_1", "exp": now.Add(time.Minute).Unix(), "iat": now.Unix(), "iss": DefaultIssuer, "aud": DefaultAudience}
		for k, v := range extra {
			c[k] = v
		}
		return sign(t, jwt.SigningMethodHS256, g.Trust.Secret, c)
	}
	readOnly := token(jwt.MapClaims{"scope": "charges:read"})
	for _, tc := range []struct {
		name, method, path, auth string
		want                     int
	}{
		{"read-only token, POST", http.MethodPost, route.ChargesPath, readOnly, 403},
		{"read-only token, GET", http.MethodGet, route.Location("ch_1"), readOnly, 200},
		{"no scope, POST", http.MethodPost, route.ChargesPath, token(nil), 403},
		{"no scope, GET", http.MethodGet, route.Location("ch_1"), token(nil), 403},
		{"a longer scope is not the scope", http.MethodPost, route.ChargesPath, token(jwt.MapClaims{"scope": "charges:writer"}), 403},
		{"scp list", http.MethodPost, route.ChargesPath, token(jwt.MapClaims{"scp": []string{"charges:write"}}), 200},
		{"both scopes", http.MethodPost, route.ChargesPath, token(jwt.MapClaims{"scope": "charges:read charges:write"}), 200},
		// RFC 6749 §3.3 separates scopes by U+0020 alone: any other white
		// space joins two names into one token, which no route has.
		{"split by NBSP", http.MethodPost, route.ChargesPath, token(jwt.MapClaims{"scope": "charges:read\u00a0charges:write"}), 403},
		{"split by NBSP, GET", http.MethodGet, route.Location("ch_1"), token(jwt.MapClaims{"scope": "charges:write\u00a0charges:read"}), 403},
		{"split by a tab", http.MethodPost, route.ChargesPath, token(jwt.MapClaims{"scope": "charges:read\tcharges:write"}), 403},
		{"split by a newline", http.MethodGet, route.Location("ch_1"), token(jwt.MapClaims{"scope": "charges:write\ncharges:read"}), 403},
		{"two spaces", http.MethodPost, route.ChargesPath, token(jwt.MapClaims{"scope": "charges:read  charges:write"}), 200},
	} {
		fn.last = events.APIGatewayV2HTTPRequest{}
		if rec := serve(g, tc.method, tc.path, tc.auth, "{}"); rec.Code != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, rec.Code, tc.want)
		} else if tc.want == 403 && fn.last.RouteKey != "" {
			t.Errorf("%s: refused, yet the function was invoked", tc.name)
		}
	}
	tok, err := (Trust{Secret: g.Trust.Secret}).Token("acct_1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range route.All {
		method, _, _ := strings.Cut(key, " ")
		path := route.ChargesPath
		if key == route.Get {
			path = route.Location("ch_1")
		}
		if rec := serve(g, method, path, "Bearer "+tok, "{}"); rec.Code != 200 {
			t.Errorf("Trust.Token on %s: %d, want every route's scope", key, rec.Code)
		}
	}
}

// TestGatewayRoutesAsAPIGateway: what no route takes is API Gateway's 404
// even where ServeMux alone would redirect, say 405 or let GET take HEAD;
// the {id} wildcard reaches the event.
func TestGatewayRoutesAsAPIGateway(t *testing.T) {
	t.Parallel()
	g, fn := newGateway()
	tok, _ := g.Trust.Token("acct_1", time.Minute)
	for _, tc := range []struct{ method, path string }{
		{"HEAD", "/v1/charges/ch_abc"}, {"PUT", "/v1/charges"}, {"POST", "/v1/charges/ch_abc"},
		{"HEAD", "/v1/charges"}, {"GET", "/v1/charges/"}, {"POST", "/v1//charges"}, {"GET", "/v1/charges/a/b"},
		{"POST", "/v1/charges/../charges"}, {"GET", "/"}, {"POST", "//"},
	} {
		if rec := serve(g, tc.method, tc.path, "Bearer "+tok, ""); rec.Code != 404 || !strings.Contains(rec.Body.String(), "Not Found") {
			t.Errorf("%s %s: %d %s, want API Gateway's 404", tc.method, tc.path, rec.Code, rec.Body)
		}
	}
	if rec := serve(g, "POST", "/v1/charges", "Bearer "+tok, "{}"); rec.Code != 200 || fn.last.RouteKey != route.Create || fn.last.PathParameters != nil {
		t.Fatalf("POST: %d, event %+v", rec.Code, fn.last)
	}
	// The lookup's raw query reaches the event as sent.
	const raw = "idempotency_key=a%26b+c&idempotency_key=d"
	if rec := serve(g, "GET", "/v1/charges?"+raw, "Bearer "+tok, ""); rec.Code != 200 || fn.last.RouteKey != route.Lookup || fn.last.RawQueryString != raw {
		t.Fatalf("GET ?%s: %d, event %+v", raw, rec.Code, fn.last)
	}
}

// counting is an echo that counts its invocations.
type counting struct {
	echo
	calls int
}

func (c *counting) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	c.calls++
	return c.echo.Invoke(ctx, payload)
}

// TestGatewayRefusesBodiesAsAPIGateway: a body shorter than its
// Content-Length is 400, one whose event would pass Lambda's 6 MB
// invocation limit is 413, and one that does not arrive within the body
// timeout is 408 with the connection closed; none reaches the function.
func TestGatewayRefusesBodiesAsAPIGateway(t *testing.T) {
	t.Parallel()
	fn := &counting{}
	g := &Gateway{Trust: Trust{Secret: []byte("s3cret")}, BodyTimeout: 300 * time.Millisecond}
	for _, key := range route.All {
		g.Routes = append(g.Routes, Route{Key: key, Target: fn, Scope: route.Scopes[key]})
	}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	tok, _ := g.Trust.Token("acct_1", time.Minute)
	raw := func(contentLength int, body string, closeWrite bool) (string, time.Duration) {
		t.Helper()
		conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "POST /v1/charges HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", tok, contentLength, body)
		if closeWrite {
			conn.(*net.TCPConn).CloseWrite()
		}
		start := time.Now()
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		b, _ := io.ReadAll(conn) // to the end: the gateway closes
		return string(b), time.Since(start)
	}
	if out, _ := raw(100, `{"amount": 1`, true); !strings.HasPrefix(out, "HTTP/1.1 400 ") {
		t.Errorf("a body shorter than its Content-Length: %.60q, want 400", out)
	}
	out, took := raw(100, `{"amount": 1`, false)
	if !strings.HasPrefix(out, "HTTP/1.1 408 ") || took > 2*time.Second {
		t.Errorf("a body that stalls: %.60q after %s, want 408 after the 300 ms timeout, and the connection closed", out, took)
	}
	escapes := strings.Repeat("\x01", 1<<20-100) // 1 MiB that the event writes as \u0001, 6 bytes each
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/charges", strings.NewReader(escapes))
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a body whose event exceeds 6 MB: %d, want 413", resp.StatusCode)
	}
	if fn.calls != 0 {
		t.Fatalf("%d refused bodies reached the function", fn.calls)
	}
}

// TestSampleTokenHasEveryScope: the token `make run` prints carries every
// scope the API's routes require, refunds:write and captures:write
// among them.
func TestSampleTokenHasEveryScope(t *testing.T) {
	t.Parallel()
	if got, want := Scopes(), []string{"charges:write", "charges:read", "refunds:write", "captures:write"}; !slices.Equal(got, want) {
		t.Fatalf("scopes %v, want %v", got, want)
	}
	for _, r := range route.All {
		if !slices.Contains(Scopes(), route.Scopes[r]) {
			t.Errorf("%s's scope %s is not in the sample token", r, route.Scopes[r])
		}
	}
}

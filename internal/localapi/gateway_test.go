package localapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/golang-jwt/jwt/v5"
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
	return &Gateway{Secret: []byte("s3cret"), Routes: []Route{
		{Key: "POST /v1/charges", Target: fn}, {Key: "GET /v1/charges/{id}", Target: fn},
	}}, fn
}

func serve(g *Gateway, method, path, authorization, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, "/", strings.NewReader(body))
	req.URL.Path = path // set after parsing: the fuzzer's paths need not parse
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
	tok, _ := Token(g.Secret, "acct_1", time.Minute)
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

func TestGatewayRejectsBadTokens(t *testing.T) {
	t.Parallel()
	g, _ := newGateway()
	exp := time.Now().Add(time.Minute).Unix()
	for name, auth := range map[string]string{
		"none":         "",
		"not bearer":   "Basic YTpi",
		"garbage":      "Bearer abc.def.ghi",
		"wrong secret": sign(t, jwt.SigningMethodHS256, []byte("other"), jwt.MapClaims{"sub": "a", "exp": exp}),
		"expired":      sign(t, jwt.SigningMethodHS256, g.Secret, jwt.MapClaims{"sub": "a", "exp": time.Now().Add(-time.Minute).Unix()}),
		"no expiry":    sign(t, jwt.SigningMethodHS256, g.Secret, jwt.MapClaims{"sub": "a"}),
		"alg none":     sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, jwt.MapClaims{"sub": "a", "exp": exp}),
		"HS512":        sign(t, jwt.SigningMethodHS512, g.Secret, jwt.MapClaims{"sub": "a", "exp": exp}),
	} {
		if rec := serve(g, "POST", "/v1/charges", auth, "{}"); rec.Code != http.StatusUnauthorized {
			t.Errorf("%s: status %d, want 401", name, rec.Code)
		}
	}
	if rec := serve(g, "DELETE", "/v1/charges", "", ""); rec.Code != http.StatusNotFound {
		t.Errorf("unknown route: %d", rec.Code)
	}
}

// FuzzGateway: any Authorization header, path and body: never a panic, and
// only 401 or 404 unless the token verifies.
func FuzzGateway(f *testing.F) {
	g, _ := newGateway()
	tok, _ := Token(g.Secret, "acct_1", time.Hour)
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

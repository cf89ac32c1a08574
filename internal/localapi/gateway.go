package localapi

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/golang-jwt/jwt/v5"

	"github.com/idempotent-payments/idempay/internal/deploy"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/route"
)

// Invoker runs one function invocation: a *Pool, or anything that behaves
// like one.
type Invoker interface {
	Invoke(ctx context.Context, payload []byte) ([]byte, error)
}

// Route is one route of the HTTP API: API Gateway's "METHOD /path" syntax,
// with {name} path parameters.
type Route struct {
	Key    string
	Target Invoker
	// Scope, when set, must be among the token's scopes (its "scope" claim,
	// separated by U+0020, or "scp"), as the authorizer's route scopes demand.
	Scope string
	// Public routes have no authorizer (route.Public): no token is read,
	// and the event has no authorizer context.
	Public bool
}

// Gateway is a local stand-in for an API Gateway HTTP API with a JWT
// authorizer: it verifies the bearer token as Trust says, copies its claims
// into the authorizer context, and invokes the route's function with the
// payload v2 event it would receive in AWS.
//
// What it refuses before any invocation: a body over MaxBody (413), a body
// shorter than its Content-Length (400), a body that has not arrived
// within BodyTimeout (408), and an event over MaxInvokePayload, Lambda's
// limit for a synchronous invocation (413). In AWS the first is API
// Gateway's own 413; the last reaches Lambda, which refuses the invocation,
// and API Gateway answers a 5xx of its own (docs/api.md, "A client's retry rule").
type Gateway struct {
	Routes []Route
	Trust  Trust
	// MaxBody bounds a request body, as API Gateway does (1 MiB here).
	MaxBody int64
	// BodyTimeout bounds the time a request's body takes to arrive, from
	// the end of its headers (DefaultBodyTimeout): a client that sends part
	// of a body and stalls gets 408 and its connection closed.
	BodyTimeout time.Duration
	// InvokeTimeout bounds one invocation (60 s). A client that hangs up
	// does not cancel its invocation, as in AWS.
	InvokeTimeout time.Duration

	muxOnce sync.Once
	mux     *http.ServeMux
}

// ServeHTTP implements http.Handler: it routes with an http.ServeMux built
// from Routes on first use, API Gateway's route keys being ServeMux
// patterns. Anything no route takes gets API Gateway's 404: a path that is
// not in canonical form (ServeMux would redirect it), a method no route of
// the path has (ServeMux would say 405), and HEAD (ServeMux lets a GET
// route take it, API Gateway does not).
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.muxOnce.Do(func() {
		g.mux = http.NewServeMux()
		g.mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { gatewayError(w, http.StatusNotFound, "Not Found") })
		for _, rt := range g.Routes {
			method, _, _ := strings.Cut(rt.Key, " ")
			g.mux.HandleFunc(rt.Key, func(w http.ResponseWriter, r *http.Request) {
				if r.Method != method {
					gatewayError(w, http.StatusNotFound, "Not Found")
					return
				}
				g.invoke(w, r, rt)
			})
		}
	})
	if !canonical(r.URL.Path) {
		gatewayError(w, http.StatusNotFound, "Not Found")
		return
	}
	g.mux.ServeHTTP(w, r)
}

// canonical reports whether p is a path ServeMux routes as it is rather
// than redirecting: rooted, clean, a trailing slash allowed.
func canonical(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	clean := path.Clean(p)
	if strings.HasSuffix(p, "/") && clean != "/" {
		clean += "/"
	}
	return clean == p
}

// invoke authenticates the caller for route, then invokes its function
// with the event API Gateway would send and writes the function's answer.
func (g *Gateway) invoke(w http.ResponseWriter, r *http.Request, route Route) {
	caller, ok := caller{}, route.Public
	if authorization := r.Header.Values("Authorization"); !ok && len(authorization) == 1 { // two tokens would be two callers
		caller, ok = g.verify(authorization[0])
	}
	if !ok {
		w.Header().Set("WWW-Authenticate", "Bearer")
		gatewayError(w, http.StatusUnauthorized, "Unauthorized")
		return
	}
	if route.Scope != "" && !slices.Contains(caller.scopes, route.Scope) {
		gatewayError(w, http.StatusForbidden, "Forbidden")
		return
	}
	body, status := g.readBody(w, r)
	if status != 0 {
		gatewayError(w, status, http.StatusText(status))
		return
	}
	event := buildEvent(r, route.Key, pathParameters(r, route.Key), caller.claims, body, g.Trust.withDefaults().Now())
	payload, _ := json.Marshal(event)
	if len(payload) > MaxInvokePayload { // the escapes of JSON can make an event 6 times its body
		gatewayError(w, http.StatusRequestEntityTooLarge, http.StatusText(http.StatusRequestEntityTooLarge))
		return
	}
	timeout := g.InvokeTimeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), timeout)
	defer cancel()
	out, err := route.Target.Invoke(ctx, payload)
	if err != nil {
		gatewayError(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(out, &resp); err != nil || resp.StatusCode == 0 {
		gatewayError(w, http.StatusInternalServerError, "Internal Server Error")
		return
	}
	respBody := []byte(resp.Body)
	if resp.IsBase64Encoded {
		if respBody, err = base64.StdEncoding.DecodeString(resp.Body); err != nil {
			gatewayError(w, http.StatusInternalServerError, "Internal Server Error")
			return
		}
	}
	for k, v := range resp.Headers {
		w.Header().Set(k, v)
	}
	w.Header().Set("Apigw-Requestid", event.RequestContext.RequestID)
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(respBody)
}

// MaxInvokePayload is Lambda's limit of a synchronous invocation's
// payload, 6 MB (6,291,456 bytes).
const MaxInvokePayload = 6 << 20

// DefaultBodyTimeout is Gateway.BodyTimeout's default.
const DefaultBodyTimeout = 10 * time.Second

// readBody reads r's body within MaxBody and BodyTimeout, or says which
// status refuses it: 413 over MaxBody, 408 late (the connection is then
// closed), 400 shorter than its Content-Length.
func (g *Gateway) readBody(w http.ResponseWriter, r *http.Request) ([]byte, int) {
	maxBody, timeout := g.MaxBody, g.BodyTimeout
	if maxBody <= 0 {
		maxBody = 1 << 20
	}
	if timeout <= 0 {
		timeout = DefaultBodyTimeout
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(timeout))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err == nil {
		_ = rc.SetReadDeadline(time.Time{}) // the invocation may take longer than the body did
	}
	var tooLarge *http.MaxBytesError
	var netErr net.Error
	switch {
	case err == nil:
		return body, 0
	case errors.As(err, &tooLarge):
		return nil, http.StatusRequestEntityTooLarge
	case errors.As(err, &netErr) && netErr.Timeout():
		w.Header().Set("Connection", "close")
		return nil, http.StatusRequestTimeout
	}
	return nil, http.StatusBadRequest // ended before its Content-Length
}

// pathParameters are the request's values of key's {name} wildcards, as
// ServeMux matched them; nil when key has none.
func pathParameters(r *http.Request, key string) map[string]string {
	var params map[string]string
	for _, seg := range strings.Split(key, "/") {
		if name, ok := strings.CutPrefix(seg, "{"); ok {
			name = strings.TrimSuffix(name, "}")
			if params == nil {
				params = map[string]string{}
			}
			params[name] = r.PathValue(name)
		}
	}
	return params
}

// caller is a verified token: its claims as API Gateway passes them (every
// value a string, numbers exactly as written) and the scopes it grants
// (the values of "scope" separated by U+0020, and of "scp", a string or a
// list).
type caller struct {
	claims map[string]string
	scopes []string
}

// verify checks "Bearer <jwt>" as the deployed JWT authorizer does and
// returns the caller. See Trust for what is refused.
func (g *Gateway) verify(authorization string) (caller, bool) {
	raw, ok := strings.CutPrefix(authorization, "Bearer ")
	if !ok || raw == "" || !strictSegments(raw) {
		return caller{}, false
	}
	t := g.Trust.withDefaults()
	if len(t.Secret) == 0 {
		return caller{}, false // an empty HMAC key would let anyone sign
	}
	claims := jwt.MapClaims{}
	now := t.Now()
	token, err := jwt.NewParser(
		jwt.WithValidMethods([]string{TokenAlgorithm}), jwt.WithExpirationRequired(), jwt.WithTimeFunc(func() time.Time { return now }),
		jwt.WithIssuer(t.Issuer), jwt.WithAudience(t.Audience), jwt.WithJSONNumber(),
	).ParseWithClaims(raw, claims, func(*jwt.Token) (any, error) { return t.Secret, nil })
	if err != nil {
		return caller{}, false
	}
	if _, crit := token.Header["crit"]; crit {
		return caller{}, false // no extension is understood here, so none may be critical (RFC 7515 §4.1.11)
	}
	if iat, present := claims["iat"]; present {
		n, isNumber := iat.(json.Number)
		at, err := n.Float64()
		if !isNumber || err != nil || at > float64(now.Add(IssuedAtSkew).Unix()) {
			return caller{}, false
		}
	}
	if account, isString := claims[t.AccountClaim].(string); !isString || idem.ValidateAccount(account) != nil {
		return caller{}, false // the account: a non-empty string of at most 256 bytes, no controls
	}
	out := caller{claims: make(map[string]string, len(claims))}
	for _, name := range []string{"scope", "scp"} {
		switch v := claims[name].(type) {
		case string:
			out.scopes = append(out.scopes, scopeTokens(v)...)
		case []any:
			for _, s := range v {
				if s, ok := s.(string); ok {
					out.scopes = append(out.scopes, s)
				}
			}
		}
	}
	for k, v := range claims {
		switch v := v.(type) {
		case string:
			out.claims[k] = v
		case json.Number:
			out.claims[k] = v.String()
		default:
			b, _ := json.Marshal(v)
			out.claims[k] = string(b)
		}
	}
	return out, true
}

// scopeTokens splits a "scope" claim into its tokens on U+0020 alone, as
// RFC 6749 §3.3 separates them. AWS documents only that a token must carry
// one of the route's scopes, so this is the strictest reading: any other
// white space (a tab, U+00A0) is part of a token, and such a token matches
// no route's scope.
func scopeTokens(v string) []string {
	var out []string
	for _, s := range strings.Split(v, " ") {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// strictSegments reports whether the token's header and payload are each
// one JSON object with no duplicate member names and valid UTF-8: a claims
// set in which "sub" appears twice means two accounts to two readers.
func strictSegments(raw string) bool {
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		return false
	}
	for _, part := range parts[:2] {
		b, err := base64.RawURLEncoding.DecodeString(part)
		if err != nil || !jsontext.Value(b).IsValid() || jsontext.Value(b).Kind() != '{' {
			return false
		}
	}
	return true
}

// buildEvent makes the payload v2 event API Gateway sends for r.
func buildEvent(r *http.Request, routeKey string, params, claims map[string]string, body []byte, now time.Time) events.APIGatewayV2HTTPRequest {
	headers := map[string]string{}
	for k, v := range r.Header {
		headers[strings.ToLower(k)] = strings.Join(v, ",")
	}
	ev := events.APIGatewayV2HTTPRequest{
		Version:        "2.0",
		RouteKey:       routeKey,
		RawPath:        r.URL.Path,
		RawQueryString: r.URL.RawQuery,
		Headers:        headers,
		PathParameters: params,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey:   routeKey,
			AccountID:  "000000000000",
			Stage:      "$default",
			RequestID:  requestID(),
			APIID:      "local",
			DomainName: r.Host,
			Time:       now.UTC().Format("02/Jan/2006:15:04:05 -0700"),
			TimeEpoch:  now.UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method: r.Method, Path: r.URL.Path, Protocol: r.Proto,
				SourceIP: strings.Split(r.RemoteAddr, ":")[0], UserAgent: r.UserAgent(),
			},
		},
	}
	if claims != nil { // a route with the authorizer
		ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: claims, Scopes: nil},
		}
	}
	if utf8.Valid(body) {
		ev.Body = string(body)
	} else {
		ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
	}
	return ev
}

func requestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func gatewayError(w http.ResponseWriter, status int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, `{"message":%q}`, message)
}

// TokenAlgorithm is the only signature algorithm the local gateway accepts.
// The deployed authorizer verifies the IdP's RS256 tokens against its JWKS;
// HS256 with a shared secret is a local stand-in for that.
const TokenAlgorithm = "HS256"

// IssuedAtSkew is how far in the future a token's iat may be, for clocks
// that disagree.
const IssuedAtSkew = 5 * time.Second

// The issuer and audience the local gateway trusts unless told otherwise
// (LOCAL_JWT_ISSUER and LOCAL_JWT_AUDIENCE for `make run`).
const (
	DefaultIssuer   = "idempay-local"
	DefaultAudience = "idempay-api"
)

// Trust is what the local gateway checks a bearer token against, standing
// in for the IdP the deployed JWT authorizer trusts. A request is refused
// unless it has exactly one Authorization header with one token signed with
// TokenAlgorithm and a non-empty Secret, no "crit" header, header and
// claims that are strict JSON, iss Issuer, aud holding Audience, exp present
// and not past, nbf (if any) not future, iat (if any) not more than
// IssuedAtSkew in the future, and an AccountClaim that is a non-empty string
// of at most 256 bytes without control characters (idem.ValidateAccount).
type Trust struct {
	Secret []byte
	// Issuer and Audience default to DefaultIssuer and DefaultAudience.
	Issuer, Audience string
	// AccountClaim is the claim that names the account: "sub" by default,
	// as the functions' ACCOUNT_CLAIM.
	AccountClaim string
	// Now is the clock tokens are checked and minted by (time.Now when nil).
	Now func() time.Time
}

// TrustFromEnv is the Trust of `make run` (and of `make send-charge`, which
// mints tokens for it): LOCAL_JWT_SECRET (default "local-dev-secret"),
// LOCAL_JWT_ISSUER and LOCAL_JWT_AUDIENCE (the defaults above), and the
// functions' ACCOUNT_CLAIM ("sub").
func TrustFromEnv(getenv func(string) string) Trust {
	secret := getenv("LOCAL_JWT_SECRET")
	if secret == "" {
		secret = "local-dev-secret"
	}
	return Trust{Secret: []byte(secret), Issuer: getenv("LOCAL_JWT_ISSUER"), Audience: getenv("LOCAL_JWT_AUDIENCE"), AccountClaim: getenv(deploy.EnvAccountClaim)}.withDefaults()
}

func (t Trust) withDefaults() Trust {
	if t.Issuer == "" {
		t.Issuer = DefaultIssuer
	}
	if t.Audience == "" {
		t.Audience = DefaultAudience
	}
	if t.AccountClaim == "" {
		t.AccountClaim = deploy.DefaultAccountClaim
	}
	if t.Now == nil {
		t.Now = time.Now
	}
	return t
}

// Token mints a token this Trust accepts for account (its AccountClaim),
// valid for ttl, with every route's scope (Scopes): what `make run` prints
// and the tests send.
func (t Trust) Token(account string, ttl time.Duration) (string, error) {
	return t.TokenWithScopes(account, ttl, Scopes()...)
}

// Scopes are every scope the API's routes require (route.Scopes), once
// each, in the routes' order.
func Scopes() []string {
	var scopes []string
	for _, r := range route.All {
		if !slices.Contains(scopes, route.Scopes[r]) {
			scopes = append(scopes, route.Scopes[r])
		}
	}
	return scopes
}

// TokenWithScopes is Token with only the scopes given (its "scope" claim).
func (t Trust) TokenWithScopes(account string, ttl time.Duration, scopes ...string) (string, error) {
	t = t.withDefaults()
	now := t.Now()
	return jwt.NewWithClaims(jwt.GetSigningMethod(TokenAlgorithm), jwt.MapClaims{
		t.AccountClaim: account, "iat": now.Unix(), "exp": now.Add(ttl).Unix(), "iss": t.Issuer, "aud": t.Audience,
		"scope": strings.Join(scopes, " "),
	}).SignedString(t.Secret)
}

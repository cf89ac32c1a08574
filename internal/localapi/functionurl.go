package localapi

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/go-json-experiment/json/jsontext"
)

// Principal is one identity the local stack's IAM knows: its static
// credentials and how a function URL's request context names it.
type Principal struct {
	AccessKeyID, SecretAccessKey string
	// ARN is the principal's ARN as IAM policies match it (aws:PrincipalArn):
	// for a role, arn:aws:iam::ACCOUNT:role/NAME.
	ARN string
	// UserARN and UserID are what the request context names the caller
	// with (requestContext.authorizer.iam.userArn and userId; callerId is
	// UserID too): for a role session,
	// arn:aws:sts::ACCOUNT:assumed-role/NAME/SESSION and ROLEID:SESSION.
	UserARN, UserID string
	AccountID       string
}

// FunctionURL is a local stand-in for a Lambda function URL with AuthType
// AWS_IAM, whose function's resource policy admits one principal: it
// authenticates the caller's SigV4 signature, admits Allowed alone, and
// invokes Target with the payload 2.0 event the function receives in AWS,
// then writes the function's answer as Lambda maps it.
//
// A request is authenticated by recomputing its signature with the AWS SDK
// for Go's own signer, over the request rebuilt from the headers it signed,
// so the caller reaches it exactly as it reaches the deployed URL. Each of
// these is 403 {"Message":"Forbidden"}, and nothing is invoked:
//   - not exactly one Authorization header, or one that is not
//     "AWS4-HMAC-SHA256 Credential=KEY/DATE/REGION/lambda/aws4_request,
//     SignedHeaders=a;b, Signature=HEX" as the SDK renders it (names
//     lower-case, sorted, each once; 64 lower-case hex digits);
//   - a signature with another region than Region, or another service
//     than lambda;
//   - not exactly one X-Amz-Date, in the form 20060102T150405Z, within
//     SignatureSkew of Now, on the date of the credential's scope;
//   - SignedHeaders without host or x-amz-date, or naming a header the
//     request does not carry exactly once (a signed header sent twice is a
//     joined value, which could mean two things);
//   - an X-Amz-Security-Token: local principals have static keys only, so
//     no token is one the stack knows;
//   - an access key no Principal has, or that two have (it names no one),
//     or whose Principal has no secret (anyone could sign);
//   - a signed X-Amz-Content-Sha256 that is not the body's SHA-256;
//   - a signature or a signed-header list other than the signer's;
//   - an authenticated principal whose ARN is not Allowed: the resource
//     policy's explicit Deny on aws:PrincipalArn refuses every other one,
//     known or not (an empty Allowed admits no one).
//
// Stricter than AWS, so that the one signature names the one request the
// function sees, these are refused too, 403:
//   - a request target that is not a path (absolute form, "*");
//   - a path not in its canonical escaping (%41 for A, %2F for /): the
//     event's decoded path would make two signed paths one;
//   - a query string that does not parse (url.ParseQuery): the signer
//     would leave the pairs it cannot read unsigned, and the event would
//     carry them;
//   - a path or a query parameter that is not UTF-8 once decoded: the
//     event's JSON would carry it as U+FFFD, making two requests one;
//   - a signed header's value that is not UTF-8, or not as SigV4
//     canonicalizes it (trimmed, never two spaces in a row): two values
//     would sign as one, and the function sees the value.
//
// The SDK's signer never signs User-Agent, X-Amzn-Trace-Id, Expect or
// Transfer-Encoding, so a request that signs one is refused where AWS
// accepts it. Every identity refusal has the one answer, where AWS words
// some differently ("The request signature we calculated does not
// match...").
//
// Before it authenticates the body, a request whose headers pass is
// refused as the local gateway refuses one (Gateway.readBody): 413 for a
// body over MaxBody, 400 for one shorter than its Content-Length, 408 for
// one that has not arrived within BodyTimeout. An event over
// MaxInvokePayload is 413. The function's failure (the Invoker's error,
// an answer that is not JSON, the runtime's error document, an answer
// over MaxInvokePayload, or a statusCode or body Lambda could not map) is
// 502 {"Message":"Internal Server Error"}.
type FunctionURL struct {
	Target Invoker
	// Region is the region of the function URL: a signature's scope must
	// name it.
	Region     string
	Principals []Principal
	// Allowed is the principal ARN the function's resource policy admits;
	// every other principal, known or not, is refused as the Deny refuses it.
	Allowed string
	// AccountID is the function owner's account, requestContext.accountId
	// ("000000000000" when empty, as the gateway's events).
	AccountID string
	// MaxBody bounds a request body: Lambda's synchronous payload limit,
	// MaxInvokePayload, when zero; the event it makes is held to that limit
	// too, its escapes and base64 included.
	MaxBody int64
	// BodyTimeout bounds the time a request's body takes to arrive, from
	// the end of its headers (DefaultBodyTimeout).
	BodyTimeout time.Duration
	// InvokeTimeout bounds one invocation (MaxFunctionTimeout: a function
	// URL waits as long as its function may run). A client that hangs up
	// does not cancel its invocation, as in AWS.
	InvokeTimeout time.Duration
	// Now is the clock signatures are checked by (time.Now when nil).
	Now func() time.Time
}

// SignatureSkew is how far X-Amz-Date may be from the clock, either way,
// as AWS allows.
const SignatureSkew = 5 * time.Minute

// MaxFunctionTimeout is Lambda's longest function timeout, and
// FunctionURL.InvokeTimeout's default.
const MaxFunctionTimeout = 15 * time.Minute

// SigV4Algorithm is the only signing algorithm a FunctionURL accepts.
const SigV4Algorithm = "AWS4-HMAC-SHA256"

const (
	sigV4Service  = "lambda"
	sigV4Terminal = "aws4_request"
	amzDateFormat = "20060102T150405Z"
	scopeFormat   = "20060102"
)

// Why a FunctionURL refuses a request. The caller is told none of them:
// every one answers 403 {"Message":"Forbidden"}.
var (
	errAuthorization  = errors.New("not exactly one Authorization header of AWS4-HMAC-SHA256 in the SDK's form")
	errTarget         = errors.New("request target not a canonical path with a query that parses")
	errNotUTF8        = errors.New("a path or query parameter that is not UTF-8")
	errHeaderValue    = errors.New("a signed header's value not UTF-8, or not as SigV4 canonicalizes it")
	errAmzDate        = errors.New("not exactly one X-Amz-Date of the form 20060102T150405Z")
	errStale          = errors.New("X-Amz-Date more than SignatureSkew from now")
	errScopeDate      = errors.New("credential scope's date is not X-Amz-Date's")
	errRegion         = errors.New("credential scope's region is not the function URL's")
	errService        = errors.New("credential scope's service is not lambda")
	errUnsigned       = errors.New("SignedHeaders lacks host or x-amz-date")
	errSignedHeader   = errors.New("a signed header not sent exactly once")
	errSecurityToken  = errors.New("X-Amz-Security-Token the stack does not know")
	errAccessKey      = errors.New("access key of no principal, of two, or of one without a secret")
	errContentSHA256  = errors.New("X-Amz-Content-Sha256 is not the body's SHA-256")
	errSignature      = errors.New("signature or SignedHeaders other than the signer's")
	errDenied         = errors.New("principal denied by the function's resource policy")
	errFunctionAnswer = errors.New("function's answer is not one Lambda maps to HTTP")
)

// ServeHTTP implements http.Handler: see FunctionURL for what is refused.
func (f *FunctionURL) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	claim, err := f.identify(r)
	if err != nil {
		functionURLError(w, http.StatusForbidden, "Forbidden")
		return
	}
	maxBody := f.MaxBody
	if maxBody <= 0 {
		maxBody = MaxInvokePayload
	}
	body, status := (&Gateway{MaxBody: maxBody, BodyTimeout: f.BodyTimeout}).readBody(w, r)
	if status != 0 {
		functionURLError(w, status, http.StatusText(status))
		return
	}
	caller, err := f.verify(r, claim, body)
	if err != nil {
		functionURLError(w, http.StatusForbidden, "Forbidden")
		return
	}
	event := f.event(r, caller, body, claim.query)
	payload, _ := json.Marshal(event)
	if len(payload) > MaxInvokePayload {
		functionURLError(w, http.StatusRequestEntityTooLarge, http.StatusText(http.StatusRequestEntityTooLarge))
		return
	}
	timeout := f.InvokeTimeout
	if timeout <= 0 {
		timeout = MaxFunctionTimeout
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), timeout)
	defer cancel()
	out, err := f.Target.Invoke(ctx, payload)
	if err != nil {
		functionURLError(w, http.StatusBadGateway, "Internal Server Error")
		return
	}
	resp, err := functionURLResponse(out)
	if err != nil {
		functionURLError(w, http.StatusBadGateway, "Internal Server Error")
		return
	}
	for k, v := range resp.Headers {
		w.Header().Set(k, v)
	}
	for _, c := range resp.Cookies {
		w.Header().Add("Set-Cookie", c)
	}
	w.Header().Set("X-Amzn-Requestid", event.RequestContext.RequestID)
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(resp.body)
}

// sigV4Claim is what a request's headers say about its signature, checked
// against everything but its body: whose key signed it, when, and what.
type sigV4Claim struct {
	auth      sigV4Authorization
	principal Principal
	signedAt  time.Time
	query     url.Values
}

// identify checks what the request's headers and target say about its
// signature, before its body is read: an unauthenticated caller cannot
// make the stack read a body.
func (f *FunctionURL) identify(r *http.Request) (sigV4Claim, error) {
	values := headerValues(r.Header, "authorization")
	if len(values) != 1 { // two signatures would be two callers
		return sigV4Claim{}, errAuthorization
	}
	auth, ok := parseSigV4Authorization(values[0])
	if !ok {
		return sigV4Claim{}, errAuthorization
	}
	if r.URL.Scheme != "" || r.URL.Host != "" || r.URL.Opaque != "" || !strings.HasPrefix(r.URL.Path, "/") || r.URL.RawPath != "" {
		return sigV4Claim{}, errTarget // not origin form, or escapes that are not the path's canonical ones
	}
	query, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return sigV4Claim{}, errTarget
	}
	if !utf8.ValidString(r.URL.Path) || !validUTF8(query) {
		return sigV4Claim{}, errNotUTF8
	}
	dates := headerValues(r.Header, "x-amz-date")
	if len(dates) != 1 {
		return sigV4Claim{}, errAmzDate
	}
	signedAt, err := time.Parse(amzDateFormat, dates[0])
	if err != nil || signedAt.Format(amzDateFormat) != dates[0] {
		return sigV4Claim{}, errAmzDate
	}
	now := time.Now
	if f.Now != nil {
		now = f.Now
	}
	if skew := now().Sub(signedAt); skew > SignatureSkew || skew < -SignatureSkew {
		return sigV4Claim{}, errStale
	}
	switch {
	case auth.Date != signedAt.Format(scopeFormat):
		return sigV4Claim{}, errScopeDate
	case auth.Region != f.Region:
		return sigV4Claim{}, errRegion
	case auth.Service != sigV4Service:
		return sigV4Claim{}, errService
	case !slices.Contains(auth.SignedHeaders, "host") || !slices.Contains(auth.SignedHeaders, "x-amz-date"):
		return sigV4Claim{}, errUnsigned
	case len(headerValues(r.Header, "x-amz-security-token")) != 0:
		return sigV4Claim{}, errSecurityToken
	}
	for _, name := range auth.SignedHeaders {
		if name == "host" {
			if r.Host == "" || strings.ContainsAny(r.Host, "/?#") {
				return sigV4Claim{}, errSignedHeader
			}
			continue
		}
		values := headerValues(r.Header, name)
		if len(values) != 1 {
			return sigV4Claim{}, errSignedHeader
		}
		if v := values[0]; !utf8.ValidString(v) || strings.TrimSpace(v) != v || strings.Contains(v, "  ") {
			return sigV4Claim{}, errHeaderValue
		}
	}
	var principal Principal
	found := 0
	for _, p := range f.Principals {
		if p.AccessKeyID == auth.AccessKeyID {
			principal, found = p, found+1
		}
	}
	if found != 1 || principal.SecretAccessKey == "" {
		return sigV4Claim{}, errAccessKey
	}
	return sigV4Claim{auth: auth, principal: principal, signedAt: signedAt, query: query}, nil
}

// verify signs the request as its claim says it was signed, with the
// principal's credentials and the SDK's signer, and compares: the request
// is rebuilt from its signed headers alone (Host from r.Host,
// Content-Length from the body), its payload hash is the body's SHA-256.
// It returns the principal if the signature is the signer's and the
// resource policy admits it.
func (f *FunctionURL) verify(r *http.Request, c sigV4Claim, body []byte) (Principal, error) {
	sum := sha256.Sum256(body)
	payloadHash := hex.EncodeToString(sum[:])
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	rebuilt := &http.Request{
		Method: r.Method,
		URL:    &url.URL{Scheme: scheme, Host: r.Host, Path: r.URL.Path, RawQuery: r.URL.RawQuery},
		Host:   r.Host,
		Header: http.Header{},
	}
	for _, name := range c.auth.SignedHeaders {
		switch name {
		case "host":
		case "content-length": // the signer signs the length it is given, never the header
			if r.ContentLength != int64(len(body)) {
				return Principal{}, errSignedHeader
			}
			rebuilt.ContentLength = r.ContentLength
		case "x-amz-content-sha256":
			if v := headerValues(r.Header, name)[0]; v != payloadHash {
				return Principal{}, errContentSHA256
			}
			rebuilt.Header.Set(name, payloadHash)
		default:
			rebuilt.Header[textproto.CanonicalMIMEHeaderKey(name)] = headerValues(r.Header, name)
		}
	}
	creds := aws.Credentials{AccessKeyID: c.principal.AccessKeyID, SecretAccessKey: c.principal.SecretAccessKey}
	if err := v4.NewSigner().SignHTTP(r.Context(), creds, rebuilt, payloadHash, sigV4Service, f.Region, c.signedAt); err != nil {
		return Principal{}, errSignature
	}
	// The received header is in the signer's form (parseSigV4Authorization
	// accepts nothing else), so equal headers are an equal key, scope,
	// signed-header list and signature.
	if subtle.ConstantTimeCompare([]byte(rebuilt.Header.Get("Authorization")), []byte(c.auth.String())) != 1 {
		return Principal{}, errSignature
	}
	if f.Allowed == "" || c.principal.ARN != f.Allowed {
		return Principal{}, errDenied
	}
	return c.principal, nil
}

// validUTF8 reports whether every name and value of q is UTF-8.
func validUTF8(q url.Values) bool {
	for k, vs := range q {
		if !utf8.ValidString(k) {
			return false
		}
		for _, v := range vs {
			if !utf8.ValidString(v) {
				return false
			}
		}
	}
	return true
}

// headerValues are every value of the header name in h, under any case of
// its name: a header sent as X-Amz-Date and x-amz-date is sent twice.
func headerValues(h http.Header, name string) []string {
	var out []string
	for k, v := range h {
		if strings.EqualFold(k, name) {
			out = append(out, v...)
		}
	}
	return out
}

// event makes the payload 2.0 event a function URL sends for r: header
// names lower-case and repeated values joined with commas, Cookie's
// cookies in cookies, repeated query parameters joined with commas, the
// body base64 when it is not UTF-8, and the caller in authorizer.iam.
func (f *FunctionURL) event(r *http.Request, caller Principal, body []byte, query url.Values) events.LambdaFunctionURLRequest {
	headers := map[string]string{"host": r.Host}
	var cookies []string
	for k, v := range r.Header {
		k = strings.ToLower(k)
		if k == "cookie" {
			for _, line := range v {
				for _, c := range strings.Split(line, ";") {
					if c = strings.TrimSpace(c); c != "" {
						cookies = append(cookies, c)
					}
				}
			}
			continue
		}
		if prev, ok := headers[k]; ok { // the same name in two cases, from a hand-made request
			v = append([]string{prev}, v...)
		}
		headers[k] = strings.Join(v, ",")
	}
	var params map[string]string
	for k, v := range query {
		if params == nil {
			params = map[string]string{}
		}
		params[k] = strings.Join(v, ",")
	}
	account := f.AccountID
	if account == "" {
		account = "000000000000"
	}
	sourceIP, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		sourceIP = r.RemoteAddr
	}
	now := time.Now
	if f.Now != nil {
		now = f.Now
	}
	at := now()
	ev := events.LambdaFunctionURLRequest{
		Version:               "2.0",
		RawPath:               r.URL.Path,
		RawQueryString:        r.URL.RawQuery,
		Cookies:               cookies,
		Headers:               headers,
		QueryStringParameters: params,
		RequestContext: events.LambdaFunctionURLRequestContext{
			AccountID: account,
			RequestID: requestID(),
			Authorizer: &events.LambdaFunctionURLRequestContextAuthorizerDescription{
				IAM: &events.LambdaFunctionURLRequestContextAuthorizerIAMDescription{
					AccessKey: caller.AccessKeyID, AccountID: caller.AccountID, CallerID: caller.UserID,
					UserARN: caller.UserARN, UserID: caller.UserID,
				},
			},
			APIID:        "local",
			DomainName:   r.Host,
			DomainPrefix: "local",
			Time:         at.UTC().Format("02/Jan/2006:15:04:05 -0700"),
			TimeEpoch:    at.UnixMilli(),
			HTTP: events.LambdaFunctionURLRequestContextHTTPDescription{
				Method: r.Method, Path: r.URL.Path, Protocol: r.Proto, SourceIP: sourceIP, UserAgent: r.UserAgent(),
			},
		},
	}
	if utf8.Valid(body) {
		ev.Body = string(body)
	} else {
		ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
	}
	return ev
}

// mappedResponse is a function's answer as a function URL writes it.
type mappedResponse struct {
	events.LambdaFunctionURLResponse
	body []byte
}

// functionURLResponse maps a function's answer as Lambda does for a
// function URL: a JSON object with statusCode is the response itself
// (statusCode 100 to 599; a base64 body when isBase64Encoded); any other
// JSON answer is a 200 whose body is the answer as written, with
// Content-Type application/json. Not an answer, and errFunctionAnswer:
// what is not JSON, what is over MaxInvokePayload, and the runtime's
// error document ({"errorMessage", "errorType"} and at most
// "stackTrace"), which the emulator answers with status 200 where Lambda
// flags the invocation as a function error.
func functionURLResponse(out []byte) (mappedResponse, error) {
	if len(out) > MaxInvokePayload || !jsontext.Value(out).IsValid() {
		return mappedResponse{}, errFunctionAnswer
	}
	var members map[string]json.RawMessage
	if jsontext.Value(out).Kind() == '{' {
		if err := json.Unmarshal(out, &members); err != nil {
			return mappedResponse{}, errFunctionAnswer
		}
	}
	if isRuntimeError(members) {
		return mappedResponse{}, errFunctionAnswer
	}
	if _, ok := members["statusCode"]; !ok {
		return mappedResponse{
			LambdaFunctionURLResponse: events.LambdaFunctionURLResponse{StatusCode: http.StatusOK, Headers: map[string]string{"Content-Type": "application/json"}},
			body:                      out,
		}, nil
	}
	var resp mappedResponse
	if err := json.Unmarshal(out, &resp.LambdaFunctionURLResponse); err != nil || resp.StatusCode < 100 || resp.StatusCode > 599 {
		return mappedResponse{}, errFunctionAnswer
	}
	resp.body = []byte(resp.Body)
	if resp.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(resp.Body)
		if err != nil {
			return mappedResponse{}, errFunctionAnswer
		}
		resp.body = b
	}
	return resp, nil
}

// isRuntimeError reports whether an answer's members are those of the
// Lambda runtime's error document.
func isRuntimeError(members map[string]json.RawMessage) bool {
	_, message := members["errorMessage"]
	_, typ := members["errorType"]
	_, trace := members["stackTrace"]
	n := 2
	if trace {
		n++
	}
	return message && typ && len(members) == n
}

func functionURLError(w http.ResponseWriter, status int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, `{"Message":%q}`, message)
}

// sigV4Authorization is an Authorization header of SigV4Algorithm, in the
// one form the SDK's signer renders:
//
//	AWS4-HMAC-SHA256 Credential=KEY/YYYYMMDD/REGION/SERVICE/aws4_request, SignedHeaders=a;b;c, Signature=HEX
type sigV4Authorization struct {
	AccessKeyID     string
	Date            string // YYYYMMDD
	Region, Service string
	SignedHeaders   []string
	Signature       string
}

// parseSigV4Authorization parses h, refusing anything but the SDK's form:
// one space after the algorithm and ", " between the three parts, in this
// order; an access key of 1 to 128 of [A-Za-z0-9_] (IAM's [\w]+); a date
// of 8 digits that is a date; a region and a service of [a-z0-9-]; the
// aws4_request terminal; header names of lower-case token characters,
// sorted, each once; a signature of 64 lower-case hex digits. What it
// accepts, String renders as it was written.
func parseSigV4Authorization(h string) (sigV4Authorization, bool) {
	rest, ok := strings.CutPrefix(h, SigV4Algorithm+" Credential=")
	if !ok {
		return sigV4Authorization{}, false
	}
	credential, rest, ok1 := strings.Cut(rest, ", SignedHeaders=")
	signed, signature, ok2 := strings.Cut(rest, ", Signature=")
	scope := strings.Split(credential, "/")
	if !ok1 || !ok2 || len(scope) != 5 || scope[4] != sigV4Terminal {
		return sigV4Authorization{}, false
	}
	a := sigV4Authorization{AccessKeyID: scope[0], Date: scope[1], Region: scope[2], Service: scope[3], SignedHeaders: strings.Split(signed, ";"), Signature: signature}
	if len(a.AccessKeyID) > 128 || !onlyOf(a.AccessKeyID, isWordByte) || !onlyOf(a.Region, isScopeByte) || !onlyOf(a.Service, isScopeByte) ||
		len(a.Signature) != 64 || !onlyOf(a.Signature, isLowerHex) {
		return sigV4Authorization{}, false
	}
	if d, err := time.Parse(scopeFormat, a.Date); err != nil || d.Format(scopeFormat) != a.Date {
		return sigV4Authorization{}, false
	}
	for i, name := range a.SignedHeaders {
		if !onlyOf(name, isLowerToken) || (i > 0 && name <= a.SignedHeaders[i-1]) {
			return sigV4Authorization{}, false
		}
	}
	return a, true
}

// String renders a as the SDK's signer does.
func (a sigV4Authorization) String() string {
	return SigV4Algorithm + " Credential=" + strings.Join([]string{a.AccessKeyID, a.Date, a.Region, a.Service, sigV4Terminal}, "/") +
		", SignedHeaders=" + strings.Join(a.SignedHeaders, ";") + ", Signature=" + a.Signature
}

// onlyOf reports whether s is non-empty and every byte of it is ok.
func onlyOf(s string, ok func(byte) bool) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

func isScopeByte(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' }

func isLowerHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' }

// isLowerToken reports whether c is an RFC 9110 token character other
// than an upper-case letter.
func isLowerToken(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

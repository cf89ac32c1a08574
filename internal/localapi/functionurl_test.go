package localapi

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// The operator's role is the one principal the function's resource policy
// admits; the charge function's role is known to the stack and refused.
var (
	operatorRole = Principal{
		AccessKeyID: "AKIDLOCALOPERATOR", SecretAccessKey: "operator-secret",
		ARN:     "arn:aws:iam::000000000000:role/idempay-operator",
		UserARN: "arn:aws:sts::000000000000:assumed-role/idempay-operator/alice", UserID: "AROALOCALOPERATOR:alice",
		AccountID: "000000000000",
	}
	chargeRole = Principal{
		AccessKeyID: "AKIDLOCALCHARGE", SecretAccessKey: "charge-secret",
		ARN:     "arn:aws:iam::000000000000:role/idempay-charge",
		UserARN: "arn:aws:sts::000000000000:assumed-role/idempay-charge/fn", UserID: "AROALOCALCHARGE:fn",
		AccountID: "000000000000",
	}
	strangerRole = Principal{AccessKeyID: "AKIDSTRANGER", SecretAccessKey: "stranger-secret", ARN: "arn:aws:iam::111122223333:role/other"}
)

const urlRegion = "eu-west-1"

// urlNow is the clock of the tests' function URLs and their signatures.
var urlNow = time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)

// urlFunction is an Invoker standing in for the function behind a URL: it
// keeps the events it receives and answers answer and err (a 200 "ok"
// when both are nil).
type urlFunction struct {
	mu     sync.Mutex
	events []events.LambdaFunctionURLRequest
	answer []byte
	err    error
}

func (u *urlFunction) Invoke(_ context.Context, payload []byte) ([]byte, error) {
	var ev events.LambdaFunctionURLRequest
	if err := json.Unmarshal(payload, &ev); err != nil {
		return nil, err
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.events = append(u.events, ev)
	if u.answer == nil && u.err == nil {
		return json.Marshal(events.LambdaFunctionURLResponse{StatusCode: 200, Body: "ok"})
	}
	return u.answer, u.err
}

func (u *urlFunction) calls() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.events)
}

func (u *urlFunction) last() events.LambdaFunctionURLRequest {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.events) == 0 {
		return events.LambdaFunctionURLRequest{}
	}
	return u.events[len(u.events)-1]
}

func newFunctionURL() (*FunctionURL, *urlFunction) {
	fn := &urlFunction{}
	return &FunctionURL{
		Target: fn, Region: urlRegion, Principals: []Principal{operatorRole, chargeRole},
		Allowed: operatorRole.ARN, Now: func() time.Time { return urlNow },
	}, fn
}

// signing is how a test's client signs: whose credentials, for which
// region and service, at what time; zero values are the operator, the
// URL's region, lambda and urlNow.
type signing struct {
	creds            aws.Credentials
	region, service  string
	at               time.Time
	payloadHash      string // the body's SHA-256 when empty
	header           http.Header
	edit             func(*http.Request) // the client's request, before it is signed
	afterSigningEdit func(*http.Request) // the server's request, as read off the wire
}

// signedRequest signs a request as a client does with the SDK's signer
// (SignHTTP with the body's hash), writes it as the client would send it
// and reads it back as the server would receive it.
func signedRequest(t testing.TB, method, target, body string, s signing) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, "http://operator.localhost:9000"+target, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range s.header {
		req.Header[k] = v
	}
	if s.edit != nil {
		s.edit(req)
	}
	if s.creds.AccessKeyID == "" {
		s.creds = aws.Credentials{AccessKeyID: operatorRole.AccessKeyID, SecretAccessKey: operatorRole.SecretAccessKey}
	}
	if s.region == "" {
		s.region = urlRegion
	}
	if s.service == "" {
		s.service = "lambda"
	}
	if s.at.IsZero() {
		s.at = urlNow
	}
	if s.payloadHash == "" {
		sum := sha256.Sum256([]byte(body))
		s.payloadHash = hex.EncodeToString(sum[:])
	}
	if err := v4.NewSigner().SignHTTP(context.Background(), s.creds, req, s.payloadHash, s.service, s.region, s.at); err != nil {
		t.Fatal(err)
	}
	srv := overTheWire(t, req)
	if s.afterSigningEdit != nil {
		s.afterSigningEdit(srv)
	}
	return srv
}

// overTheWire writes a client's request and reads it back as a server.
func overTheWire(t testing.TB, req *http.Request) *http.Request {
	t.Helper()
	var wire bytes.Buffer
	if err := req.Write(&wire); err != nil {
		t.Fatal(err)
	}
	srv, err := http.ReadRequest(bufio.NewReader(&wire))
	if err != nil {
		t.Fatal(err)
	}
	srv.RemoteAddr = "192.0.2.7:52000"
	return srv
}

func credsOf(p Principal) aws.Credentials {
	return aws.Credentials{AccessKeyID: p.AccessKeyID, SecretAccessKey: p.SecretAccessKey}
}

// TestFunctionURLEvent: the operator's signed POST with a JSON body and a
// query string reaches the function as the payload 2.0 event a function
// URL sends, its caller in authorizer.iam; the function's status, headers,
// cookies and body come back.
func TestFunctionURLEvent(t *testing.T) {
	t.Parallel()
	f, fn := newFunctionURL()
	fn.answer = []byte(`{"statusCode":201,"headers":{"X-Hold":"released"},"cookies":["a=1","b=2"],"body":"{\"released\":true}"}`)
	const body = `{"hold":"hold_1","reason":"verified by phone"}`
	req := signedRequest(t, http.MethodPost, "/v1/holds/hold_1/release?dry_run=false&note=a%20b&tag=x&tag=y", body, signing{
		header: http.Header{"Cookie": {"session=s1; theme=dark"}, "X-Operator-Ticket": {"T-1"}},
	})
	rec := httptest.NewRecorder()
	f.ServeHTTP(rec, req)
	if rec.Code != 201 || rec.Body.String() != `{"released":true}` || rec.Header().Get("X-Hold") != "released" ||
		strings.Join(rec.Header().Values("Set-Cookie"), " ") != "a=1 b=2" || rec.Header().Get("X-Amzn-Requestid") == "" {
		t.Fatalf("answer: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}
	ev := fn.last()
	iam := ev.RequestContext.Authorizer.IAM
	for _, c := range []struct{ name, got, want string }{
		{"version", ev.Version, "2.0"},
		{"method", ev.RequestContext.HTTP.Method, "POST"},
		{"rawPath", ev.RawPath, "/v1/holds/hold_1/release"},
		{"http.path", ev.RequestContext.HTTP.Path, "/v1/holds/hold_1/release"},
		{"rawQueryString", ev.RawQueryString, "dry_run=false&note=a%20b&tag=x&tag=y"}, // as the signer rewrote and the client sent it
		{"queryStringParameters.note", ev.QueryStringParameters["note"], "a b"},
		{"queryStringParameters.tag", ev.QueryStringParameters["tag"], "x,y"},
		{"body", ev.Body, body},
		{"content-type", ev.Headers["content-type"], "application/json"},
		{"x-operator-ticket", ev.Headers["x-operator-ticket"], "T-1"},
		{"x-amz-date", ev.Headers["x-amz-date"], "20260314T150926Z"},
		{"host", ev.Headers["host"], "operator.localhost:9000"},
		{"cookies", strings.Join(ev.Cookies, "|"), "session=s1|theme=dark"},
		{"cookie header", ev.Headers["cookie"], ""},
		{"userArn", iam.UserARN, operatorRole.UserARN},
		{"userId", iam.UserID, operatorRole.UserID},
		{"callerId", iam.CallerID, operatorRole.UserID},
		{"accessKey", iam.AccessKey, operatorRole.AccessKeyID},
		{"iam.accountId", iam.AccountID, "000000000000"},
		{"accountId", ev.RequestContext.AccountID, "000000000000"},
		{"sourceIp", ev.RequestContext.HTTP.SourceIP, "192.0.2.7"},
		{"protocol", ev.RequestContext.HTTP.Protocol, "HTTP/1.1"},
		{"time", ev.RequestContext.Time, "14/Mar/2026:15:09:26 +0000"},
		{"domainName", ev.RequestContext.DomainName, "operator.localhost:9000"},
	} {
		if c.got != c.want {
			t.Errorf("%s: %q, want %q", c.name, c.got, c.want)
		}
	}
	if ev.IsBase64Encoded || ev.RequestContext.TimeEpoch != urlNow.UnixMilli() || ev.RequestContext.RequestID != rec.Header().Get("X-Amzn-Requestid") {
		t.Errorf("event: %+v", ev)
	}
}

// TestFunctionURLOverHTTP: a client that signs with the SDK's signer and
// sends with net/http, as the operator's tool does, reaches the function
// through a real server: an escaped path, a query string, a binary body
// (base64 in the event), a GET without a body.
func TestFunctionURLOverHTTP(t *testing.T) {
	t.Parallel()
	f, fn := newFunctionURL()
	f.Now = nil // the real clock, as the client's
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	send := func(method, target string, body []byte) *http.Response {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+target, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(body)
		if err := v4.NewSigner().SignHTTP(context.Background(), credsOf(operatorRole), req, hex.EncodeToString(sum[:]), "lambda", urlRegion, time.Now()); err != nil {
			t.Fatal(err)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	binary := []byte{0xff, 0x00, 0xfe, 'x'}
	if resp := send(http.MethodPut, "/v1/holds/a%20b/notes?b=2&a=1&a=0", binary); resp.StatusCode != 200 {
		t.Fatalf("PUT: %d", resp.StatusCode)
	}
	ev := fn.last()
	got, _ := base64.StdEncoding.DecodeString(ev.Body)
	if ev.RawPath != "/v1/holds/a b/notes" || ev.RawQueryString != "a=0&a=1&b=2" || !ev.IsBase64Encoded || !bytes.Equal(got, binary) {
		t.Fatalf("event: path %q query %q body %q base64 %v", ev.RawPath, ev.RawQueryString, ev.Body, ev.IsBase64Encoded)
	}
	if resp := send(http.MethodGet, "/v1/holds", nil); resp.StatusCode != 200 || fn.last().RequestContext.HTTP.Method != "GET" {
		t.Fatalf("GET: %d", resp.StatusCode)
	}
	resp, err := http.Post(srv.URL+"/v1/holds", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 403 || string(b) != `{"Message":"Forbidden"}` || fn.calls() != 2 {
		t.Fatalf("unsigned: %d %s, %d calls", resp.StatusCode, b, fn.calls())
	}
}

// TestFunctionURLRefusals: every request the deployed URL's SigV4 check
// or the resource policy's Deny refuses, and every one whose signature
// could name two requests, is 403 {"Message":"Forbidden"} before the
// function runs, for the reason the case names.
func TestFunctionURLRefusals(t *testing.T) {
	t.Parallel()
	const body = `{"hold":"hold_1"}`
	reRender := func(edit func(*sigV4Authorization)) func(*http.Request) {
		return func(r *http.Request) {
			a, ok := parseSigV4Authorization(r.Header.Get("Authorization"))
			if !ok {
				panic("the signer's header does not parse")
			}
			edit(&a)
			r.Header.Set("Authorization", a.String())
		}
	}
	for _, tc := range []struct {
		name string
		s    signing
		now  time.Time            // urlNow when zero
		edit func(f *FunctionURL) // the function URL's configuration
		want error
	}{
		{name: "no signature", s: signing{afterSigningEdit: func(r *http.Request) { r.Header.Del("Authorization") }}, want: errAuthorization},
		{name: "two Authorization headers", s: signing{afterSigningEdit: func(r *http.Request) { r.Header.Add("Authorization", r.Header.Get("Authorization")) }}, want: errAuthorization},
		{name: "Authorization under two spellings", s: signing{afterSigningEdit: func(r *http.Request) { r.Header["authorization"] = r.Header["Authorization"] }}, want: errAuthorization},
		{name: "Authorization with other spacing", s: signing{afterSigningEdit: func(r *http.Request) {
			r.Header.Set("Authorization", strings.ReplaceAll(r.Header.Get("Authorization"), ", ", ","))
		}}, want: errAuthorization},
		{name: "other algorithm", s: signing{afterSigningEdit: func(r *http.Request) {
			r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256", "AWS4-ECDSA-P256-SHA256", 1))
		}}, want: errAuthorization},
		{name: "tampered body", s: signing{afterSigningEdit: func(r *http.Request) {
			r.Body = io.NopCloser(strings.NewReader(strings.Replace(body, "hold_1", "hold_2", 1)))
		}}, want: errSignature},
		{name: "tampered signed header", s: signing{afterSigningEdit: func(r *http.Request) { r.Header.Set("Content-Type", "text/plain") }}, want: errSignature},
		{name: "signed header sent twice", s: signing{afterSigningEdit: func(r *http.Request) { r.Header.Add("Content-Type", "application/json") }}, want: errSignedHeader},
		{name: "signed header dropped", s: signing{header: http.Header{"X-Operator-Ticket": {"T-1"}}, afterSigningEdit: func(r *http.Request) { r.Header.Del("X-Operator-Ticket") }}, want: errSignedHeader},
		{name: "other known principal", s: signing{creds: credsOf(chargeRole)}, want: errDenied},
		{name: "unknown access key", s: signing{creds: credsOf(strangerRole)}, want: errAccessKey},
		{name: "known key, wrong secret", s: signing{creds: aws.Credentials{AccessKeyID: operatorRole.AccessKeyID, SecretAccessKey: "guess"}}, want: errSignature},
		{name: "stale date", s: signing{at: urlNow.Add(-SignatureSkew - time.Second)}, want: errStale},
		{name: "future date", s: signing{at: urlNow.Add(SignatureSkew + time.Second)}, want: errStale},
		{name: "date not the scope's", s: signing{
			at:               time.Date(2026, 3, 14, 23, 58, 0, 0, time.UTC),
			afterSigningEdit: func(r *http.Request) { r.Header.Set("X-Amz-Date", "20260315T000100Z") },
		}, now: time.Date(2026, 3, 14, 23, 59, 30, 0, time.UTC), want: errScopeDate},
		{name: "missing x-amz-date", s: signing{afterSigningEdit: func(r *http.Request) { r.Header.Del("X-Amz-Date") }}, want: errAmzDate},
		{name: "x-amz-date twice", s: signing{afterSigningEdit: func(r *http.Request) { r.Header.Add("X-Amz-Date", r.Header.Get("X-Amz-Date")) }}, want: errAmzDate},
		{name: "x-amz-date in another form", s: signing{afterSigningEdit: func(r *http.Request) { r.Header.Set("X-Amz-Date", "2026-03-14T15:09:26Z") }}, want: errAmzDate},
		{name: "wrong region", s: signing{region: "us-east-1"}, want: errRegion},
		{name: "wrong service", s: signing{service: "execute-api"}, want: errService},
		{name: "SignedHeaders without host", s: signing{afterSigningEdit: reRender(func(a *sigV4Authorization) {
			a.SignedHeaders = strings.Split(strings.Replace(strings.Join(a.SignedHeaders, ";"), "host;", "", 1), ";")
		})}, want: errUnsigned},
		{name: "SignedHeaders unsorted", s: signing{afterSigningEdit: reRender(func(a *sigV4Authorization) {
			a.SignedHeaders[0], a.SignedHeaders[1] = a.SignedHeaders[1], a.SignedHeaders[0]
		})}, want: errAuthorization},
		{name: "a header the signer never signs", s: signing{afterSigningEdit: reRender(func(a *sigV4Authorization) {
			a.SignedHeaders = append(a.SignedHeaders, "user-agent")
			slices.Sort(a.SignedHeaders)
		})}, want: errSignature},
		{name: "security token", s: signing{creds: aws.Credentials{AccessKeyID: operatorRole.AccessKeyID, SecretAccessKey: operatorRole.SecretAccessKey, SessionToken: "tok"}}, want: errSecurityToken},
		{name: "unsigned payload", s: signing{payloadHash: "UNSIGNED-PAYLOAD", header: http.Header{"X-Amz-Content-Sha256": {"UNSIGNED-PAYLOAD"}}}, want: errContentSHA256},
		{name: "query that does not parse", s: signing{afterSigningEdit: func(r *http.Request) { r.URL.RawQuery = "a=1;b=2" }}, want: errTarget},
		{name: "path not in its canonical escaping", s: signing{edit: func(r *http.Request) { r.URL.Path, r.URL.RawPath = "/v1/holds/A", "/v1/holds/%41" }}, want: errTarget},
		{name: "path not UTF-8", s: signing{edit: func(r *http.Request) { r.URL.Path = "/v1/holds/\x83" }}, want: errNotUTF8},
		{name: "query parameter not UTF-8", s: signing{edit: func(r *http.Request) { r.URL.RawQuery = "note=%ff" }}, want: errNotUTF8},
		{name: "signed value SigV4 canonicalizes", s: signing{header: http.Header{"X-Operator-Ticket": {"T  1"}}}, want: errHeaderValue},
		{name: "signed value not UTF-8", s: signing{header: http.Header{"X-Operator-Ticket": {"T\xff"}}}, want: errHeaderValue},
		{name: "absolute-form target", s: signing{afterSigningEdit: func(r *http.Request) { r.URL.Scheme, r.URL.Host = "http", "elsewhere" }}, want: errTarget},
		{name: "key two principals share", edit: func(f *FunctionURL) {
			f.Principals = append(f.Principals, Principal{AccessKeyID: operatorRole.AccessKeyID, SecretAccessKey: "x", ARN: operatorRole.ARN})
		}, want: errAccessKey},
		{name: "principal without a secret", s: signing{creds: aws.Credentials{AccessKeyID: "AKIDNOSECRET", SecretAccessKey: ""}}, edit: func(f *FunctionURL) {
			f.Principals = append(f.Principals, Principal{AccessKeyID: "AKIDNOSECRET", ARN: operatorRole.ARN})
		}, want: errAccessKey},
		{name: "no principal allowed", edit: func(f *FunctionURL) { f.Allowed = "" }, want: errDenied},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, fn := newFunctionURL()
			if !tc.now.IsZero() {
				f.Now = func() time.Time { return tc.now }
			}
			if tc.edit != nil {
				tc.edit(f)
			}
			rec := httptest.NewRecorder()
			f.ServeHTTP(rec, signedRequest(t, http.MethodPost, "/v1/holds?limit=1", body, tc.s))
			if rec.Code != http.StatusForbidden || rec.Body.String() != `{"Message":"Forbidden"}` || fn.calls() != 0 {
				t.Fatalf("%d %s, %d invocations; want 403 and none", rec.Code, rec.Body, fn.calls())
			}
			if err := refusal(f, signedRequest(t, http.MethodPost, "/v1/holds?limit=1", body, tc.s)); !errors.Is(err, tc.want) {
				t.Fatalf("refused for %v, want %v", err, tc.want)
			}
		})
	}
}

// refusal is why f refuses r, or nil: ServeHTTP's checks, in its order.
func refusal(f *FunctionURL, r *http.Request) error {
	c, err := f.identify(r)
	if err != nil {
		return err
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	_, err = f.verify(r, c, body)
	return err
}

// TestFunctionURLAcceptsUnsignedHeaders: headers added after signing (a
// proxy's, the transport's) neither break the signature nor are dropped
// from the event; the controls of the refusals pass.
func TestFunctionURLAcceptsUnsignedHeaders(t *testing.T) {
	t.Parallel()
	for name, s := range map[string]signing{
		"as signed": {},
		"unsigned header added": {afterSigningEdit: func(r *http.Request) {
			r.Header.Set("X-Forwarded-For", "198.51.100.1")
			r.Header.Set("User-Agent", "idemctl/2")
		}},
		"signed x-amz-content-sha256": {header: http.Header{"X-Amz-Content-Sha256": {sha256Hex(`{"hold":"hold_1"}`)}}},
		"date at the skew's edge":     {at: urlNow.Add(-SignatureSkew)},
		"content-length unsigned":     {edit: func(r *http.Request) { r.ContentLength = -1 }}, // chunked
	} {
		f, fn := newFunctionURL()
		rec := httptest.NewRecorder()
		f.ServeHTTP(rec, signedRequest(t, http.MethodPost, "/v1/holds", `{"hold":"hold_1"}`, s))
		if rec.Code != 200 || fn.calls() != 1 || fn.last().Body != `{"hold":"hold_1"}` {
			t.Errorf("%s: %d %s, %d invocations", name, rec.Code, rec.Body, fn.calls())
		}
		if name == "unsigned header added" && (fn.last().Headers["x-forwarded-for"] != "198.51.100.1" || fn.last().RequestContext.HTTP.UserAgent != "idemctl/2") {
			t.Errorf("%s: headers %v", name, fn.last().Headers)
		}
	}
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestFunctionURLBodyLimits: a signed body over MaxBody is 413, and so is
// one whose event would pass Lambda's 6 MB invocation limit; neither
// reaches the function.
func TestFunctionURLBodyLimits(t *testing.T) {
	t.Parallel()
	f, fn := newFunctionURL()
	f.MaxBody = 1 << 10
	rec := httptest.NewRecorder()
	f.ServeHTTP(rec, signedRequest(t, http.MethodPost, "/v1/holds", strings.Repeat("a", 1<<10+1), signing{}))
	if rec.Code != http.StatusRequestEntityTooLarge || fn.calls() != 0 {
		t.Fatalf("a body over MaxBody: %d, %d invocations; want 413 and none", rec.Code, fn.calls())
	}
	rec = httptest.NewRecorder()
	f.ServeHTTP(rec, signedRequest(t, http.MethodPost, "/v1/holds", strings.Repeat("a", 1<<10), signing{}))
	if rec.Code != 200 || fn.calls() != 1 {
		t.Fatalf("a body of MaxBody: %d, want 200", rec.Code)
	}
	f, fn = newFunctionURL() // MaxBody MaxInvokePayload
	escapes := strings.Repeat("\x01", 1<<20+100)
	rec = httptest.NewRecorder()
	f.ServeHTTP(rec, signedRequest(t, http.MethodPost, "/v1/holds", escapes, signing{}))
	if rec.Code != http.StatusRequestEntityTooLarge || fn.calls() != 0 {
		t.Fatalf("a body whose event exceeds 6 MB: %d, %d invocations; want 413 and none", rec.Code, fn.calls())
	}
}

// TestFunctionURLResponses: the function's answer is written as Lambda
// maps it for a function URL: an object with statusCode as the response,
// any other JSON as a 200 application/json body written as answered, and
// a function's failure as 502.
func TestFunctionURLResponses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                string
		answer              string
		err                 error
		status              int
		body, contentType   string
		header, headerValue string
	}{
		{name: "custom", answer: `{"statusCode":409,"headers":{"Content-Type":"application/problem+json"},"body":"{\"type\":\"held\"}"}`, status: 409, body: `{"type":"held"}`, contentType: "application/problem+json"},
		{name: "base64 body", answer: `{"statusCode":200,"body":"/wA=","isBase64Encoded":true}`, status: 200, body: "\xff\x00"},
		{name: "bare object", answer: `{"message": "Hello, world!"}`, status: 200, body: `{"message": "Hello, world!"}`, contentType: "application/json"},
		{name: "bare string", answer: `"Hello, world!"`, status: 200, body: `"Hello, world!"`, contentType: "application/json"},
		{name: "cookies", answer: `{"statusCode":204,"cookies":["c=1; Max-Age=60"]}`, status: 204, header: "Set-Cookie", headerValue: "c=1; Max-Age=60"},
		{name: "function error", err: errors.New("invoke: function failed"), status: 502, body: `{"Message":"Internal Server Error"}`},
		{name: "runtime error document", answer: `{"errorMessage":"boom","errorType":"errorString"}`, status: 502, body: `{"Message":"Internal Server Error"}`},
		{name: "not JSON", answer: `Task timed out after 3.00 seconds`, status: 502, body: `{"Message":"Internal Server Error"}`},
		{name: "statusCode a string", answer: `{"statusCode":"200","body":"x"}`, status: 502, body: `{"Message":"Internal Server Error"}`},
		{name: "statusCode out of range", answer: `{"statusCode":1000,"body":"x"}`, status: 502, body: `{"Message":"Internal Server Error"}`},
		{name: "bad base64", answer: `{"statusCode":200,"body":"!!","isBase64Encoded":true}`, status: 502, body: `{"Message":"Internal Server Error"}`},
		{name: "over 6 MB", answer: `"` + strings.Repeat("a", MaxInvokePayload) + `"`, status: 502, body: `{"Message":"Internal Server Error"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, fn := newFunctionURL()
			fn.answer, fn.err = []byte(tc.answer), tc.err
			rec := httptest.NewRecorder()
			f.ServeHTTP(rec, signedRequest(t, http.MethodGet, "/v1/holds", "", signing{}))
			if rec.Code != tc.status || rec.Body.String() != tc.body || fn.calls() != 1 {
				t.Fatalf("%d %.80q, want %d %q", rec.Code, rec.Body, tc.status, tc.body)
			}
			if tc.contentType != "" && rec.Header().Get("Content-Type") != tc.contentType {
				t.Errorf("Content-Type %q, want %q", rec.Header().Get("Content-Type"), tc.contentType)
			}
			if tc.header != "" && rec.Header().Get(tc.header) != tc.headerValue {
				t.Errorf("%s %q, want %q", tc.header, rec.Header().Get(tc.header), tc.headerValue)
			}
		})
	}
}

// FuzzFunctionURLAuthorization: any Authorization header: never a panic,
// and what parses renders back as written, so a header the stack accepts
// has one reading, and comparing renderings compares every part.
func FuzzFunctionURLAuthorization(f *testing.F) {
	req := signedRequest(f, http.MethodPost, "/v1/holds?a=1", "{}", signing{header: http.Header{"X-Amz-Content-Sha256": {sha256Hex("{}")}}})
	good := req.Header.Get("Authorization")
	f.Add(good)
	f.Add(strings.ReplaceAll(good, ", ", ","))
	f.Add(strings.Replace(good, "host;", "", 1))
	f.Add(strings.Replace(good, "/lambda/", "//", 1))
	f.Add("AWS4-HMAC-SHA256 Credential=a/20260230/r/s/aws4_request, SignedHeaders=host, Signature=" + strings.Repeat("0", 64))
	f.Add("AWS4-HMAC-SHA256 Credential=a/20260314/r/s/aws4_request, SignedHeaders=host;host, Signature=" + strings.Repeat("0", 64))
	f.Fuzz(func(t *testing.T, h string) {
		a, ok := parseSigV4Authorization(h)
		if !ok {
			return
		}
		if got := a.String(); got != h {
			t.Fatalf("%q parses and renders as %q", h, got)
		}
		if again, ok := parseSigV4Authorization(a.String()); !ok || again.String() != h {
			t.Fatalf("%q does not parse again", h)
		}
	})
}

// FuzzFunctionURLSigned: any method, path, query, body and signed header
// value a client can send, signed by the SDK's signer: the operator's
// reaches the function with the path, query, header and body the client
// sent, unless one of the local refusals' conditions holds (a path not in
// its canonical escaping, a path or query that is not UTF-8, a signed
// value SigV4 would canonicalize); another principal's never does, nor
// the operator's with one byte of its body changed.
func FuzzFunctionURLSigned(f *testing.F) {
	f.Add(uint8(0), "/v1/holds", "a=1&b=2", `{"hold":"hold_1"}`, "T-1", false)
	f.Add(uint8(1), "/v1/holds/a b/%2F", "x=%zz&y=;&y=1", "\xff\x00", " spaced  out ", true)
	f.Add(uint8(2), "/", "", "", "", false)
	f.Add(uint8(3), "/v1/holds/%2F/%41", "", "x", "", false)
	f.Add(uint8(4), "/\x83", "q=%ff", "0", "caf\xc3\xa9\xa0", false)
	methods := []string{http.MethodPost, http.MethodGet, http.MethodPut, http.MethodDelete, http.MethodPatch}
	f.Fuzz(func(t *testing.T, m uint8, path, query, body, note string, other bool) {
		for i := 0; i < len(note); i++ {
			if note[i] < 0x20 || note[i] == 0x7f {
				return // not a header value a client sends
			}
		}
		client, err := http.NewRequest(methods[int(m)%len(methods)], "http://operator.localhost:9000"+path+"?"+query, strings.NewReader(body))
		if err != nil || !strings.HasPrefix(client.URL.EscapedPath(), "/") || client.URL.Host != "operator.localhost:9000" {
			return
		}
		client.Header.Set("X-Operator-Note", note)
		who := operatorRole
		if other {
			who = chargeRole
		}
		if err := v4.NewSigner().SignHTTP(context.Background(), credsOf(who), client, sha256Hex(body), "lambda", urlRegion, urlNow); err != nil {
			t.Fatal(err)
		}
		var wire bytes.Buffer
		if client.Write(&wire) != nil {
			return
		}
		sent := wire.Bytes()
		read := func(b []byte) *http.Request {
			r, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(b)))
			if err != nil {
				t.Skip("not a request a server reads")
			}
			r.RemoteAddr = "192.0.2.7:52000"
			return r
		}
		fu, fn := newFunctionURL()
		r := read(sent)
		received := r.Header.Get("X-Operator-Note")
		rec := httptest.NewRecorder()
		fu.ServeHTTP(rec, r)
		if rec.Code != 200 {
			err := refusal(fu, read(sent))
			why := map[error]bool{
				errDenied:      other,
				errTarget:      r.URL.RawPath != "",
				errNotUTF8:     !utf8.ValidString(r.URL.Path) || !validUTF8(r.URL.Query()),
				errHeaderValue: !utf8.ValidString(received) || strings.TrimSpace(received) != received || strings.Contains(received, "  "),
			}
			if rec.Code != http.StatusForbidden || fn.calls() != 0 || !why[err] {
				t.Fatalf("%s %q signed by %s: %d, %d invocations, refused for %v", client.Method, client.URL.RequestURI(), who.ARN, rec.Code, fn.calls(), err)
			}
			return
		}
		if other {
			t.Fatalf("%s reached the function", who.ARN)
		}
		ev := fn.last()
		got := []byte(ev.Body)
		if ev.IsBase64Encoded {
			got, _ = base64.StdEncoding.DecodeString(ev.Body)
		}
		if !bytes.Equal(got, []byte(body)) || ev.RawQueryString != client.URL.RawQuery || ev.RawPath != client.URL.Path || ev.Headers["x-operator-note"] != received || received != strings.Trim(note, " ") {
			t.Fatalf("event %+v for %q %q %q", ev, client.URL.RequestURI(), body, note)
		}
		if len(body) > 0 { // one byte of the body changed on the way
			tampered := bytes.Clone(sent)
			tampered[len(tampered)-1] ^= 1
			rec := httptest.NewRecorder()
			fu.ServeHTTP(rec, read(tampered))
			if rec.Code != http.StatusForbidden || fn.calls() != 1 {
				t.Fatalf("tampered body answered %d", rec.Code)
			}
		}
	})
}

package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/logging"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/acquirer/acquirerhttp"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/charge/chargetest"
	"github.com/idempotent-payments/idempay/internal/deploy"
	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/dynamo/dynamotest"
	"github.com/idempotent-payments/idempay/internal/httpapi"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/localapi"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/operator"
	"github.com/idempotent-payments/idempay/internal/refund"
	"github.com/idempotent-payments/idempay/internal/sandbox"
)

// binDir holds the functions built for this machine, for the local
// stacks the acting commands' tests start.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "idemctl-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	if err := localapi.BuildFunctions(context.Background(), dir, localapi.Functions...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// body is the charge request of every test's records.
var body = []byte(`{"amount": 100, "currency": "BRL", "order_id": "1", "payment_method": "pm_card_visa"}`)

// shortProtocol is the functions' protocol in these tests (T 200 ms, skew
// 100 ms), and the test's own workers'.
var shortProtocol = idem.Protocol{InTransitBound: 200 * time.Millisecond, ClockSkew: 100 * time.Millisecond, Downstream: localapi.SandboxAcquirerID}

// hostileEnv is an operator's shell that names another acquirer, its
// credential and short protocol times: idemctl reads none of them.
func hostileEnv(otherAcquirerURL string) map[string]string {
	return map[string]string{
		deploy.EnvAcquirerURL: otherAcquirerURL, deploy.EnvAcquirerID: localapi.SandboxAcquirerID, deploy.EnvAcquirerAPIKey: "shell-key",
		deploy.EnvInTransitBound: "1ms", deploy.EnvClockSkew: "1ms", deploy.EnvAcquirerTimeout: "1ms",
	}
}

// lab is a local stack (the functions under the RIE, the operator's
// channel behind its function URL) on a fresh table, with the protocol
// times short, and what a test acts on it with.
type lab struct {
	s *localapi.Stack
	// guard makes the test's own workers: they claim with a short lease
	// and die (a record left in flight), or hold a record.
	guard  *idem.Guard
	ledger *dynamo.Ledger
	// other is another live sandbox acquirer, which an operator's shell
	// could name; otherCalls counts the requests it receives.
	other      *sandbox.Server
	otherURL   string
	otherCalls *atomic.Int64
}

// newLab starts a lab; extra are the functions' environment besides the
// short protocol times, principals the identities the stack's IAM knows
// besides the operator's.
func newLab(t *testing.T, extra []string, principals ...localapi.Principal) lab {
	t.Helper()
	dynamotest.RequireEmulator(t)
	rie := os.Getenv("AWS_LAMBDA_RIE")
	if rie == "" {
		_, file, _, _ := runtime.Caller(0)
		rie = filepath.Join(filepath.Dir(file), "..", "..", "bin", "aws-lambda-rie")
	}
	env := append([]string{deploy.EnvInTransitBound + "=200ms", deploy.EnvClockSkew + "=100ms", deploy.EnvAcquirerTimeout + "=150ms", deploy.EnvLeaseMargin + "=100ms"}, extra...)
	s, err := localapi.StartStack(context.Background(), localapi.StackConfig{
		RIE: rie, BinDir: binDir, TableName: fmt.Sprintf("idemctl-%d", time.Now().UnixNano()), Instances: 2, Env: env,
		GatewayAddr: "127.0.0.1:0", SandboxAddr: "127.0.0.1:0", SweepInterval: -1, Timeout: 3 * time.Second,
		Trust: localapi.Trust{Secret: []byte("idemctl-tests")}, Principals: principals,
		Producers: []localapi.Producer{{Name: "ops", Accounts: []string{"acct_ops"}}},
	})
	if err != nil {
		t.Fatalf("start stack: %v", err)
	}
	t.Cleanup(s.Close)
	other := sandbox.New("")
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		other.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	tbl := dynamo.Open(s.DynamoDB, s.TableName)
	return lab{
		s:      s,
		guard:  idem.NewGuard(tbl.Store(), idem.Config{DefaultLease: 100 * time.Millisecond, Protocol: shortProtocol}),
		ledger: tbl.Ledger(), other: other, otherURL: srv.URL, otherCalls: &calls,
	}
}

// idemctl runs idemctl on l with stdin, in a shell whose environment is
// env plus the table and the operator's channel, with creds as its AWS
// credentials (the SDK's when nil); it returns stdout and stderr.
func (l lab) idemctl(t *testing.T, stdin string, env map[string]string, creds aws.CredentialsProvider, args ...string) (string, string, error) {
	t.Helper()
	return l.idemctlAt(t, time.Now, stdin, env, creds, args...)
}

// idemctlAt is idemctl in a shell whose clock is now.
func (l lab) idemctlAt(t *testing.T, now func() time.Time, stdin string, env map[string]string, creds aws.CredentialsProvider, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	sh := shell{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errOut, now: now,
		getenv: func(k string) string {
			switch k {
			case deploy.EnvTableName:
				return l.s.TableName
			case deploy.EnvOperatorURL:
				return l.s.OperatorURL
			}
			return env[k]
		},
		aws: func(ctx context.Context, region string) (aws.Config, error) {
			cfg, err := loadAWS(ctx, region)
			if creds != nil {
				cfg.Credentials = creds
			}
			return cfg, err
		},
	}
	err := run(context.Background(), args, sh)
	return out.String(), errOut.String(), err
}

// stuck claims key with the test's worker, which dies at once: the record
// is left in flight. It returns the record's downstream key.
func (l lab) stuck(t *testing.T, key string) string {
	t.Helper()
	return l.stuckWith(t, l.guard, key)
}

// stuckWith is stuck with the worker guard's lease and protocol.
func (l lab) stuckWith(t *testing.T, guard *idem.Guard, key string) string {
	t.Helper()
	req, _ := charge.ParseRequest(body, 0)
	c, err := guard.Begin(context.Background(), idem.Scope{Operation: charge.Operation, Account: "acct_ops", Key: key}, req.Canonical())
	if err != nil {
		t.Fatal(err)
	}
	return c.Lease.DownstreamKey()
}

// held makes key's record held after the stack's acquirer charged ten
// times the amount asked under its downstream key (1000 BRL for 100),
// and returns that key.
func (l lab) held(t *testing.T, key string) string {
	t.Helper()
	return l.heldWith(t, l.guard, key)
}

// heldWith is held by a worker of guard's protocol.
func (l lab) heldWith(t *testing.T, guard *idem.Guard, key string) string {
	t.Helper()
	ctx := context.Background()
	req, _ := charge.ParseRequest(body, 0)
	c, err := guard.Begin(ctx, idem.Scope{Operation: charge.Operation, Account: "acct_ops", Key: key}, req.Canonical())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.s.Sandbox.Authorize(ctx, c.Lease.DownstreamKey(), acquirer.Request{Amount: 1000, Currency: "BRL", PaymentMethod: "pm_card_visa", OrderID: "1"}); err != nil {
		t.Fatal(err)
	}
	// The held marker first, as the charge service's hold writes it.
	if err := dynamo.Open(l.s.DynamoDB, l.s.TableName).Ledger().Hold(ctx, charge.ID(c.Lease.DownstreamKey()), charge.HeldMarker{Account: "acct_ops", Key: key}); err != nil {
		t.Fatal(err)
	}
	if err := c.Lease.HoldForOperator(ctx, acquirer.ReasonAmount, []byte(`{"asked":{"amount":100},"answer":{"amount":1000}}`)); err != nil {
		t.Fatal(err)
	}
	return c.Lease.DownstreamKey()
}

func (l lab) record(t *testing.T, key string) *idem.Record {
	t.Helper()
	rec, err := l.guard.Lookup(context.Background(), idem.Scope{Operation: charge.Operation, Account: "acct_ops", Key: key}.PK())
	if errors.Is(err, idem.ErrNotFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// waitOut is past the functions' T + skew.
const waitOut = 500 * time.Millisecond

// TestActingCommands drives the acting commands over the local stack: a
// record left in flight is released only once its lease ended more than
// T + skew ago on the deployment's clock, and only on the person's yes;
// one whose charge the acquirer has is completed by release (which says
// it did not release, and fails) and by reconcile (which succeeds); a held
// record is voided after the wait-out, or accepted with the acquirer's
// terms; each decision records the principal IAM authenticated.
func TestActingCommands(t *testing.T) {
	t.Parallel()
	l := newLab(t, nil)
	ctx := context.Background()
	act := func(stdin string, args ...string) (string, error) {
		out, _, err := l.idemctl(t, stdin, nil, nil, args...)
		return out, err
	}

	// A worker whose lease runs 3 s: the deployment refuses while it runs,
	// and for T + skew after.
	l.stuckWith(t, idem.NewGuard(dynamo.Open(l.s.DynamoDB, l.s.TableName).Store(), idem.Config{DefaultLease: 3 * time.Second, Protocol: shortProtocol}), "stuck-key-1")
	if out, err := act("", "release", "--account", "acct_ops", "--key", "stuck-key-1", "--yes"); err == nil || !strings.Contains(err.Error(), operator.OutcomeNothingToDo) {
		t.Fatalf("a release while the lease runs: %v\n%s", err, out)
	}
	time.Sleep(3*time.Second + waitOut)
	if _, err := act("no\n", "release", "--account", "acct_ops", "--key", "stuck-key-1"); err == nil || l.record(t, "stuck-key-1") == nil {
		t.Fatal("released without the person's yes")
	}
	out, err := act("yes\n", "release", "--account", "acct_ops", "--key", "stuck-key-1")
	if err != nil || !strings.Contains(out, "The acquirer says now: the acquirer has no authorization") || !strings.Contains(out, operator.OutcomeReleased) ||
		!strings.Contains(out, l.s.OperatorPrincipal.UserARN) || l.record(t, "stuck-key-1") != nil {
		t.Fatalf("release: %v\n%s", err, out)
	}

	for i, command := range []string{"release", "reconcile"} {
		key := fmt.Sprintf("charged-key-%d", i)
		dk := l.stuck(t, key)
		auth, err := l.s.Sandbox.Authorize(ctx, dk, acquirer.Request{Amount: 100, Currency: "BRL", PaymentMethod: "pm_card_visa", OrderID: "1"})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(waitOut)
		out, err := act("", command, "--account", "acct_ops", "--key", key, "--yes")
		if !strings.Contains(out, "completed, captured 100 BRL, authorization "+auth.ID) || (err == nil) != (command == "reconcile") {
			t.Fatalf("%s of a charged record: %v\n%s", command, err, out)
		}
		if rec := l.record(t, key); rec == nil || rec.Status != idem.StatusCompleted {
			t.Fatalf("%s: the charged record is %+v; want COMPLETED", command, rec)
		}
	}

	// Held under a T of 3 s (the record's, larger than the deployment's):
	// the void waits the record's out.
	l.heldWith(t, idem.NewGuard(dynamo.Open(l.s.DynamoDB, l.s.TableName).Store(), idem.Config{
		DefaultLease: time.Second, Protocol: idem.Protocol{InTransitBound: 3 * time.Second, ClockSkew: 100 * time.Millisecond, Downstream: localapi.SandboxAcquirerID},
	}), "held-void-key")
	l.held(t, "held-accept-key")
	out, err = act("", "held")
	if err != nil || strings.Count(out, `"record": `) != 2 || !strings.Contains(out, `"reason": "amount_differs"`) {
		t.Fatalf("held: %v\n%s", err, out)
	}
	if _, err := act("", "reconcile", "--account", "acct_ops", "--key", "held-void-key", "--yes"); err == nil || !strings.Contains(err.Error(), "held") {
		t.Fatalf("reconcile of a held record: %v", err)
	}
	out, err = act("", "void-confirmed", "--account", "acct_ops", "--key", "held-void-key", "--yes")
	if err == nil || !strings.Contains(err.Error(), operator.OutcomeStillHeld) || !strings.Contains(err.Error(), "too early") {
		t.Fatalf("void-confirmed within the record's T + skew: %v\n%s", err, out)
	}
	time.Sleep(3*time.Second + waitOut)
	out, err = act("", "void-confirmed", "--account", "acct_ops", "--key", "held-void-key", "--yes")
	if err != nil || !strings.Contains(out, operator.OutcomeReleasedByThis) || !strings.Contains(out, "void_confirmed by "+l.s.OperatorPrincipal.UserARN) || l.record(t, "held-void-key") != nil {
		t.Fatalf("void-confirmed: %v\n%s", err, out)
	}

	var v view
	out, err = act("", "inspect", "--account", "acct_ops", "--key", "held-accept-key")
	if err != nil || json.Unmarshal([]byte(out), &v) != nil || v.Marker != markerHeld || v.Ledger != nil {
		t.Fatalf("inspect of a held charge without its row: %v\n%s; want its held marker", err, out)
	}
	out, err = act("yes\n", "accept", "--account", "acct_ops", "--key", "held-accept-key")
	if err != nil || !strings.Contains(out, "The acquirer says now: captured 1000 BRL") || !strings.Contains(out, operator.OutcomeCompletedByThis) {
		t.Fatalf("accept: %v\n%s", err, out)
	}
	out, err = act("", "inspect", "--account", "acct_ops", "--key", "held-accept-key")
	v = view{}
	if err != nil || json.Unmarshal([]byte(out), &v) != nil || v.Marker != "" || v.Status != idem.StatusCompleted || v.Hold == nil || v.Hold.Settlement == nil ||
		v.Hold.Settlement.By != l.s.OperatorPrincipal.UserARN || v.Hold.Settlement.Decision == "" || v.Ledger["amount"] != 1000.0 {
		t.Fatalf("inspect after accept: %v\n%s", err, out)
	}
}

// TestReadBackByDecision: --decision and --intent read back what a
// settlement did and do nothing else. After a void, the client's retry
// charges a later intent of the key, which is held again; reading the
// void back says it released its own intent and leaves the later one held.
// Without --intent it refuses; the void's id read as an accept is not the
// accept's.
func TestReadBackByDecision(t *testing.T) {
	t.Parallel()
	l := newLab(t, nil)
	first := l.held(t, "read-back-key")
	time.Sleep(waitOut)
	out, _, err := l.idemctl(t, "", nil, nil, "void-confirmed", "--account", "acct_ops", "--key", "read-back-key", "--yes")
	if err != nil || !strings.Contains(out, "The acquirer still reports this charge") {
		t.Fatalf("void-confirmed: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`decision (dec-[0-9a-f]{32}) on intent ([0-9a-f]+)`).FindStringSubmatch(out)
	if m == nil || m[2] != first {
		t.Fatalf("no decision printed:\n%s", out)
	}
	later := l.held(t, "read-back-key") // the client's retry: a later intent, held again
	out, _, err = l.idemctl(t, "", nil, nil, "void-confirmed", "--account", "acct_ops", "--key", "read-back-key", "--decision", m[1], "--intent", m[2])
	if err != nil || !strings.Contains(out, operator.OutcomeReleasedByThis) {
		t.Fatalf("the void read back: %v\n%s", err, out)
	}
	if rec := l.record(t, "read-back-key"); rec == nil || !rec.Held() || rec.DownstreamKey != later || rec.Attempt != 1 {
		t.Fatalf("reading back touched the later intent: %+v", rec)
	}
	if _, _, err := l.idemctl(t, "", nil, nil, "void-confirmed", "--account", "acct_ops", "--key", "read-back-key", "--decision", m[1]); err == nil || !strings.Contains(err.Error(), "--intent") {
		t.Fatalf("--decision without --intent: %v", err)
	}
	out, _, err = l.idemctl(t, "", nil, nil, "accept", "--account", "acct_ops", "--key", "read-back-key", "--decision", m[1], "--intent", m[2])
	if err == nil || !strings.Contains(out, operator.OutcomeReleasedByAnother) {
		t.Fatalf("the void's id read back as an accept: %v\n%s", err, out)
	}
	if rec := l.record(t, "read-back-key"); rec == nil || !rec.Held() || rec.Attempt != 1 {
		t.Fatalf("a read-back wrote: %+v", rec)
	}
}

// TestOnlyTheOperatorsRole: the channel admits the operator's role alone,
// as the deployed function's resource policy does: another principal the
// stack knows, and one it does not, are refused, and nothing is written.
func TestOnlyTheOperatorsRole(t *testing.T) {
	t.Parallel()
	sweeper := localapi.Principal{AccessKeyID: "AKIALOCALSWEEPER0001", SecretAccessKey: "sweeper-secret", AccountID: localapi.LocalAccount,
		ARN: "arn:aws:iam::" + localapi.LocalAccount + ":role/idempay-local-sweeper", UserARN: "arn:aws:sts::" + localapi.LocalAccount + ":assumed-role/idempay-local-sweeper/s"}
	l := newLab(t, nil, sweeper)
	l.held(t, "held-key")
	time.Sleep(waitOut)
	for name, creds := range map[string]aws.CredentialsProvider{
		"another role": credentials.NewStaticCredentialsProvider(sweeper.AccessKeyID, sweeper.SecretAccessKey, ""),
		"unknown keys": credentials.NewStaticCredentialsProvider("AKIANOBODY0000000001", "nobody", ""),
	} {
		_, _, err := l.idemctl(t, "", nil, creds, "void-confirmed", "--account", "acct_ops", "--key", "held-key", "--yes")
		if !errors.Is(err, operator.ErrForbidden) {
			t.Errorf("%s: %v, want refused by the channel", name, err)
		}
	}
	if rec := l.record(t, "held-key"); rec == nil || !rec.Held() || rec.Attempt != 1 {
		t.Fatalf("a refused caller changed the record: %+v", rec)
	}
}

// TestReleaseIgnoresTheShellsAcquirer is the first finding's interleaving:
// a charge's authorization is processed but its answer dropped, so the
// record stays in flight; after the wait-out an operator runs release in
// a shell whose ACQUIRER_URL and ACQUIRER_ID name another live sandbox,
// which has no authorization under the key. idemctl reads none of it: the
// deployed path asks the stack's acquirer, the record completes from the
// real authorization, there is one authorization in all, and the other
// sandbox is never called.
func TestReleaseIgnoresTheShellsAcquirer(t *testing.T) {
	t.Parallel()
	l := newLab(t, nil)
	dk := l.stuck(t, "dropped-answer-key")
	auth, err := l.s.Sandbox.Authorize(context.Background(), dk, acquirer.Request{Amount: 100, Currency: "BRL", PaymentMethod: "pm_card_visa", OrderID: "1"})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(waitOut)
	out, _, err := l.idemctl(t, "", hostileEnv(l.otherURL), nil, "release", "--account", "acct_ops", "--key", "dropped-answer-key", "--yes")
	if err == nil || !strings.Contains(out, "completed, captured 100 BRL, authorization "+auth.ID) {
		t.Fatalf("release: %v\n%s; want not released, completed from the real authorization", err, out)
	}
	rec := l.record(t, "dropped-answer-key")
	if rec == nil || rec.Status != idem.StatusCompleted || !strings.Contains(string(rec.Response.Body), auth.ID) {
		t.Fatalf("the record: %+v", rec)
	}
	if n, calls := len(l.s.Sandbox.Authorizations())+len(l.other.Authorizations()), l.otherCalls.Load(); n != 1 || calls != 0 {
		t.Fatalf("%d authorizations in all, %d calls to the shell's acquirer; want 1 and 0", n, calls)
	}
}

// TestAcceptBooksTheDeploymentsAcquirer: the first finding's accept. The
// stack's acquirer captured ten times the amount (1000 BRL) and the record
// is held; the operator's shell names another live sandbox that holds a
// 1x authorization (100 BRL) under the same downstream key. The accept
// books the real terms, never the other endpoint's, which is never called.
func TestAcceptBooksTheDeploymentsAcquirer(t *testing.T) {
	t.Parallel()
	l := newLab(t, nil)
	dk := l.held(t, "accept-real-key")
	if _, err := l.other.Authorize(context.Background(), dk, acquirer.Request{Amount: 100, Currency: "BRL", PaymentMethod: "pm_card_visa", OrderID: "1"}); err != nil {
		t.Fatal(err)
	}
	out, _, err := l.idemctl(t, "", hostileEnv(l.otherURL), nil, "accept", "--account", "acct_ops", "--key", "accept-real-key", "--yes")
	if err != nil || !strings.Contains(out, "The acquirer says now: captured 1000 BRL") || !strings.Contains(out, operator.OutcomeCompletedByThis) {
		t.Fatalf("accept: %v\n%s", err, out)
	}
	rec := l.record(t, "accept-real-key")
	row, err := l.ledger.Get(context.Background(), charge.ID(rec.DownstreamKey))
	if err != nil || row.Amount != 1000 || l.otherCalls.Load() != 0 {
		t.Fatalf("the ledger row %+v (%v), %d calls to the shell's acquirer; want the real 1000 BRL and none", row, err, l.otherCalls.Load())
	}
}

// lostAnswers stands in front of DynamoDB for the stack's functions: the
// first write its match chooses is passed on and lands, and its caller is
// answered 500 instead (a reply lost on the way back); with land false the
// write is not passed on either (every try of it fails). It counts what
// it cut off.
type lostAnswers struct {
	target http.Handler
	match  func(op string, body []byte) bool
	land   bool
	cut    atomic.Int64
}

func (p *lostAnswers) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(b))
	_, op, _ := strings.Cut(r.Header.Get("X-Amz-Target"), ".")
	if !p.match(op, b) || (p.land && p.cut.Load() > 0) {
		p.target.ServeHTTP(w, r)
		return
	}
	p.cut.Add(1)
	if p.land {
		p.target.ServeHTTP(httptest.NewRecorder(), r) // the write lands; its answer is dropped
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.WriteHeader(http.StatusInternalServerError)
	_, _ = w.Write([]byte(`{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"the answer was lost"}`))
}

// newReverseProxy passes every request on to target.
func newReverseProxy(target string) (http.Handler, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	return httputil.NewSingleHostReverseProxy(u), nil
}

// TestLostWriteAnswers is the third finding: a proxy passes the write on,
// and the write lands, but answers 500. The operator function's SDK
// retries, the retry's condition fails, and yet idemctl's exit code and
// message are what the table holds: released, or completed, by this
// decision. A write that never lands is reported as still held, exit 1.
func TestLostWriteAnswers(t *testing.T) {
	t.Parallel()
	dynamotest.RequireEmulator(t)
	endpoint := cmp.Or(os.Getenv("AWS_ENDPOINT_URL_DYNAMODB"), os.Getenv("AWS_ENDPOINT_URL"))
	for _, tc := range []struct {
		name, command, want string
		land                bool
		match               func(op string, body []byte) bool
	}{
		{"void-confirmed, its delete's answer lost", "void-confirmed", operator.OutcomeReleasedByThis, true,
			func(op string, _ []byte) bool { return op == "DeleteItem" }},
		{"accept, its completion's answer lost", "accept", operator.OutcomeCompletedByThis, true,
			func(op string, b []byte) bool { return op == "UpdateItem" && bytes.Contains(b, []byte("settlement")) }},
		{"void-confirmed, its delete never lands", "void-confirmed", operator.OutcomeStillHeld, false,
			func(op string, _ []byte) bool { return op == "DeleteItem" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			target, err := newReverseProxy(endpoint)
			if err != nil {
				t.Fatal(err)
			}
			proxy := &lostAnswers{target: target, match: tc.match, land: tc.land}
			srv := httptest.NewServer(proxy)
			t.Cleanup(srv.Close)
			l := newLab(t, []string{"AWS_ENDPOINT_URL_DYNAMODB=" + srv.URL})
			l.held(t, "lost-answer-key")
			time.Sleep(waitOut)
			out, errOut, err := l.idemctl(t, "", nil, nil, tc.command, "--account", "acct_ops", "--key", "lost-answer-key", "--yes")
			if proxy.cut.Load() == 0 {
				t.Fatalf("the proxy cut nothing off: the test proves nothing\n%s", out)
			}
			if !strings.Contains(out, tc.want) || (err == nil) != (tc.want != operator.OutcomeStillHeld) {
				t.Fatalf("%s: %v\n%s\nwant %s", tc.command, err, out, tc.want)
			}
			rec := l.record(t, "lost-answer-key")
			switch tc.want {
			case operator.OutcomeReleasedByThis:
				if rec != nil {
					t.Fatalf("said released, the record is %+v", rec)
				}
			case operator.OutcomeCompletedByThis:
				if rec == nil || rec.Status != idem.StatusCompleted {
					t.Fatalf("said completed, the record is %+v", rec)
				}
			case operator.OutcomeStillHeld:
				if rec == nil || !rec.Held() {
					t.Fatalf("said still held, the record is %+v", rec)
				}
			}
			if errOut != "" {
				t.Fatalf("idemctl wrote to stderr: %q", errOut)
			}
		})
	}
}

// TestSDKLogLinesAreDebug is the eighth finding: the SDK's own warnings
// (a retried call's "failed to close HTTP response body") reach stderr
// only with --debug.
func TestSDKLogLinesAreDebug(t *testing.T) {
	t.Parallel()
	var quiet, loud bytes.Buffer
	sdkLogger(&quiet, false).Logf(logging.Warn, "failed to close HTTP response body, this may affect connection reuse")
	sdkLogger(&loud, true).Logf(logging.Warn, "failed to close HTTP response body, this may affect connection reuse")
	if quiet.Len() != 0 || !strings.Contains(loud.String(), "level=DEBUG") || !strings.Contains(loud.String(), "failed to close") {
		t.Fatalf("without --debug %q; with it %q", quiet.String(), loud.String())
	}
}

// TestAPersonsPromptDoesNotRace: while the person reads release's prompt,
// a client's retry takes the record over, is authorized and loses the
// answer; the person then types yes. The channel's release runs the
// reconciler's path after the yes: it takes the lease over and asks the
// acquirer first, so the record completes with the one authorization.
func TestAPersonsPromptDoesNotRace(t *testing.T) {
	t.Parallel()
	l := newLab(t, nil)
	ctx := context.Background()
	l.stuck(t, "prompt-key")
	time.Sleep(waitOut)
	acq, err := acquirerhttp.NewClient(l.s.SandboxURL, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	client := chargetest.ServiceWith(idem.NewGuard(dynamo.Open(l.s.DynamoDB, l.s.TableName).Store(), idem.Config{DefaultLease: 2 * time.Second, Protocol: shortProtocol}),
		l.ledger, losesAnswers{acq}, httpapi.Render, charge.Config{AcquirerTimeout: 150 * time.Millisecond})
	stdin := &duringConfirmation{answer: strings.NewReader("yes\n"), meanwhile: func() {
		r := client.Charge(ctx, charge.Input{Account: "acct_ops", Keys: []string{"prompt-key"}, Body: body})
		if r.Outcome != op.Pending {
			t.Errorf("the client's retry: %s, want pending (authorized, answer lost)", r.Outcome)
		}
		time.Sleep(2*time.Second + waitOut) // its lease ends, and T + skew after it
	}}
	var out bytes.Buffer
	sh := shell{stdin: stdin, stdout: &out, stderr: io.Discard, now: time.Now, aws: loadAWS,
		getenv: func(k string) string {
			return map[string]string{deploy.EnvTableName: l.s.TableName, deploy.EnvOperatorURL: l.s.OperatorURL}[k]
		}}
	err = run(ctx, []string{"release", "--account", "acct_ops", "--key", "prompt-key"}, sh)
	auths := l.s.Sandbox.Authorizations()
	rec := l.record(t, "prompt-key")
	if len(auths) != 1 || rec == nil || rec.Status != idem.StatusCompleted || !strings.Contains(string(rec.Response.Body), auths[0].ID) {
		t.Fatalf("release: %v\n%s\n%d authorizations, record %+v; want the one, completed", err, out.String(), len(auths), rec)
	}
}

// losesAnswers answers the authorizations it makes as lost: the acquirer
// charges, the caller hears "outcome unknown", as when a connection drops
// mid-answer.
type losesAnswers struct{ *acquirerhttp.Client }

func (l losesAnswers) Authorize(ctx context.Context, key string, req acquirer.Request) (acquirer.Authorization, error) {
	if _, err := l.Client.Authorize(ctx, key, req); err != nil {
		return acquirer.Authorization{}, err
	}
	return acquirer.Authorization{}, fmt.Errorf("%w: the answer was lost", acquirer.ErrOutcomeUnknown)
}

// duringConfirmation is the person at the prompt: the first read runs
// meanwhile, then the person types the answer.
type duringConfirmation struct {
	meanwhile func()
	answer    io.Reader
}

func (d *duringConfirmation) Read(p []byte) (int, error) {
	if d.meanwhile != nil {
		d.meanwhile()
		d.meanwhile = nil
	}
	return d.answer.Read(p)
}

// world is a fresh table in DynamoDB Local and a sandbox acquirer: what
// the commands that only read (and republish) work against.
type world struct {
	table    string
	ddb      *dynamodb.Client
	store    *dynamo.Store
	ledger   *dynamo.Ledger
	acq      *acquirerhttp.Client
	protocol idem.Protocol
}

func newWorld(t *testing.T) world {
	t.Helper()
	ddb := dynamotest.Client(t)
	table := dynamotest.NewTable(t, ddb)
	acq, err := acquirerhttp.NewClient("http://sandbox.invalid", "", sandbox.InProcess(sandbox.New("")))
	if err != nil {
		t.Fatal(err)
	}
	tbl := dynamo.Open(ddb, table)
	return world{table: table, ddb: ddb, store: tbl.Store(), ledger: tbl.Ledger(), acq: acq, protocol: shortProtocol}
}

// shell is idemctl's world in w.
func (w world) shell(stdin io.Reader, stdout io.Writer) shell {
	return shell{stdin: stdin, stdout: stdout, now: time.Now, aws: loadAWS,
		getenv: func(k string) string { return map[string]string{deploy.EnvTableName: w.table}[k] }}
}

// TestReadingCommands: inspect shows a record with its protocol and ledger
// row, and refuses an absent record or a bad key; stale lists a record
// only once its lease ended longer ago than the compiled T + skew; the
// acting commands need the operator's channel.
func TestReadingCommands(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	idemctl := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := run(ctx, args, w.shell(strings.NewReader(""), &out))
		return out.String(), err
	}
	svc := chargetest.ServiceWith(idem.NewGuard(w.store, idem.Config{Protocol: w.protocol}), w.ledger, w.acq, httpapi.Render, charge.Config{})
	if r := svc.Charge(ctx, charge.Input{Account: "acct_ops", Keys: []string{"ops-done-key"}, Body: body}); r.Outcome != op.Executed {
		t.Fatalf("setup: %s", r.Outcome)
	}
	stale := idem.Scope{Operation: charge.Operation, Account: "acct_ops", Key: "ops-stuck-key"}
	req, _ := charge.ParseRequest(body, 0)
	if _, err := idem.NewGuard(w.store, idem.Config{DefaultLease: time.Millisecond, Protocol: w.protocol}).Begin(ctx, stale, req.Canonical()); err != nil {
		t.Fatal(err)
	}
	out, err := idemctl("inspect", "--account", "acct_ops", "--key", "ops-done-key")
	var v view
	if err != nil || json.Unmarshal([]byte(out), &v) != nil || v.Status != idem.StatusCompleted || v.Response.Status != 201 || v.Ledger["status"] != "captured" ||
		v.Lease != "ended: the record is completed" || v.Protocol == nil || v.Protocol.Acquirer != w.protocol.Downstream {
		t.Fatalf("inspect completed: %v\n%s", err, out)
	}
	// A captured charge shows its refund balance: all of it remains, then
	// what a refund returned, and the refund's entry.
	if v.Balance == nil || v.Balance.Remaining != int64(v.Ledger["amount"].(float64)) || v.Balance.Refunded != 0 || len(v.Balance.Refunds) != 0 {
		t.Fatalf("the balance of a charge never refunded: %+v", v.Balance)
	}
	balances, refundKey := dynamo.Open(w.ddb, w.table).Balances(), "0123456789abcdef0123456789abcdef01234567"
	intent := refund.Intent{Key: refundKey, Claimed: time.Now(), FoldAt: time.Now().Add(time.Millisecond), First: true}
	if _, err := balances.Reserve(ctx, refund.Reservation{ChargeID: v.Ledger["id"].(string), ChargeAmount: int64(v.Ledger["amount"].(float64)), Intent: intent, Fence: 1, Stamp: time.Now(), Amount: 40}); err != nil {
		t.Fatal(err)
	}
	out, err = idemctl("inspect", "--account", "acct_ops", "--key", "ops-done-key")
	v = view{}
	if err != nil || json.Unmarshal([]byte(out), &v) != nil || v.Balance == nil || v.Balance.Reserved != 40 ||
		!slices.Equal(v.Balance.Refunds, []refundEntryView{{ID: refund.ID(refundKey), State: string(refund.EntryReserved), Amount: 40}}) {
		t.Fatalf("the balance with a refund in flight: %v\n%s", err, out)
	}
	if err := balances.Succeed(ctx, v.Ledger["id"].(string), intent, 1); err != nil {
		t.Fatal(err)
	}
	out, err = idemctl("inspect", "--account", "acct_ops", "--key", "ops-done-key")
	v = view{}
	if err != nil || json.Unmarshal([]byte(out), &v) != nil || v.Balance == nil || v.Balance.Refunded != 40 || v.Balance.Reserved != 0 ||
		v.Balance.Remaining != int64(v.Ledger["amount"].(float64))-40 || len(v.Balance.Refunds) != 0 || v.Balance.FoldedAt == nil {
		t.Fatalf("the balance after a refund: %v\n%s", err, out)
	}
	// A refund's record, by its operation: its answer, its row and its
	// entry on the charge's balance.
	guard := idem.NewGuard(w.store, idem.Config{Protocol: w.protocol})
	refunds := refund.NewService(guard, svc, balances, dynamo.Open(w.ddb, w.table).Refunds(), w.acq, httpapi.RenderRefund, charge.Config{})
	if r := refunds.Refund(ctx, refund.Input{Account: "acct_ops", Keys: []string{"ops-done-key"}, ChargeID: v.Ledger["id"].(string), Body: []byte(`{"amount": 10}`)}); r.Outcome != op.Executed {
		t.Fatalf("refund: %s", r.Outcome)
	}
	out, err = idemctl("inspect", "--account", "acct_ops", "--key", "ops-done-key", "--operation", "refund")
	v = view{}
	if err != nil || json.Unmarshal([]byte(out), &v) != nil || v.Response == nil || v.Response.Status != 201 ||
		v.Ledger["status"] != "succeeded" || v.Ledger["account"] != "acct_ops" || v.RefundEntry == nil || v.RefundEntry.State != stateFolded ||
		v.Ledger["id"] != v.RefundEntry.ID || v.RefundEntry.ID != refund.ID(v.DownstreamKey) {
		t.Fatalf("inspect a refund: %v\n%s", err, out)
	}
	if _, err := idemctl("inspect", "--account", "acct_ops", "--key", "ops-done-key", "--operation", "payout"); err == nil || !strings.Contains(err.Error(), "--operation") {
		t.Errorf("--operation payout: %v", err)
	}
	if _, err := idemctl("inspect", "--account", "acct_ops", "--key", "no-such-key-1"); err == nil {
		t.Fatal("inspect of an absent record succeeded")
	}
	if _, err := idemctl("inspect", "--account", "acct_ops", "--key", "short"); err == nil {
		t.Fatal("inspect with a bad key succeeded")
	}
	if out, err := idemctl("stale"); err != nil || strings.Contains(out, idem.Ref(stale.PK())) {
		t.Fatalf("stale listed a lease that ended less than T + skew ago: %v\n%s", err, out)
	}
	if _, err := idemctl("release", "--account", "acct_ops", "--key", "ops-stuck-key", "--yes"); err == nil || !strings.Contains(err.Error(), deploy.EnvOperatorURL) {
		t.Fatalf("release without the operator's channel: %v", err)
	}
}

// TestRegionFlag: --region names the region whose replica idemctl reads;
// on one strongly consistent table (here DynamoDB Local, shared by every
// region) it finds the same record from any.
func TestRegionFlag(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	svc := chargetest.ServiceWith(idem.NewGuard(w.store, idem.Config{Protocol: w.protocol}), w.ledger, w.acq, httpapi.Render, charge.Config{})
	if r := svc.Charge(ctx, charge.Input{Account: "acct_region", Keys: []string{"region-flag-key"}, Body: body}); r.Outcome != op.Executed {
		t.Fatalf("setup: %s", r.Outcome)
	}
	var outs []string
	for _, region := range []string{"us-east-1", "us-west-2"} {
		var out bytes.Buffer
		if err := run(ctx, []string{"inspect", "--region", region, "--account", "acct_region", "--key", "region-flag-key"}, w.shell(strings.NewReader(""), &out)); err != nil {
			t.Fatalf("inspect in %s: %v", region, err)
		}
		outs = append(outs, out.String())
	}
	if outs[0] != outs[1] || !strings.Contains(outs[0], `"status": "COMPLETED"`) {
		t.Fatalf("inspect differs between regions:\n%s\n%s", outs[0], outs[1])
	}
}

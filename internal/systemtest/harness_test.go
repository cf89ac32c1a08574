package systemtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/dynamo/dynamotest"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/localapi"
	"github.com/idempotent-payments/idempay/internal/obs"
)

var (
	binDir  string
	rieBin  string
	secret  = []byte("test-secret")
	tableNo atomic.Int64
)

// TestMain builds the function binaries for this machine once; every test
// runs them under the RIE exactly as `make run` does. Started as a child
// role (childRole), the binary is that part of a benchmark's pipeline instead.
func TestMain(m *testing.M) {
	if role := os.Getenv(childRole); role != "" {
		os.Exit(runChild(role))
	}
	dir, err := os.MkdirTemp("", "idempay-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	if err := localapi.BuildFunctions(context.Background(), dir, localapi.Functions...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	rieBin = os.Getenv("AWS_LAMBDA_RIE")
	if rieBin == "" {
		_, file, _, _ := runtime.Caller(0)
		rieBin = filepath.Join(filepath.Dir(file), "..", "..", "bin", "aws-lambda-rie")
	}
	logs, err := os.CreateTemp("", "idempay-function-logs-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	functionLogs = logs
	code := m.Run()
	if code == 0 && stacksStarted.Load() > 0 {
		if err := scanLogs(logs.Name()); err != nil {
			fmt.Fprintln(os.Stderr, "function logs:", err)
			code = 1
		}
	}
	logs.Close()
	os.Remove(logs.Name())
	os.RemoveAll(dir)
	os.Exit(code)
}

// functionLogs collects the output of every function the tests run.
var (
	functionLogs  *os.File
	stacksStarted atomic.Int64
)

// forbidden must never appear in a function's output: payment methods, the
// tests' idempotency keys and the bearer secret and tokens.
var forbidden = []string{"pm_card_visa", "pm_card_declined", "pm_card_processing_error", "order-123-attempt", "shared-key-1", "storm-key-1", string(secret), "Bearer "}

// scanLogs checks what the functions wrote during the tests: the SDK wrote
// nothing of its own (DynamoDB Local's checksums, DYNAMODB_SKIP_RESPONSE_CRC32),
// every JSON line parses, the request lines are there and the charge
// function wrote no EMF line (its metrics are its request lines'), nothing forbidden leaked, and every
// WARN or ERROR line names its request (requestId) or message (messageId)
// and its record — empty only on a message refused before it named one.
func scanLogs(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	requests, emf := 0, 0
	warnings := map[string]int{} // by the id they carry
	for i, line := range strings.Split(string(b), "\n") {
		for _, f := range forbidden {
			if strings.Contains(line, f) {
				return fmt.Errorf("line %d contains %q: %.200s", i+1, f, line)
			}
		}
		if strings.HasPrefix(line, "SDK ") {
			return fmt.Errorf("line %d: the AWS SDK wrote outside the JSON log: %.200s", i+1, line)
		}
		if !strings.HasPrefix(line, "{") {
			continue // the emulator's START/END/REPORT lines and the runtime library's
		}
		var doc map[string]any
		if err := json.Unmarshal([]byte(line), &doc); err != nil {
			return fmt.Errorf("line %d is not JSON: %.200s", i+1, line)
		}
		switch {
		case doc["message"] == "request" && doc["outcome"] != nil && doc["record"] != "" && doc["record"] != nil && doc["level"] == "INFO":
			requests++
		case doc["_aws"] != nil && doc[obs.DimensionFunction] == obs.FunctionCharge:
			return fmt.Errorf("line %d: the charge function wrote an EMF line; its metrics come from its request lines: %.200s", i+1, line)
		case doc["_aws"] != nil:
			emf++
		case doc["level"] == "WARN" || doc["level"] == "ERROR":
			id := "requestId"
			if doc["messageId"] != nil {
				id = "messageId"
			}
			record, hasRecord := doc["record"].(string)
			switch {
			case doc[id] == nil || doc[id] == "":
				return fmt.Errorf("line %d: a %s line with no requestId or messageId: %.300s", i+1, doc["level"], line)
			case !hasRecord || record == "" && doc["reject_code"] == nil:
				return fmt.Errorf("line %d: a %s line with no record: %.300s", i+1, doc["level"], line)
			case strings.Count(line, `"`+id+`"`) != 1 || strings.Count(line, `"record"`) != 1:
				return fmt.Errorf("line %d: a member written twice: %.300s", i+1, line)
			}
			warnings[id]++
		}
	}
	if requests == 0 {
		return fmt.Errorf("no request line among %d EMF lines: the charge function did not log", emf)
	}
	if wholeSuite := flag.Lookup("test.run").Value.String() == ""; wholeSuite && (warnings["requestId"] == 0 || warnings["messageId"] == 0) {
		return fmt.Errorf("warnings by id %v: the tests no longer make both functions warn, so the check above proves nothing", warnings)
	}
	return nil
}

// newStack starts a stack of its own for one test: a fresh table, a fresh
// sandbox acquirer, two charge instances. env tunes the functions.
func newStack(t *testing.T, env ...string) *localapi.Stack {
	t.Helper()
	return newStackWith(t, localapi.StackConfig{Env: env})
}

// newStackWith starts a stack from cfg; the harness fills in the binaries,
// a fresh table unless cfg names one, loopback ports and, unless set, the
// timeouts.
func newStackWith(t *testing.T, cfg localapi.StackConfig) *localapi.Stack {
	t.Helper()
	dynamotest.RequireEmulator(t)
	if _, err := os.Stat(rieBin); err != nil {
		t.Fatalf("aws-lambda-rie not found at %s (make test installs it): %v", rieBin, err)
	}
	stacksStarted.Add(1)
	cfg.RIE, cfg.BinDir, cfg.Trust.Secret = rieBin, binDir, secret
	if cfg.Output == nil { // a test that reads its stack's logs gives a file of its own
		cfg.Output = functionLogs
	}
	if cfg.TableName == "" {
		cfg.TableName = fmt.Sprintf("charges-%d-%d", time.Now().UnixNano(), tableNo.Add(1))
	}
	cfg.GatewayAddr, cfg.SandboxAddr = "127.0.0.1:0", "127.0.0.1:0"
	if cfg.Instances == 0 {
		cfg.Instances = 2
	}
	if cfg.SweepInterval == 0 {
		cfg.SweepInterval = -1 // tests sweep when they mean to
	}
	if cfg.MatchInterval == 0 {
		cfg.MatchInterval = -1 // and match when they mean to (Stack.RunMatch)
	}
	if cfg.Producers == nil {
		cfg.Producers = []localapi.Producer{testProducer}
	}
	s, err := localapi.StartStack(context.Background(), cfg)
	if err != nil {
		t.Fatalf("start stack: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// testProducer sends the tests' charge commands: it may charge the
// accounts they use on the queue, and acct_victim is not among them.
var testProducer = localapi.Producer{Name: "tests", Accounts: []string{"acct_q", "acct_m", "acct_t", "acct_door", "acct_inflight", "acct_death"}}

// reply is one HTTP answer, body read.
type reply struct {
	status  int
	header  http.Header
	body    []byte
	problem map[string]any
}

func (r reply) code() string {
	c, _ := r.problem["code"].(string)
	return c
}

// call sends one request through the gateway as account (no token when
// account is empty).
func call(t *testing.T, s *localapi.Stack, method, path, account string, headers map[string]string, body string) reply {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if account != "" {
		tok, err := localapi.Trust{Secret: secret}.Token(account, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	return do(t, req)
}

// do sends req and reads the answer.
func do(t *testing.T, req *http.Request) reply {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := reply{status: resp.StatusCode, header: resp.Header, body: b}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/problem+json") {
		if err := json.Unmarshal(b, &r.problem); err != nil {
			t.Fatalf("problem body %q: %v", b, err)
		}
	}
	return r
}

// postCharge POSTs body to the charges route as account, with key as its
// Idempotency-Key ("" sends none).
func postCharge(t *testing.T, s *localapi.Stack, account, key, body string) reply {
	t.Helper()
	headers := map[string]string{}
	if key != "" {
		headers["Idempotency-Key"] = key
	}
	return call(t, s, http.MethodPost, "/v1/charges", account, headers, body)
}

const visa = `{"amount": 25000, "currency": "BRL", "order_id": "123", "payment_method": "pm_card_visa"}`

// items counts the table's items: records and ledger rows.
func items(t *testing.T, s *localapi.Stack) int {
	t.Helper()
	out, err := s.DynamoDB.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(s.TableName), Select: "COUNT", ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	return int(out.Count)
}

func setFaults(t *testing.T, s *localapi.Stack, faults string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, s.SandboxURL+"/_sandbox/faults", bytes.NewReader([]byte(faults)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("set faults %s: %v %v", faults, err, resp)
	}
	resp.Body.Close()
}

func expect(t *testing.T, r reply, status int, code string) {
	t.Helper()
	if r.status != status || r.code() != code {
		t.Fatalf("got %d %q (%s), want %d %q", r.status, r.code(), r.body, status, code)
	}
}

// canonicalOf parses a charge body as the service does.
func canonicalOf(t testing.TB, body string) idem.Canonical {
	t.Helper()
	req, err := charge.ParseRequest([]byte(body), 0)
	if err != nil {
		t.Fatal(err)
	}
	return req.Canonical()
}

package archtest

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/idempotent-payments/idempay/"

// rules: each package, and what it must never depend on, directly or not.
// The engine knows no domain, no transport and no AWS; the domain knows no
// HTTP rendering; the message format and the routes stay leaves.
var rules = []struct {
	pkg    string
	never  []string
	reason string
}{
	{"internal/idem", []string{"internal/", "github.com/aws/"}, "the engine depends on nothing of this module and on no AWS SDK"},
	{"internal/charge", []string{"internal/httpapi", "internal/command", "internal/queue", "github.com/aws/", "go.opentelemetry.io/", "std:net/http"},
		"the charge domain knows neither HTTP problems nor queues nor AWS nor a tracing library nor an HTTP client: each entry point maps its outcomes, and tracing and the acquirer's client are injected (op.Tracer, acquirerhttp)"},
	{"internal/command", []string{"internal/charge", "github.com/aws/"}, "the message format is a leaf above the engine"},
	{"internal/refund", []string{"internal/httpapi", "internal/command", "internal/queue", "internal/dynamo", "github.com/aws/", "go.opentelemetry.io/", "std:net/http"},
		"the refund domain knows no entry point, no store, no AWS and no tracing library: the table's package implements its seams, and tracing is injected"},
	{"internal/route", []string{"internal/", "github.com/"}, "the routes import nothing, so the CDK app can"},
	{"internal/deploy", []string{"internal/", "github.com/"}, "the system's description imports nothing, so the CDK app, the local stack and idemctl can"},
	{"internal/strictjson", []string{"internal/"}, "the strict decoder is a leaf"},
	{"internal/tabledef", []string{"internal/", "github.com/"}, "the table's definition imports nothing, so the CDK app can"},
	{"internal/obs", []string{"internal/", "github.com/"}, "the observability vocabulary imports nothing, so the CDK app's alarms can"},
	{"internal/streamfilter", []string{"internal/charge", "internal/outbox", "github.com/aws/"}, "the stream filters read only the table's definition, so the CDK app can"},
	{"internal/event", []string{"internal/charge"}, "the events' schema is read by the CDK app, which links no service"},
	{"internal/acquirer", []string{"internal/idem", "internal/charge", "std:net/http"}, "the acquirer's answers know no idempotency and no transport (its client is acquirerhttp)"},
	{"internal/sweep", []string{"internal/charge", "internal/acquirer"}, "the sweeper never calls the acquirer"},
	{"internal/event", []string{"internal/httpapi", "internal/queue", "internal/dynamo", "github.com/aws/"},
		"the events' schema knows no transport and no store: publishers encode with it"},
	{"internal/op", []string{"internal/charge", "internal/refund", "std:net/http", "go.opentelemetry.io/", "github.com/aws/"},
		"the operation layer knows no operation, no HTTP client, no tracing and no AWS: they are injected, as the store is"},
	{"internal/consumer", []string{"internal/httpapi"}, "the queue adapter maps the codes itself and reads no HTTP answer"},
	{"internal/operator", []string{"internal/httpapi"}, "the operator's channel maps the codes itself and reads no HTTP answer"},
	{"cmd/idemctl", []string{"internal/httpapi"}, "the operator's CLI shows what the table stores, not an HTTP rendering of it"},
	{"internal/sweep", []string{"internal/dynamo", "internal/queue", "github.com/aws/"},
		"the sweeper reaches the records through the idem.Store seam and the queue through its own interface, so it runs on every store"},
}

func TestImportRules(t *testing.T) {
	for _, r := range rules {
		for _, v := range violations(t, r.pkg, r.never) {
			t.Errorf("%s depends on %s: %s", r.pkg, v, r.reason)
		}
	}
}

// upward is what a test-support package must never depend on, directly
// or not: the packages that start and wire the functions (setup,
// charging), run it (the local
// stack, the functions, the tools, the chaos run) or render it over HTTP.
// A helper takes what it needs of them as an argument (a renderer, a
// dialer), so the engine's and the domain's folders stay at the bottom.
var upward = []string{"internal/setup", "internal/charging", "internal/localapi", "internal/httpapi", "internal/chaos", "internal/systemtest", "functions/", "cmd/"}

// TestTestSupportAtTheBottom: every test-support package (a folder whose
// name ends in "test" and that is not itself a suite of tests: archtest,
// systemtest) imports nothing above it.
func TestTestSupportAtTheBottom(t *testing.T) {
	helpers := testSupport(t)
	if len(helpers) < 5 {
		t.Fatalf("found %d test-support packages %v: the listing reads nothing", len(helpers), helpers)
	}
	for _, pkg := range helpers {
		for _, v := range violations(t, pkg, upward) {
			t.Errorf("%s (test support) depends on %s: take it as an argument instead", pkg, v)
		}
	}
}

// testSupport lists the test-support packages.
func testSupport(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "../../...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	var found []string
	for _, p := range strings.Fields(string(out)) {
		rel := strings.TrimPrefix(p, module)
		name := rel[strings.LastIndex(rel, "/")+1:]
		if strings.HasSuffix(name, "test") && name != "archtest" && name != "systemtest" {
			found = append(found, rel)
		}
	}
	return found
}

// TestRulesBite is the control: the same check reports a dependency that
// is there (httpapi answers on the routes).
func TestRulesBite(t *testing.T) {
	if v := violations(t, "internal/httpapi", []string{"internal/route"}); len(v) == 0 {
		t.Fatal("the check does not see httpapi → route")
	}
	// And the test-support rule's: idemctl, a tool, depends on setup, which
	// the same list refuses a helper.
	if v := violations(t, "cmd/idemctl", upward); len(v) == 0 {
		t.Fatal("the test-support check does not see idemctl → setup")
	}
}

// violations lists pkg's dependencies, direct or not, under any prefix of
// never (a path whose first element has no dot, "internal/…", is this
// module's).
func violations(t *testing.T, pkg string, never []string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "../../"+pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", pkg, err, out)
	}
	var found []string
	for _, dep := range strings.Fields(string(out)) {
		if dep == module+pkg {
			continue
		}
		for _, n := range never {
			if std, ok := strings.CutPrefix(n, "std:"); ok { // the standard library's
				n = std
			} else if first, _, _ := strings.Cut(n, "/"); !strings.Contains(first, ".") { // this module's: internal/…, functions/…, cmd/…
				n = module + n
			}
			if strings.HasPrefix(dep, n) {
				found = append(found, dep)
			}
		}
	}
	return found
}

// tableSDK are the AWS SDK's DynamoDB and DynamoDB Streams packages.
var tableSDK = []string{"github.com/aws/aws-sdk-go-v2/service/dynamodb", "github.com/aws/aws-sdk-go-v2/feature/dynamodb"}

// tableSDKAllowed are the packages that may import tableSDK: the table's
// own package and its test helpers, and the composition roots and the
// harness, which make a client and hand it to dynamo.Open (idemctl, the
// local stack, the chaos run, the system tests). The functions' mains
// make theirs with dynamo.NewClient, so they need no SDK import either.
var tableSDKAllowed = []string{"internal/dynamo", "cmd/idemctl", "internal/localapi", "internal/chaos", "internal/systemtest"}

// TestTableSDKInOneHome: no other package, tests included, imports the
// DynamoDB or DynamoDB Streams SDK directly.
func TestTableSDKInOneHome(t *testing.T) {
	importers := sdkImporters(t)
	if !slices.Contains(importers, "internal/dynamo") {
		t.Fatalf("importers %v: the check does not see internal/dynamo's own import", importers) // the control
	}
	for _, pkg := range importers {
		if !slices.ContainsFunc(tableSDKAllowed, func(a string) bool {
			return pkg == a || strings.HasPrefix(pkg, a+"/") || strings.HasSuffix(a, "/") && strings.HasPrefix(pkg, a)
		}) {
			t.Errorf("%s imports the DynamoDB SDK: reach the table through internal/dynamo", pkg)
		}
	}
}

// sdkImporters lists this module's packages that import tableSDK in
// their code or their tests.
func sdkImporters(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}`, "../../...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	var found []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		for _, imp := range fields[1:] {
			if slices.ContainsFunc(tableSDK, func(p string) bool { return strings.HasPrefix(imp, p) }) {
				found = append(found, strings.TrimPrefix(fields[0], module))
				break
			}
		}
	}
	return found
}

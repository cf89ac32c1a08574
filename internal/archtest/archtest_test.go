package archtest

import (
	"os/exec"
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
	{"internal/charge", []string{"internal/problem", "internal/httpapi", "internal/command", "internal/queue", "github.com/aws/"},
		"the charge domain knows neither HTTP problems nor queues nor AWS: each entry point maps its outcomes"},
	{"internal/command", []string{"internal/charge", "github.com/aws/"}, "the message format is a leaf above the engine"},
	{"internal/route", []string{"internal/", "github.com/"}, "the routes import nothing, so the CDK app can"},
	{"internal/deploy", []string{"internal/", "github.com/"}, "the system's description imports nothing, so the CDK app, the local stack and idemctl can"},
	{"internal/strictjson", []string{"internal/"}, "the strict decoder is a leaf"},
	{"internal/tabledef", []string{"internal/", "github.com/"}, "the table's definition imports nothing, so the CDK app can"},
	{"internal/obs", []string{"internal/", "github.com/"}, "the observability vocabulary imports nothing, so the CDK app's alarms can"},
	{"internal/streamfilter", []string{"internal/charge", "internal/outbox", "github.com/aws/"}, "the stream filters read only the table's definition, so the CDK app can"},
	{"internal/event", []string{"internal/charge"}, "the events' schema is read by the CDK app, which links no service"},
	{"internal/acquirer", []string{"internal/idem", "internal/charge"}, "the acquirer client knows no idempotency"},
	{"internal/sweep", []string{"internal/charge", "internal/acquirer"}, "the sweeper never calls the acquirer"},
	{"internal/event", []string{"internal/problem", "internal/httpapi", "internal/queue", "internal/idem/dynamostore", "github.com/aws/"},
		"the events' schema knows no transport and no store: publishers encode with it"},
	{"internal/sweep", []string{"internal/idem/dynamostore", "internal/queue", "github.com/aws/"},
		"the sweeper reaches the records through the idem.Store seam and the queue through its own interface, so it runs on every store"},
}

func TestImportRules(t *testing.T) {
	for _, r := range rules {
		for _, v := range violations(t, r.pkg, r.never) {
			t.Errorf("%s depends on %s: %s", r.pkg, v, r.reason)
		}
	}
}

// TestRulesBite is the control: the same check reports a dependency that
// is there (httpapi renders problems).
func TestRulesBite(t *testing.T) {
	if v := violations(t, "internal/httpapi", []string{"internal/problem"}); len(v) == 0 {
		t.Fatal("the check does not see httpapi → problem")
	}
}

// violations lists pkg's dependencies, direct or not, under any prefix of
// never ("internal/…" is this module's).
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
			if strings.HasPrefix(n, "internal/") {
				n = module + n
			}
			if strings.HasPrefix(dep, n) {
				found = append(found, dep)
			}
		}
	}
	return found
}

package charge_test

import (
	"os"
	"strings"
	"testing"

	"github.com/idempotent-payments/idempay/internal/charge"
)

// TestOutcomeNames: every outcome has one name of its own, and the
// documented list of logged outcomes (docs/operating.md, "Logs") names
// each.
func TestOutcomeNames(t *testing.T) {
	doc, err := os.ReadFile("../../docs/operating.md")
	if err != nil {
		t.Fatal(err)
	}
	_, logs, _ := strings.Cut(string(doc), "**Logs.**")
	logs, _, _ = strings.Cut(logs, "\n\n")
	seen := map[string]charge.Outcome{}
	for _, o := range charge.Outcomes() {
		name := o.String()
		if name == "unknown" {
			t.Errorf("outcome %d has no name", int(o))
		}
		if other, dup := seen[name]; dup {
			t.Errorf("%d and %d are both %q", int(other), int(o), name)
		}
		seen[name] = o
		if !strings.Contains(logs, "`"+name+"`") {
			t.Errorf("docs/operating.md's logged outcomes do not list %s", name)
		}
	}
}

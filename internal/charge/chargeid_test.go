package charge

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/idempotent-payments/idempay/internal/op"
)

// TestIDPattern: the documents state the charge id's shape as the
// code checks it, and the check agrees with the pattern.
func TestIDPattern(t *testing.T) {
	for _, doc := range []string{"../../api/openapi.yaml", "../../docs/events.schema.json"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`"\^ch_[^"]*"`).FindAllString(string(b), -1) {
			if strings.Trim(m, `"`) != IDPattern {
				t.Errorf("%s states a charge id as %s, the code as %s", doc, m, IDPattern)
			}
		}
		if !strings.Contains(string(b), `"`+IDPattern+`"`) {
			t.Errorf("%s does not state the charge id's pattern %s", doc, IDPattern)
		}
	}
	re := regexp.MustCompile(IDPattern)
	for _, id := range []string{ID(strings.Repeat("a1", 20)), "ch_" + strings.Repeat("0", 39), "ch_" + strings.Repeat("A", 40), "cx_" + strings.Repeat("0", 40), ""} {
		if ValidID(id) != re.MatchString(id) {
			t.Errorf("%q: the check says %v, the pattern %v", id, ValidID(id), re.MatchString(id))
		}
	}
}

// TestOfAcquirer: a row names the acquirer that authorized it; a row
// without a name counts as any deployment's acquirer's.
func TestOfAcquirer(t *testing.T) {
	t.Parallel()
	named := Charge{Origin: op.Origin{AcquirerID: "acquirer-a"}}
	if !named.OfAcquirer("acquirer-a") || named.OfAcquirer("acquirer-b") {
		t.Fatal("a named row")
	}
	if !(Charge{}).OfAcquirer("acquirer-b") {
		t.Fatal("a row written before rows named their acquirer")
	}
}

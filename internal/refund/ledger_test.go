package refund

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestIDPattern: the documents state the refund id's shape as the code
// checks it, and the check agrees with the pattern.
func TestIDPattern(t *testing.T) {
	for _, doc := range []string{"../../api/openapi.yaml", "../../docs/events.schema.json"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`"\^re_[^"]*"`).FindAllString(string(b), -1) {
			if strings.Trim(m, `"`) != IDPattern {
				t.Errorf("%s states a refund id as %s, the code as %s", doc, m, IDPattern)
			}
		}
		if !strings.Contains(string(b), `"`+IDPattern+`"`) {
			t.Errorf("%s does not state the refund id's pattern %s", doc, IDPattern)
		}
	}
	re := regexp.MustCompile(IDPattern)
	for _, id := range []string{ID(strings.Repeat("a1", 20)), "re_" + strings.Repeat("0", 39), "re_" + strings.Repeat("A", 40), "ch_" + strings.Repeat("0", 40), ""} {
		if ValidID(id) != re.MatchString(id) {
			t.Errorf("%q: the check says %v, the pattern %v", id, ValidID(id), re.MatchString(id))
		}
	}
}

// TestDocumentedLimit: the API's documents state the refund limit the
// balance enforces.
func TestDocumentedLimit(t *testing.T) {
	for _, doc := range []string{"../../docs/api.md", "../../docs/design.md"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Join(strings.Fields(string(b)), " ") // a sentence may wrap
		if !strings.Contains(text, "holds "+strconv.Itoa(MaxEntries)+" refunds") {
			t.Errorf("%s does not state the limit of %d refunds a charge holds", doc, MaxEntries)
		}
	}
}

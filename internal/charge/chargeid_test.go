package charge

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestChargeIDPattern: the documents state the charge id's shape as the
// code checks it, and the check agrees with the pattern.
func TestChargeIDPattern(t *testing.T) {
	for _, doc := range []string{"../../api/openapi.yaml", "../../docs/events.schema.json"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`"\^ch_[^"]*"`).FindAllString(string(b), -1) {
			if strings.Trim(m, `"`) != ChargeIDPattern {
				t.Errorf("%s states a charge id as %s, the code as %s", doc, m, ChargeIDPattern)
			}
		}
		if !strings.Contains(string(b), `"`+ChargeIDPattern+`"`) {
			t.Errorf("%s does not state the charge id's pattern %s", doc, ChargeIDPattern)
		}
	}
	re := regexp.MustCompile(ChargeIDPattern)
	for _, id := range []string{ChargeID(strings.Repeat("a1", 20)), "ch_" + strings.Repeat("0", 39), "ch_" + strings.Repeat("A", 40), "cx_" + strings.Repeat("0", 40), ""} {
		if validChargeID(id) != re.MatchString(id) {
			t.Errorf("%q: the check says %v, the pattern %v", id, validChargeID(id), re.MatchString(id))
		}
	}
}

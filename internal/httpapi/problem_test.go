package httpapi

import (
	"maps"
	"testing"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/refund"
)

// TestProblemsMatchTheOutcomes: each outcome of the service answered with
// a problem has its row, with the code the outcome carries (written in
// charge too: the domain may not import this package, and the queue
// consumer renders the same codes); and a code has one status and one
// title, whichever outcome answers with it.
func TestProblemsMatchTheOutcomes(t *testing.T) {
	for _, o := range charge.Outcomes() {
		if o.Code() == "" {
			continue
		}
		if row, ok := problems[o.Name()]; !ok || row.code != Code(o.Code()) {
			t.Errorf("%s: row %+v, want code %s", o, row, o.Code())
		}
	}
	for _, o := range refund.Outcomes() {
		if o.Code() == "" {
			continue
		}
		row, ok := refundProblems[o.Name()]
		if !ok {
			row, ok = problems[o.Name()]
		}
		if !ok || row.code != Code(o.Code()) {
			t.Errorf("refund %s: row %+v, want code %s", o, row, o.Code())
		}
	}
	byCode := map[Code]problemType{}
	rows := maps.Collect(maps.All(problems))
	for outcome, row := range refundProblems {
		rows["refund "+outcome] = row
	}
	for outcome, row := range rows {
		if row.status < 400 || row.status > 599 || row.title == "" {
			t.Errorf("%s: %+v", outcome, row)
		}
		if first, seen := byCode[row.code]; seen && (first.status != row.status || first.title != row.title) {
			t.Errorf("%s: %s answered as %d %q and as %d %q", outcome, row.code, first.status, first.title, row.status, row.title)
		}
		byCode[row.code] = row
	}
}

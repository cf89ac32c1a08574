package dynamo

import (
	"testing"

	"github.com/idempotent-payments/idempay/internal/operations"
)

// TestEveryOperationHasARowLayout holds the table's row layouts equal to
// the registered operations: one each, none besides.
func TestEveryOperationHasARowLayout(t *testing.T) {
	regs := operations.All()
	for _, reg := range regs {
		if _, err := layoutOf(reg); err != nil {
			t.Error(err)
		}
		if got := rowKey(reg.RowIDPrefix + "x"); got != reg.RowKeyPrefix+reg.RowIDPrefix+"x" {
			t.Errorf("operation %s: a row's key is %q", reg.Name, got)
		}
	}
	if len(rowLayouts) != len(regs) {
		t.Errorf("%d row layouts for %d operations", len(rowLayouts), len(regs))
	}
}

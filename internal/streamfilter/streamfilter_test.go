package streamfilter_test

import (
	"fmt"
	"testing"

	"github.com/idempotent-payments/idempay/internal/streamfilter"
	"github.com/idempotent-payments/idempay/internal/tabledef"
)

// TestPatterns: every set stays within Lambda's default number of
// filters, and passes the ledger rows it should and every refund row, and
// never a marker put at a row's key.
func TestPatterns(t *testing.T) {
	t.Parallel()
	insert := func(prefix, typ, region string) []byte {
		image := fmt.Sprintf(`{%q:{"S":%q},%q:{"S":%q}`, tabledef.KeyAttribute, prefix+"x", tabledef.TypeAttribute, typ)
		if region != "" {
			image += fmt.Sprintf(`,%q:{"S":%q}`, tabledef.RegionAttribute, region)
		}
		return fmt.Appendf(nil, `{"eventName":"INSERT","dynamodb":{"Keys":{%q:{"S":%q}},"NewImage":%s}}`, tabledef.KeyAttribute, prefix+"x", image+"}")
	}
	for _, c := range []struct {
		set                                                   string
		ownRow, otherRegionsRow, noRegionRow, refund, balance bool
	}{
		{set: "", ownRow: true, otherRegionsRow: true, noRegionRow: true, refund: true},
		{set: "region-a", ownRow: true, noRegionRow: true, refund: true},
	} {
		s := streamfilter.For(c.set)
		if n := len(s.Patterns()); n > streamfilter.MaxPatterns {
			t.Errorf("%q: %d patterns, Lambda takes %d", c.set, n, streamfilter.MaxPatterns)
		}
		for name, want := range map[string]struct {
			record []byte
			pass   bool
		}{
			"the region's row":         {insert(tabledef.LedgerPrefix, tabledef.ChargeRowType, "region-a"), c.ownRow},
			"another region's row":     {insert(tabledef.LedgerPrefix, tabledef.ChargeRowType, "region-b"), c.otherRegionsRow},
			"a row of no region":       {insert(tabledef.LedgerPrefix, tabledef.ChargeRowType, ""), c.noRegionRow},
			"a refund row":             {insert(tabledef.RefundPrefix, tabledef.RefundRowType, "region-a"), c.refund},
			"a balance item written":   {insert(tabledef.BalancePrefix, "", ""), c.balance},
			"a held marker":            {insert(tabledef.LedgerPrefix, tabledef.HeldMarkerType, ""), false},
			"a voided marker":          {insert(tabledef.LedgerPrefix, tabledef.VoidedMarkerType, ""), false},
			"a refund's voided marker": {insert(tabledef.RefundPrefix, tabledef.VoidedMarkerType, ""), false},
			"a capture row":            {insert(tabledef.CapturePrefix, tabledef.CaptureRowType, "region-a"), c.refund},
			"a void row":               {insert(tabledef.VoidPrefix, tabledef.VoidRowType, "region-a"), c.refund},
			"a capture of no region":   {insert(tabledef.CapturePrefix, tabledef.CaptureRowType, ""), c.noRegionRow},
			"a void's voided marker":   {insert(tabledef.VoidPrefix, tabledef.VoidedMarkerType, ""), false},
			"another region's void":    {insert(tabledef.VoidPrefix, tabledef.VoidRowType, "region-b"), c.otherRegionsRow},
		} {
			got, err := s.Match(want.record)
			if err != nil || got != want.pass {
				t.Errorf("%q, %s: %v, %v; want %v", c.set, name, got, err, want.pass)
			}
		}
	}
}

package operations_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/idempotent-payments/idempay/internal/obs"
	"github.com/idempotent-payments/idempay/internal/operations"
	"github.com/idempotent-payments/idempay/internal/tabledef"
)

// TestRegistrations: every registration names its rows and events and
// declares its triggers, and no two can be mistaken for each other by a
// name, a row id or a row key.
func TestRegistrations(t *testing.T) {
	regs := operations.All()
	if len(regs) == 0 {
		t.Fatal("no operation registered")
	}
	for i, r := range regs {
		if r.Name == "" || r.RowIDPrefix == "" || r.RowKeyPrefix == "" || len(r.Triggers) == 0 || len(r.Events) == 0 || r.Held == nil || r.Released == nil ||
			r.MovementKind == "" || r.Moves == nil { // the daily match pairs every operation's rows
			t.Errorf("registration %d is incomplete: %+v", i, r)
		}
		if got, ok := operations.ByName(r.Name); !ok || got.Name != r.Name {
			t.Errorf("ByName(%q) = %q, %t", r.Name, got.Name, ok)
		}
		if got, ok := operations.ByRowID(r.RowIDPrefix + "x"); !ok || got.Name != r.Name {
			t.Errorf("ByRowID of %s's row = %q, %t", r.Name, got.Name, ok)
		}
		if got, ok := operations.ByRowKey(r.RowKeyPrefix + r.RowIDPrefix + "x"); !ok || got.Name != r.Name {
			t.Errorf("ByRowKey of %s's row = %q, %t", r.Name, got.Name, ok)
		}
		for _, o := range regs[i+1:] {
			if r.Name == o.Name || strings.HasPrefix(r.RowIDPrefix, o.RowIDPrefix) || strings.HasPrefix(o.RowIDPrefix, r.RowIDPrefix) ||
				strings.HasPrefix(r.RowKeyPrefix, o.RowKeyPrefix) || strings.HasPrefix(o.RowKeyPrefix, r.RowKeyPrefix) {
				t.Errorf("%s and %s can be mistaken for each other", r.Name, o.Name)
			}
		}
	}
	if _, ok := operations.ByName("payout"); ok {
		t.Error("an operation nobody registered is found")
	}
}

// TestRowsAreTheTables: the registrations' rows are the table's
// (tabledef.Rows), which the stream filters pass: one per operation.
func TestRowsAreTheTables(t *testing.T) {
	var registered, table []string
	for _, r := range operations.All() {
		registered = append(registered, r.RowKeyPrefix)
	}
	for _, r := range tabledef.Rows() {
		table = append(table, r.Prefix)
	}
	if !slices.Equal(registered, table) {
		t.Fatalf("registered rows %v, the table's %v", registered, table)
	}
}

// TestCountsAreObs: the operations counted apart (obs.CountedOperations,
// which the request line's metrics and the CDK app read) are those whose
// registration has a Metric, each with its registration's metrics.
func TestCountsAreObs(t *testing.T) {
	var fromRegistrations []obs.OperationCounts
	for _, reg := range operations.All() {
		if reg.Metric != "" {
			fromRegistrations = append(fromRegistrations, obs.OperationCounts{Operation: reg.Name, Metric: reg.Metric, MismatchMetric: reg.MismatchMetric})
		}
	}
	if got := obs.CountedOperations(); !slices.Equal(got, fromRegistrations) {
		t.Errorf("obs counts %v, the registrations %v", got, fromRegistrations)
	}
}

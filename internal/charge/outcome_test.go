package charge_test

import (
	"slices"
	"testing"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/obs"
)

// TestOutcomeNames: every outcome has a name of its own in the
// observability vocabulary (obs.Outcomes, which docs/operating.md lists).
func TestOutcomeNames(t *testing.T) {
	seen := map[obs.Outcome]charge.Outcome{}
	for _, o := range charge.Outcomes() {
		name := o.Name()
		if !slices.Contains(obs.Outcomes(), name) {
			t.Errorf("outcome %d is named %q, which is not in the vocabulary", int(o), name)
		}
		if other, dup := seen[name]; dup {
			t.Errorf("%d and %d are both %q", int(other), int(o), name)
		}
		seen[name] = o
	}
	for _, r := range []charge.Reconciled{charge.NothingToDo, charge.ReconciledCompleted, charge.ReconciledReleased, charge.ReconciledHeld, charge.ReconciledMismatch} {
		if !slices.Contains(obs.Outcomes(), r.Name()) {
			t.Errorf("reconciliation %d is named %q, which is not in the vocabulary", int(r), r.Name())
		}
	}
}

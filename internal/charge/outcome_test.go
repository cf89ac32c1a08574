package charge_test

import (
	"context"
	"slices"
	"testing"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/charge/chargetest"
	"github.com/idempotent-payments/idempay/internal/httpapi"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/idem/idemtest"
	"github.com/idempotent-payments/idempay/internal/obs"
	"github.com/idempotent-payments/idempay/internal/op"
)

// TestOutcomeNames: every outcome has a name of its own in the
// observability vocabulary (obs.Outcomes, which docs/operating.md lists).
func TestOutcomeNames(t *testing.T) {
	seen := map[obs.Outcome]op.Outcome{}
	for _, o := range op.Outcomes() {
		name := o.Name()
		if !slices.Contains(obs.Outcomes(), name) {
			t.Errorf("outcome %d is named %q, which is not in the vocabulary", int(o), name)
		}
		if other, dup := seen[name]; dup {
			t.Errorf("%d and %d are both %q", int(other), int(o), name)
		}
		seen[name] = o
	}
	for _, r := range []op.Reconciled{op.NothingToDo, op.ReconciledCompleted, op.ReconciledReleased, op.ReconciledHeld, op.ReconciledMismatch} {
		if !slices.Contains(obs.Outcomes(), r.Name()) {
			t.Errorf("reconciliation %d is named %q, which is not in the vocabulary", int(r), r.Name())
		}
	}
}

// TestResultCarriesTheParsedKey: the door parses the key once and the
// result carries it, so whoever acts on the key after the call (the
// consumer's lookup by key, a rejection's event) takes the bare key,
// whichever form the input sent. A replay in the quoted form is the same
// key's replay.
func TestResultCarriesTheParsedKey(t *testing.T) {
	t.Parallel()
	guard := idem.NewGuard(idemtest.NewMemoryStore(), idem.Config{})
	svc := chargetest.Service(guard, &scripted{authorize: captured, lookup: absent}, httpapi.Render, charge.Config{})
	first := svc.Charge(context.Background(), input("acct", "quoted-key-1", body))
	again := svc.Charge(context.Background(), input("acct", `"quoted-key-1"`, body))
	if first.Outcome != op.Executed || again.Outcome != op.Replayed || first.Key != "quoted-key-1" || again.Key != "quoted-key-1" {
		t.Fatalf("bare: %s %q; quoted: %s %q; want executed then replayed, both with the bare key", first.Outcome, first.Key, again.Outcome, again.Key)
	}
	if res := svc.ByKey(context.Background(), "acct", again.Key); res.Outcome != op.Found {
		t.Fatalf("the lookup by the result's key: %s, want found", res.Outcome)
	}
	if bad := svc.Charge(context.Background(), input("acct", "short", body)); bad.Outcome != op.KeyInvalid || bad.Key != "" {
		t.Fatalf("an invalid key: %s %q, want refused with no parsed key", bad.Outcome, bad.Key)
	}
}

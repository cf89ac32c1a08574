package charge_test

import (
	"context"
	"errors"
	"testing"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/charge/chargetest"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/idem/idemtest"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/sandbox"
)

// TestStepsRefuseARefundsRecord: an operator's steps and the reconciler
// of the charge service refuse a refund's record (ErrNotAChargeRecord) and
// write nothing: a void of a held refund here would delete its record and
// leave its reservation on the balance.
func TestStepsRefuseARefundsRecord(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := idemtest.NewMemoryStore()
	svc := chargetest.Service(idem.NewGuard(store, idem.Config{}), sandbox.New(""), chargetest.Render, charge.Config{})
	pk := idem.Scope{Operation: "refund", Account: "acct_1", Key: "refund-key-1"}.PK()
	d := op.Decision{PK: pk, Instance: "0123456789abcdef0123456789abcdef01234567", ID: "decision-1", By: "ops", Action: idem.SettleVoidConfirmed}
	for name, err := range map[string]error{
		"settle":    func() error { _, err := svc.Settle(ctx, d); return err }(),
		"read back": func() error { _, err := svc.ReadBack(ctx, d); return err }(),
		"peek":      func() error { _, err := svc.Peek(ctx, pk); return err }(),
		"reconcile": func() error { _, err := svc.Reconcile(ctx, pk); return err }(),
	} {
		if !errors.Is(err, charge.ErrNotAChargeRecord) {
			t.Errorf("%s: %v, want ErrNotAChargeRecord", name, err)
		}
	}
}

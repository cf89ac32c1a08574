package httpapi

import (
	"testing"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/refund"
)

// TestEveryCodeHasAForm: every code an operation's outcome answers with,
// and every code of a stored answer or of the adapter's own, has its
// status and title, one per code.
func TestEveryCodeHasAForm(t *testing.T) {
	codes := []op.Code{op.CodeChargeDeclined, op.CodeRefundDeclined, op.CodeRefundExceedsCharge, op.CodeRefundLimitReached,
		op.CodeUnsupportedMediaType, op.CodeInternal}
	for _, o := range op.Outcomes() {
		codes = append(codes, charge.Codes.Of(o), refund.Codes.Of(o))
	}
	for _, code := range codes {
		if code == "" {
			continue
		}
		if f, ok := forms[code]; !ok || f.status < 400 || f.status > 599 || f.title == "" {
			t.Errorf("%s: form %+v", code, f)
		}
	}
}

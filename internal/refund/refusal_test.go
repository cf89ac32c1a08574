package refund_test

import (
	"encoding/json"
	"testing"

	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/refund"
)

// FuzzRefusalOf: whatever a record holds, RefusalOf names a code only for
// a 422 whose one code member is that code.
func FuzzRefusalOf(f *testing.F) {
	f.Add(422, `{"code":"REFUND_EXCEEDS_CHARGE","refundable":7,"status":422}`)
	f.Add(422, `{"code":"REFUND_LIMIT_REACHED","status":422}`)
	f.Add(422, `{"refundable":-1,"refundable":2}`)
	f.Fuzz(func(t *testing.T, status int, body string) {
		got := refund.RefusalOf(idem.Response{StatusCode: status, Body: []byte(body)})
		if got == "" {
			return
		}
		var doc map[string]any
		if status != 422 || json.Unmarshal([]byte(body), &doc) != nil || doc["code"] != string(got) ||
			(got != op.CodeRefundLimitReached && got != op.CodeRefundExceedsCharge) {
			t.Fatalf("%d %q read as %q", status, body, got)
		}
	})
}

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

// TestRefusalOfReadsTheTypedResultFirst: a record's typed result decides
// (whatever its bytes say), and only a record written without one has
// its bytes read.
func TestRefusalOfReadsTheTypedResultFirst(t *testing.T) {
	limit := []byte(`{"code":"REFUND_LIMIT_REACHED","status":422}`)
	for _, c := range []struct {
		resp idem.Response
		want op.Code
	}{
		{idem.Response{StatusCode: 422, Body: limit, Result: map[string]string{"code": "REFUND_EXCEEDS_CHARGE", "id": "re_1", "refundable": "5"}}, op.CodeRefundExceedsCharge},
		{idem.Response{StatusCode: 422, Body: limit, Result: map[string]string{"id": "re_1"}}, ""},
		{idem.Response{StatusCode: 402, Result: map[string]string{"code": "REFUND_DECLINED", "id": "re_1"}}, ""},
		{idem.Response{StatusCode: 422, Body: limit}, op.CodeRefundLimitReached}, // written before results: the bytes
	} {
		if got := refund.RefusalOf(c.resp); got != c.want {
			t.Errorf("RefusalOf(%d %s, %v) = %q, want %q", c.resp.StatusCode, c.resp.Body, c.resp.Result, got, c.want)
		}
	}
}

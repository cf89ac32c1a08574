package httpapi_test

import (
	"encoding/json"
	"testing"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/httpapi"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/refund"
)

func TestRefundRefusalReadsBackTheBound(t *testing.T) {
	t.Parallel()
	succeeded := &refund.Refund{ID: "re_1", ChargeID: "ch_1", Amount: 100, Currency: "BRL", Status: acquirer.RefundSucceeded}
	declined := &refund.Refund{ID: "re_1", ChargeID: "ch_1", Amount: 100, Currency: "BRL", Status: acquirer.RefundDeclined, DeclineCode: "do_not_honor"}
	for _, tc := range []struct {
		answer refund.Answer
		want   httpapi.Code
	}{
		{refund.Answer{Exceeded: true, Refundable: 0}, httpapi.RefundExceedsCharge},
		{refund.Answer{Exceeded: true, Refundable: 2500}, httpapi.RefundExceedsCharge},
		{refund.Answer{LimitReached: true}, httpapi.RefundLimitReached},
		{refund.Answer{Refund: succeeded}, ""},
		{refund.Answer{Refund: declined}, ""},
	} {
		if got := httpapi.RefundRefusal(httpapi.RenderRefund(tc.answer)); got != tc.want {
			t.Errorf("RefundRefusal(RenderRefund(%+v)) = %q, want %q", tc.answer, got, tc.want)
		}
	}
	exceeded := httpapi.RenderRefund(refund.Answer{Exceeded: true, Refundable: 2500})
	// Read by its code, not its wording: an answer stored before its
	// detail changed still reads.
	if got := httpapi.RefundRefusal(idem.Response{StatusCode: 422, Body: []byte(`{"code": "REFUND_EXCEEDS_CHARGE", "detail": "older words", "refundable": 1}`)}); got != httpapi.RefundExceedsCharge {
		t.Errorf("an older wording read as %q", got)
	}
	for _, resp := range []idem.Response{
		{StatusCode: 400, Body: exceeded.Body},
		{StatusCode: 422, Body: []byte(`{"refundable": 2500}`)},
		{StatusCode: 422, Body: []byte(`{"code": "IDEMPOTENCY_KEY_REUSED"}`)},
		{StatusCode: 422, Body: []byte(`{"code": "REFUND_LIMIT_REACHED", "Code": "x"}`)},
		{StatusCode: 422, Body: []byte(`{"code": "REFUND_LIMIT_REACHED"} {}`)},
		{StatusCode: 422},
	} {
		if got := httpapi.RefundRefusal(resp); got != "" {
			t.Errorf("RefundRefusal(%d %s) = %q, want none", resp.StatusCode, resp.Body, got)
		}
	}
}

// FuzzRefundRefusal: whatever a record holds, RefundRefusal names a code
// only for a 422 whose one code member is that code.
func FuzzRefundRefusal(f *testing.F) {
	f.Add(422, string(httpapi.RenderRefund(refund.Answer{Exceeded: true, Refundable: 7}).Body))
	f.Add(422, string(httpapi.RenderRefund(refund.Answer{LimitReached: true}).Body))
	f.Add(422, `{"refundable":-1,"refundable":2}`)
	f.Fuzz(func(t *testing.T, status int, body string) {
		resp := idem.Response{StatusCode: status, Body: []byte(body)}
		got := httpapi.RefundRefusal(resp)
		if got == "" {
			return
		}
		var doc map[string]any
		if status != 422 || json.Unmarshal([]byte(body), &doc) != nil || doc["code"] != string(got) ||
			(got != httpapi.RefundLimitReached && got != httpapi.RefundExceedsCharge) {
			t.Fatalf("%d %q read as %q", status, body, got)
		}
	})
}

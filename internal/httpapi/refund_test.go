package httpapi_test

import (
	"testing"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/httpapi"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/refund"
)

// TestRefusalReadsBackTheBound: the core's fallback (refund.RefusalOf)
// reads the bound's refusal back from the answers this adapter renders,
// as Answer.Refusal names it.
func TestRefusalReadsBackTheBound(t *testing.T) {
	t.Parallel()
	succeeded := &refund.Refund{Origin: op.Origin{ID: "re_1"}, ChargeID: "ch_1", Amount: 100, Currency: "BRL", Status: acquirer.RefundSucceeded}
	declined := &refund.Refund{Origin: op.Origin{ID: "re_1"}, ChargeID: "ch_1", Amount: 100, Currency: "BRL", Status: acquirer.RefundDeclined, DeclineCode: "do_not_honor"}
	for _, tc := range []struct {
		answer refund.Answer
		want   op.Code
	}{
		{refund.Answer{Exceeded: true, Refundable: 0}, op.CodeRefundExceedsCharge},
		{refund.Answer{Exceeded: true, Refundable: 2500}, op.CodeRefundExceedsCharge},
		{refund.Answer{LimitReached: true}, op.CodeRefundLimitReached},
		{refund.Answer{Refund: succeeded}, ""},
		{refund.Answer{Refund: declined}, ""},
	} {
		if got := refund.RefusalOf(httpapi.RenderRefund(tc.answer)); got != tc.want || tc.answer.Refusal() != tc.want {
			t.Errorf("RefusalOf(RenderRefund(%+v)) = %q, want %q", tc.answer, got, tc.want)
		}
	}
	exceeded := httpapi.RenderRefund(refund.Answer{Exceeded: true, Refundable: 2500})
	// Read by its code, not its wording: an answer stored before its
	// detail changed still reads.
	if got := refund.RefusalOf(idem.Response{StatusCode: 422, Body: []byte(`{"code": "REFUND_EXCEEDS_CHARGE", "detail": "older words", "refundable": 1}`)}); got != op.CodeRefundExceedsCharge {
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
		if got := refund.RefusalOf(resp); got != "" {
			t.Errorf("RefusalOf(%d %s) = %q, want none", resp.StatusCode, resp.Body, got)
		}
	}
}

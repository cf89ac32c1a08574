package httpapi_test

import (
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
	for _, resp := range []idem.Response{
		{StatusCode: 422, Body: append([]byte(" "), exceeded.Body...)},
		{StatusCode: 400, Body: exceeded.Body},
		{StatusCode: 422, Body: []byte(`{"refundable": 2500}`)},
		{StatusCode: 422, Body: []byte(`{"code": "REFUND_LIMIT_REACHED"}`)},
		{StatusCode: 422},
	} {
		if got := httpapi.RefundRefusal(resp); got != "" {
			t.Errorf("RefundRefusal(%d %s) = %q, want none", resp.StatusCode, resp.Body, got)
		}
	}
}

// FuzzRefundRefusal: whatever a record holds, RefundRefusal names a code
// only for bytes that are exactly that code's answer.
func FuzzRefundRefusal(f *testing.F) {
	f.Add(422, string(httpapi.RenderRefund(refund.Answer{Exceeded: true, Refundable: 7}).Body))
	f.Add(422, string(httpapi.RenderRefund(refund.Answer{LimitReached: true}).Body))
	f.Add(422, `{"refundable":-1,"refundable":2}`)
	f.Fuzz(func(t *testing.T, status int, body string) {
		resp := idem.Response{StatusCode: status, Body: []byte(body)}
		switch httpapi.RefundRefusal(resp) {
		case "":
		case httpapi.RefundLimitReached:
			if again := httpapi.RenderRefund(refund.Answer{LimitReached: true}); string(again.Body) != body || status != 422 {
				t.Fatalf("%d %q read as the limit", status, body)
			}
		case httpapi.RefundExceedsCharge:
			if status != 422 {
				t.Fatalf("%d %q read as exceeded", status, body)
			}
		default:
			t.Fatalf("%d %q: an unknown code", status, body)
		}
	})
}

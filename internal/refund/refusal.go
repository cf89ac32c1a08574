package refund

import (
	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/strictjson"
)

// Refusal is the code of a bound's refusal in a: REFUND_EXCEEDS_CHARGE or
// REFUND_LIMIT_REACHED, and "" for a refund the acquirer decided.
func (a Answer) Refusal() op.Code {
	switch {
	case a.Refund != nil:
		return ""
	case a.Exceeded:
		return op.CodeRefundExceedsCharge
	case a.LimitReached:
		return op.CodeRefundLimitReached
	}
	return ""
}

// Result is the typed result a's record stores beside its answer
// (op.Result): the refund's id, the answer's code (a decline's, or the
// bound's refusal's), whether a row answers it and, for an amount over
// what remained, Refundable.
func (a Answer) Result(refundID string) op.Result {
	r := op.Result{ID: refundID, Code: a.Refusal(), Rowless: a.Refund == nil}
	switch {
	case a.Refund != nil && a.Refund.Status == acquirer.RefundDeclined:
		r.Code = op.CodeRefundDeclined
	case a.Exceeded:
		r.Refundable = &a.Refundable
	}
	return r
}

// RefusalOf is the bound's refusal a stored answer carries, for a replay:
// its typed result's code (op.ResultOf) when it has one. A record written
// before results were stored keeps the answer's bytes only, so for it,
// until its retention has passed (90 days), the refusal is read from the
// 422 problem's code member (not its wording, so an answer stored before
// a title or detail changed still reads): the one place that reads a
// stored answer's bytes; no adapter does. "" for any other answer.
func RefusalOf(resp idem.Response) op.Code {
	if r, ok := op.ResultOf(resp); ok {
		switch r.Code {
		case op.CodeRefundExceedsCharge, op.CodeRefundLimitReached:
			return r.Code
		}
		return ""
	}
	if resp.StatusCode != 422 {
		return ""
	}
	var doc struct {
		Code op.Code `json:"code"`
	}
	if strictjson.UnmarshalResponse(resp.Body, &doc) != nil {
		return ""
	}
	switch doc.Code {
	case op.CodeRefundExceedsCharge, op.CodeRefundLimitReached:
		return doc.Code
	}
	return ""
}

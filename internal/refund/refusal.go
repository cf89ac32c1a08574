package refund

import (
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

// RefusalOf reads the bound's refusal back from a stored answer, for a
// replay, whose record keeps the answer's bytes only: the 422 problem's
// code member (not its wording, so an answer stored before a title or
// detail changed still reads), and "" for any other answer. The one
// place that reads a stored answer's bytes; no adapter does.
func RefusalOf(resp idem.Response) op.Code {
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

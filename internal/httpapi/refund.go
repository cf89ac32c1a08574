package httpapi

import (
	"encoding/json"
	"time"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/refund"
	"github.com/idempotent-payments/idempay/internal/route"
)

// RenderRefund is the stored answer of a refund (a refund.Renderer): 201
// with the refund when it succeeded; 402 REFUND_DECLINED with the refund
// id and the decline code when the acquirer declined it; 422
// REFUND_EXCEEDS_CHARGE with refundable, or 422 REFUND_LIMIT_REACHED, when
// the bound refused it. A status and a body only, as Render's:
// RefundHeaders rebuilds the headers.
func RenderRefund(a refund.Answer) idem.Response {
	var p problem
	switch {
	case a.Refund != nil && a.Refund.Status == acquirer.RefundSucceeded:
		return idem.Response{StatusCode: 201, Body: RefundBody(*a.Refund)}
	case a.Refund != nil:
		p = problem{code: op.CodeRefundDeclined, detail: detailRefundDeclined, extensions: map[string]any{"refund_id": a.Refund.ID, "decline_code": a.Refund.DeclineCode}}
	case a.Exceeded:
		p = problem{code: op.CodeRefundExceedsCharge, detail: detailRefundExceeds, extensions: map[string]any{"refundable": a.Refundable}}
	default:
		p = problem{code: op.CodeRefundLimitReached, detail: detailRefundLimit}
	}
	r := p.response()
	return idem.Response{StatusCode: r.StatusCode, Body: r.Body}
}

// RefundHeaders are the HTTP headers of a refund's stored answer: for 201
// the JSON content type and the refund's Location, else the problem
// content type.
func RefundHeaders(resp idem.Response, refundID string) map[string]string {
	if resp.StatusCode != 201 {
		return map[string]string{"Content-Type": ProblemContentType}
	}
	return map[string]string{"Content-Type": "application/json", "Location": route.RefundLocation(refundID)}
}

// refundJSON is the public shape of a refund.
type refundJSON struct {
	ID          string `json:"id"`
	Object      string `json:"object"`
	ChargeID    string `json:"charge_id"`
	Amount      int64  `json:"amount"`
	Currency    string `json:"currency"`
	Status      string `json:"status"`
	DeclineCode string `json:"decline_code,omitempty"`
	Reason      string `json:"reason,omitempty"`
	CreatedAt   string `json:"created_at"`
}

// RefundBody is the refund's JSON, as the 201 answer and GET return it.
func RefundBody(r refund.Refund) []byte {
	b, err := json.Marshal(refundJSON{
		ID: r.ID, Object: "refund", ChargeID: r.ChargeID, Amount: r.Amount, Currency: r.Currency,
		Status: r.Status, DeclineCode: r.DeclineCode, Reason: r.Reason, CreatedAt: r.CreatedAt.Format(time.RFC3339Nano),
	})
	if err != nil { // cannot happen: strings and a number
		panic(err)
	}
	return b
}

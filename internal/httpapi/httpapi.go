// Package httpapi is the API's HTTP adapter, the one place that speaks
// HTTP: it reads API Gateway's events (Handler), calls the charge or the
// refund service's door, and answers each outcome as one table says (problems:
// code, status, title, detail, as RFC 9457 problem documents). It also
// renders a charge (Body) and the answer stored when the acquirer decides
// (Render), which the queue consumer stores too, because a charge executed
// from the queue is replayed to an HTTP client byte for byte.
//
// The routes stay in the route package, which imports nothing, so the CDK
// app can read them without linking this one.
package httpapi

import (
	"encoding/json"
	"time"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/route"
)

// Render is the stored answer of ch (a charge.Renderer): 201 with the
// charge when captured or authorized, 402 CHARGE_DECLINED with the charge
// id and decline code when declined. It is a status and a body only:
// Headers rebuilds the HTTP headers from them and the charge's id, so the
// record does not store what it can rebuild and every replay carries the
// same headers as the first answer.
func Render(ch charge.Charge) idem.Response {
	if ch.Status == acquirer.StatusDeclined {
		r := problem{code: op.CodeChargeDeclined, detail: detailChargeDeclined, extensions: map[string]any{"charge_id": ch.ID, "decline_code": ch.DeclineCode}}.response()
		return idem.Response{StatusCode: r.StatusCode, Body: r.Body}
	}
	return idem.Response{StatusCode: 201, Body: Body(ch)}
}

// Headers are the HTTP headers of the stored answer resp of the charge
// chargeID (charge.Result.ChargeID): those it was stored with (records
// written before answers were stored without them), else the ones Render's
// status implies: for 201 the JSON content type and the charge's
// Location, for a problem the problem content type.
func Headers(resp idem.Response, chargeID string) map[string]string {
	switch {
	case len(resp.Headers) > 0:
		return resp.Headers
	case resp.StatusCode != 201:
		return map[string]string{"Content-Type": ProblemContentType}
	case chargeID == "":
		return map[string]string{"Content-Type": "application/json"}
	}
	return map[string]string{"Content-Type": "application/json", "Location": route.Location(chargeID)}
}

// chargeJSON is the public shape of a charge. The account is not in it: the
// caller is the account.
type chargeJSON struct {
	ID              string `json:"id"`
	Object          string `json:"object"`
	Status          string `json:"status"`
	Amount          int64  `json:"amount"`
	Currency        string `json:"currency"`
	OrderID         string `json:"order_id"`
	Description     string `json:"description,omitempty"`
	DeclineCode     string `json:"decline_code,omitempty"`
	AuthorizationID string `json:"authorization_id"`
	// AuthorizationExpiresAt is an authorization's only.
	AuthorizationExpiresAt string `json:"authorization_expires_at,omitempty"`
	CreatedAt              string `json:"created_at"`
	// AmountCaptured and AmountRefunded are on the GETs' answers only
	// (FoundBody); AmountCapturable on theirs and on an authorization's
	// 201.
	AmountCaptured   *int64 `json:"amount_captured,omitempty"`
	AmountCapturable *int64 `json:"amount_capturable,omitempty"`
	AmountRefunded   *int64 `json:"amount_refunded,omitempty"`
}

// Body is the charge's JSON, as the 201 answer returns it. An
// authorization made without its capture has its expiry and what it
// leaves capturable (all of it); a captured charge's body is what it was
// before authorizations existed, byte for byte.
func Body(ch charge.Charge) []byte {
	j := chargeJSONOf(ch)
	if ch.Status == acquirer.StatusAuthorized {
		j.AmountCapturable = &ch.Amount
	}
	return marshal(j)
}

// FoundBody is a charge as its GETs return it: Body, then its figures
// (amount_captured, amount_capturable and amount_refunded, the sum of its
// succeeded refunds) and the status they give. A POST's answer has no
// amount_captured or amount_refunded (an authorization's has
// amount_capturable), so a charge's replay stays its first answer byte
// for byte.
func FoundBody(ch charge.Charge, f charge.Figures) []byte {
	j := chargeJSONOf(ch)
	j.Status, j.AmountCaptured, j.AmountCapturable, j.AmountRefunded = f.Status, &f.Captured, &f.Capturable, &f.Refunded
	return marshal(j)
}

func chargeJSONOf(ch charge.Charge) chargeJSON {
	j := chargeJSON{
		ID: ch.ID, Object: "charge", Status: ch.Status, Amount: ch.Amount, Currency: ch.Currency,
		OrderID: ch.OrderID, Description: ch.Description, DeclineCode: ch.DeclineCode,
		AuthorizationID: ch.AuthorizationID, CreatedAt: ch.CreatedAt.Format(time.RFC3339Nano),
	}
	if !ch.AuthorizationExpiresAt.IsZero() {
		j.AuthorizationExpiresAt = ch.AuthorizationExpiresAt.UTC().Format(time.RFC3339Nano)
	}
	return j
}

func marshal(j chargeJSON) []byte {
	b, err := json.Marshal(j)
	if err != nil { // cannot happen: strings and numbers
		panic(err)
	}
	return b
}

// Package httpapi is the charge API's representation of a charge: its
// public JSON and the answer stored when the acquirer decides. Both
// functions use it, because a charge executed from the queue is replayed to
// an HTTP client byte for byte.
package httpapi

import (
	"encoding/json"
	"time"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/problem"
	"github.com/idempotent-payments/idempay/internal/route"
)

// Answer is the stored answer of ch (a charge.Answer): 201 with the charge
// and its Location when captured, 402 CHARGE_DECLINED with the charge id
// and decline code when declined.
func Answer(ch charge.Charge) idem.Response {
	if ch.Status == acquirer.StatusDeclined {
		status, headers, body := problem.Render(problem.Details{
			Code: problem.ChargeDeclined, Detail: "the card was declined; a new attempt needs a new Idempotency-Key",
			Extensions: map[string]any{"charge_id": ch.ID, "decline_code": ch.DeclineCode},
		})
		return idem.Response{StatusCode: status, Headers: headers, Body: body}
	}
	return idem.Response{StatusCode: 201, Headers: map[string]string{
		"Content-Type": "application/json",
		"Location":     route.Location(ch.ID),
	}, Body: Body(ch)}
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
	CreatedAt       string `json:"created_at"`
}

// Body is the charge's JSON, as the 201 answer and GET return it.
func Body(ch charge.Charge) []byte {
	b, err := json.Marshal(chargeJSON{
		ID: ch.ID, Object: "charge", Status: ch.Status, Amount: ch.Amount, Currency: ch.Currency,
		OrderID: ch.OrderID, Description: ch.Description, DeclineCode: ch.DeclineCode,
		AuthorizationID: ch.AuthorizationID, CreatedAt: ch.CreatedAt.Format(time.RFC3339Nano),
	})
	if err != nil { // cannot happen: strings and a number
		panic(err)
	}
	return b
}

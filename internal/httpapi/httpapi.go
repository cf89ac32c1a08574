// Package httpapi is the charge API's representation of a charge: its
// public JSON and the answer stored when the acquirer decides. Both
// functions use it, because a charge executed from the queue is replayed to
// an HTTP client byte for byte.
package httpapi

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/problem"
	"github.com/idempotent-payments/idempay/internal/route"
)

// Render is the stored answer of ch (a charge.Renderer): 201 with the charge
// when captured, 402 CHARGE_DECLINED with the charge id and decline code
// when declined. It is a status and a body only: Headers rebuilds the HTTP
// headers from them, so the record does not store what it can rebuild and
// every replay carries the same headers as the first answer.
func Render(ch charge.Charge) idem.Response {
	if ch.Status == acquirer.StatusDeclined {
		status, _, body := problem.Render(problem.Details{
			Code: problem.ChargeDeclined, Detail: "the card was declined; a new attempt needs a new Idempotency-Key",
			Extensions: map[string]any{"charge_id": ch.ID, "decline_code": ch.DeclineCode},
		})
		return idem.Response{StatusCode: status, Body: body}
	}
	return idem.Response{StatusCode: 201, Body: Body(ch)}
}

// Headers are the HTTP headers of a stored answer: those it was stored
// with (records written before answers were stored without them), else the
// ones Render's status and body imply — for 201 the JSON content type and
// the charge's Location (its id read back from the body, which Body wrote),
// for a problem the problem content type.
func Headers(resp idem.Response) map[string]string {
	if len(resp.Headers) > 0 {
		return resp.Headers
	}
	if resp.StatusCode != 201 {
		return map[string]string{"Content-Type": problem.ContentType}
	}
	headers := map[string]string{"Content-Type": "application/json"}
	if id := chargeID(resp.Body); id != "" {
		headers["Location"] = route.Location(id)
	}
	return headers
}

// chargeID reads the id of a charge's JSON as Body writes it: the id comes
// first, so no decoder runs on every answer. Anything else is decoded.
func chargeID(body []byte) string {
	const prefix = `{"id":"`
	if rest, ok := bytes.CutPrefix(body, []byte(prefix)); ok {
		if end := bytes.IndexByte(rest, '"'); end > 0 && validID(rest[:end]) {
			return string(rest[:end])
		}
	}
	var created struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(body, &created) != nil {
		return ""
	}
	return created.ID
}

// validID: the characters of a charge id (ch_ and hex digits), so no
// escape can hide in what the fast path reads.
func validID(id []byte) bool {
	for _, c := range id {
		if (c < '0' || c > '9') && (c < 'a' || c > 'z') && c != '_' {
			return false
		}
	}
	return true
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

package acquirer

import "time"

// Statuses of a refund.
const (
	RefundSucceeded = "succeeded"
	RefundDeclined  = "declined"
)

// RefundRequest is what is sent to refund part or all of an authorization.
type RefundRequest struct {
	AuthorizationID string `json:"authorization_id"`
	Amount          int64  `json:"amount"`
	Currency        string `json:"currency"`
}

// Refund is the acquirer's answer to a refund: evidence to be checked
// (CheckRefundTerms) before it becomes an outcome.
type Refund struct {
	ID              string `json:"id"`
	Status          string `json:"status"`
	DeclineCode     string `json:"decline_code,omitempty"`
	AuthorizationID string `json:"authorization_id"`
	Amount          int64  `json:"amount"`
	Currency        string `json:"currency"`
	// IdempotencyKey is the key the acquirer says it was asked under,
	// where it echoes it ("" when it does not).
	IdempotencyKey string    `json:"idempotency_key,omitempty"`
	CreatedAt      time.Time `json:"created_at"`
}

// ReadRefund decodes an answer of endpoint that carries a refund and
// checks its status against the body's.
func ReadRefund(endpoint string, status int, body []byte) (Refund, error) {
	return readAction[Refund]("refund", endpoint, status, body)
}

// RefundMismatchError is a refund's answer that disagrees with what was
// asked or with itself.
type RefundMismatchError = ActionMismatchError[Refund]

// CheckRefundTerms compares a refund with what was asked under key, as
// CheckTerms does an authorization's: the echoed key where there is one,
// terms stated (an amount, a currency and the authorization, a decline
// included), then the amount exactly, the currency byte for byte, and the
// authorization refunded. It returns nil or a *RefundMismatchError whose
// Endpoint and HTTPStatus are the caller's to fill.
func CheckRefundTerms(r Refund, key string, asked RefundRequest) error {
	return mismatch(checkAction(r, key, actionTerms{key, asked.Amount, asked.Currency, asked.AuthorizationID}, false), r)
}

package acquirer

import (
	"fmt"
	"time"

	"github.com/idempotent-payments/idempay/internal/strictjson"
)

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
	if !carriesAnswer(endpoint, status) {
		return Refund{}, fmt.Errorf("%w: status %d", ErrOutcomeUnknown, status)
	}
	var r Refund
	if err := strictjson.UnmarshalResponse(body, &r); err != nil || r.ID == "" || (r.Status != RefundSucceeded && r.Status != RefundDeclined) {
		return Refund{}, fmt.Errorf("%w: unreadable refund", ErrOutcomeUnknown)
	}
	if !pairs(endpoint, status, r.Status) {
		return Refund{}, &RefundMismatchError{Reason: ReasonStatusPairing, Endpoint: endpoint, HTTPStatus: status, Stated: r}
	}
	return r, nil
}

// RefundMismatchError is a refund answer that disagrees with what was
// asked or with itself, with what it said. It wraps ErrMismatch: nothing
// is to be stored as an outcome, and a person must decide.
type RefundMismatchError struct {
	// Reason names the first disagreement found (the Reason constants).
	Reason string
	// Endpoint is EndpointRefund or EndpointRefundLookup ("" in process).
	Endpoint string
	// HTTPStatus is the answer's status code.
	HTTPStatus int
	// Stated is the refund as the acquirer stated it.
	Stated Refund
}

func (e *RefundMismatchError) Error() string {
	return mismatchText(e.Reason, e.Endpoint, e.HTTPStatus, e.Stated.Status)
}

// Is makes errors.Is(err, ErrMismatch) true.
func (e *RefundMismatchError) Is(target error) bool { return target == ErrMismatch }

// CheckRefundTerms compares a refund with what was asked under key, as
// CheckTerms does an authorization's: the echoed key where there is one,
// terms stated (an amount, a currency and the authorization, a decline
// included), then the amount exactly, the currency byte for byte, and the
// authorization refunded. It returns nil or a *RefundMismatchError whose
// Endpoint and HTTPStatus are the caller's to fill.
func CheckRefundTerms(r Refund, key string, asked RefundRequest) error {
	reason := ""
	switch {
	case r.IdempotencyKey != "" && r.IdempotencyKey != key:
		reason = ReasonKey
	case r.Amount <= 0 || r.Currency == "" || r.AuthorizationID == "":
		reason = ReasonTermsMissing
	case r.Amount != asked.Amount:
		reason = ReasonAmount
	case r.Currency != asked.Currency:
		reason = ReasonCurrency
	case r.AuthorizationID != asked.AuthorizationID:
		reason = ReasonAuthorization
	default:
		return nil
	}
	return &RefundMismatchError{Reason: reason, Stated: r}
}

// Evidence is a refund's mismatch as it is kept for an operator: what was
// asked and what the acquirer said, as JSON.
func (e *RefundMismatchError) Evidence(key string, asked RefundRequest) []byte {
	return evidence(e.Reason, e.Endpoint, e.HTTPStatus, struct {
		RefundRequest
		IdempotencyKey string `json:"idempotency_key"`
	}{asked, key}, e.Stated)
}

// Package acquirer is what the card acquirer's answers are: the requests,
// the authorizations and refunds, the errors that classify a failure by
// what it proves (nothing was sent, or the outcome is unknown), and the
// checks that make an answer evidence (evidence.go). It knows no
// transport: the HTTP client is package acquirerhttp, injected into the
// operations as the store is.
package acquirer

import (
	"errors"
	"fmt"
	"time"

	"github.com/idempotent-payments/idempay/internal/strictjson"
)

// Errors callers branch on, with errors.Is.
var (
	// ErrNotSent: the request provably never left (no connection was made:
	// refused, DNS failure, dial timeout). The acquirer cannot have seen it.
	ErrNotSent = errors.New("acquirer request not sent")
	// ErrOutcomeUnknown: the request may have reached the acquirer (timeout,
	// connection reset after writing, a 5xx or any unexpected answer). The
	// authorization may exist; only a lookup by key can tell.
	ErrOutcomeUnknown = errors.New("acquirer outcome unknown")
	// ErrNotFound: a lookup found nothing (no authorization, no refund)
	// under the key.
	ErrNotFound = errors.New("not found under the key")
	// ErrCredentialRefused: the acquirer answered 401 (the credential is
	// not valid). Its contract (the sandbox's) is that the credential is
	// checked before anything is processed, so an Authorize refused this
	// way also wraps ErrNotSent. The credential has been told
	// (Credential.Refused, which re-reads its source at most every MinAge);
	// when it now holds a key other than the refused one, the error also
	// wraps ErrCredentialChanged. A 403 proves no such thing (a business
	// rule, a proxy) and is ErrOutcomeUnknown, after the same telling.
	ErrCredentialRefused = errors.New("acquirer refused the credential")
	// ErrCredentialChanged: with ErrCredentialRefused, the credential now
	// holds a key other than the refused one (this call's re-read found it,
	// or an earlier one did), so a caller that may send again
	// (charge.Service, after checking its lease) sends once more with it.
	// Without it the same key would be refused again: nothing to resend.
	ErrCredentialChanged = errors.New("the credential has changed since")
)

// Statuses of an authorization.
const (
	StatusCaptured = "captured"
	StatusDeclined = "declined"
)

// Request is what is sent to authorize a charge.
type Request struct {
	Amount        int64  `json:"amount"`
	Currency      string `json:"currency"`
	PaymentMethod string `json:"payment_method"`
	OrderID       string `json:"order_id"`
	Description   string `json:"description,omitempty"`
	// Capture false asks for the authorization alone (StatusAuthorized),
	// captured later; nil captures at once, and is not sent, so a
	// request without it is the same bytes as before it existed.
	Capture *bool `json:"capture,omitempty"`
}

// AuthorizeOnly reports whether r asks for the authorization alone.
func (r Request) AuthorizeOnly() bool { return r.Capture != nil && !*r.Capture }

// Authorization is the acquirer's answer: evidence to be checked
// (CheckTerms) before it becomes an outcome.
type Authorization struct {
	ID          string `json:"id"`
	Status      string `json:"status"`
	DeclineCode string `json:"decline_code,omitempty"`
	Amount      int64  `json:"amount"`
	Currency    string `json:"currency"`
	// IdempotencyKey is the key the acquirer says it was asked under,
	// where it echoes it ("" when it does not).
	IdempotencyKey string    `json:"idempotency_key,omitempty"`
	CreatedAt      time.Time `json:"created_at"`
	// ExpiresAt is when an authorization made without its capture lapses,
	// where the acquirer states it (zero otherwise).
	ExpiresAt time.Time `json:"expires_at,omitzero"`
}

// ReadAuthorization decodes an answer of endpoint that carries an authorization and
// checks its status against the body's.
func ReadAuthorization(endpoint string, status int, body []byte) (Authorization, error) {
	if !carriesAnswer(endpoint, status) {
		return Authorization{}, fmt.Errorf("%w: status %d", ErrOutcomeUnknown, status)
	}
	a, err := decode(body)
	if err != nil {
		return Authorization{}, err
	}
	return a, checkPairing(endpoint, status, a)
}

// decode reads an authorization strictly: an answer that could mean two
// things (two "status" members, a "Status" beside "status", bytes that are
// not UTF-8) is no answer, so the outcome stays unknown and is looked up
// again rather than guessed.
func decode(body []byte) (Authorization, error) {
	var a Authorization
	if err := strictjson.UnmarshalResponse(body, &a); err != nil || a.ID == "" || (a.Status != StatusCaptured && a.Status != StatusAuthorized && a.Status != StatusDeclined) {
		return Authorization{}, fmt.Errorf("%w: unreadable authorization", ErrOutcomeUnknown)
	}
	return a, nil
}

package acquirer

import (
	"fmt"

	"github.com/idempotent-payments/idempay/internal/strictjson"
)

// An action is what the acquirer does to an authorization after it was
// made: a refund, a capture or a void. Each is answered with its own
// type, and each answer is evidence, read (readAction) and checked
// (checkAction) the same way: the rules at the top of evidence.go, and
// the authorization it acts on, which must be the one asked.
type action interface {
	Refund | Capture | Void
	actionID() string
	actionStatus() string
	terms() actionTerms
}

// actionTerms are what an action's answer states and what its request
// asked: the key it was asked under (the echo; "" when not echoed), the
// amount, the currency and the authorization.
type actionTerms struct {
	key             string
	amount          int64
	currency        string
	authorizationID string
}

// ActionMismatchError is an action's answer that disagrees with what was
// asked or with itself, with what it said. It wraps ErrMismatch: nothing
// is to be stored as an outcome, and a person must decide.
type ActionMismatchError[T action] struct {
	// Reason names the first disagreement found (the Reason constants).
	Reason string
	// Endpoint is the action's endpoint or its lookup's ("" in process).
	Endpoint string
	// HTTPStatus is the answer's status code.
	HTTPStatus int
	// Stated is the action as the acquirer stated it.
	Stated T
}

func (e *ActionMismatchError[T]) Error() string {
	return mismatchText(e.Reason, e.Endpoint, e.HTTPStatus, e.Stated.actionStatus())
}

// Is makes errors.Is(err, ErrMismatch) true.
func (e *ActionMismatchError[T]) Is(target error) bool { return target == ErrMismatch }

// Evidence is an action's mismatch as it is kept for an operator: what was
// asked (the action's request) under key and what the acquirer said, as
// JSON.
func (e *ActionMismatchError[T]) Evidence(key string, asked ActionRequest) []byte {
	return evidence(e.Reason, e.Endpoint, e.HTTPStatus, asked.withKey(key), e.Stated)
}

// ActionRequest is the request of an action: RefundRequest, CaptureRequest
// or VoidRequest.
type ActionRequest interface {
	// withKey is the request as evidence keeps it: its members, then the
	// key it was sent under.
	withKey(key string) any
}

func (r RefundRequest) withKey(key string) any {
	return struct {
		RefundRequest
		IdempotencyKey string `json:"idempotency_key"`
	}{r, key}
}

func (r CaptureRequest) withKey(key string) any {
	return struct {
		CaptureRequest
		IdempotencyKey string `json:"idempotency_key"`
	}{r, key}
}

func (r VoidRequest) withKey(key string) any {
	return struct {
		VoidRequest
		IdempotencyKey string `json:"idempotency_key"`
	}{r, key}
}

// The statuses every action answers with.
const (
	actionSucceeded = "succeeded"
	actionDeclined  = "declined"
)

// readAction decodes an answer of endpoint that carries an action, named
// what in errors, and checks its status against the body's.
func readAction[T action](what, endpoint string, status int, body []byte) (T, error) {
	var a T
	if !carriesAnswer(endpoint, status) {
		return a, fmt.Errorf("%w: status %d", ErrOutcomeUnknown, status)
	}
	if err := strictjson.UnmarshalResponse(body, &a); err != nil || a.actionID() == "" ||
		(a.actionStatus() != actionSucceeded && a.actionStatus() != actionDeclined) {
		var zero T
		return zero, fmt.Errorf("%w: unreadable %s", ErrOutcomeUnknown, what)
	}
	if !pairs(endpoint, status, a.actionStatus()) {
		return a, &ActionMismatchError[T]{Reason: ReasonStatusPairing, Endpoint: endpoint, HTTPStatus: status, Stated: a}
	}
	return a, nil
}

// checkAction compares an action's answer a with what was asked under
// key: the echoed key where there is one, terms stated (an amount unless
// noAmount allows none, a currency and the authorization, a decline
// included), then the amount exactly, the currency byte for byte, and the
// authorization. It returns the first disagreement's reason, or "".
func checkAction[T action](a T, key string, asked actionTerms, noAmount bool) string {
	stated := a.terms()
	switch {
	case stated.key != "" && stated.key != key:
		return ReasonKey
	case stated.amount < 0 || stated.amount == 0 && !noAmount || stated.currency == "" || stated.authorizationID == "":
		return ReasonTermsMissing
	case stated.amount != asked.amount:
		return ReasonAmount
	case stated.currency != asked.currency:
		return ReasonCurrency
	case stated.authorizationID != asked.authorizationID:
		return ReasonAuthorization
	}
	return ""
}

// mismatch is checkAction's reason as an error: nil for none.
func mismatch[T action](reason string, a T) error {
	if reason == "" {
		return nil
	}
	return &ActionMismatchError[T]{Reason: reason, Stated: a}
}

func (r Refund) actionID() string     { return r.ID }
func (r Refund) actionStatus() string { return r.Status }
func (r Refund) terms() actionTerms {
	return actionTerms{r.IdempotencyKey, r.Amount, r.Currency, r.AuthorizationID}
}

func (c Capture) actionID() string     { return c.ID }
func (c Capture) actionStatus() string { return c.Status }
func (c Capture) terms() actionTerms {
	return actionTerms{c.IdempotencyKey, c.Amount, c.Currency, c.AuthorizationID}
}

func (v Void) actionID() string     { return v.ID }
func (v Void) actionStatus() string { return v.Status }
func (v Void) terms() actionTerms {
	return actionTerms{v.IdempotencyKey, v.Amount, v.Currency, v.AuthorizationID}
}

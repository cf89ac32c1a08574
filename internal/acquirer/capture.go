package acquirer

import "time"

// StatusAuthorized is an authorization asked for without its capture
// (Request.Capture false): the amount is held on the card until it is
// captured (Capture), released (Void) or expires (Authorization.ExpiresAt).
const StatusAuthorized = "authorized"

// Statuses of a capture and of a void.
const (
	CaptureSucceeded = "succeeded"
	CaptureDeclined  = "declined"
	VoidSucceeded    = "succeeded"
	VoidDeclined     = "declined"
)

// DeclineAuthorizationExpired is the decline code of a capture or a void
// the acquirer refused because the authorization's window had passed: it
// is read as the expiry it states, never as a decline of the capture
// alone.
const DeclineAuthorizationExpired = "authorization_expired"

// CaptureRequest is what is sent to capture part or all of an
// authorization made without its capture.
type CaptureRequest struct {
	AuthorizationID string `json:"authorization_id"`
	Amount          int64  `json:"amount"`
	Currency        string `json:"currency"`
	// Final releases what the capture leaves of the authorization: no
	// capture may follow it.
	Final bool `json:"final"`
}

// Capture is the acquirer's answer to a capture: evidence to be checked
// before it becomes an outcome.
type Capture struct {
	ID              string `json:"id"`
	Status          string `json:"status"`
	DeclineCode     string `json:"decline_code,omitempty"`
	AuthorizationID string `json:"authorization_id"`
	Amount          int64  `json:"amount"`
	Currency        string `json:"currency"`
	Final           bool   `json:"final"`
	// IdempotencyKey is the key the acquirer says it was asked under,
	// where it echoes it ("" when it does not).
	IdempotencyKey string    `json:"idempotency_key,omitempty"`
	CreatedAt      time.Time `json:"created_at"`
}

// VoidRequest is what is sent to release all that remains of an
// authorization. Amount is what the caller holds as remaining: the
// acquirer releases what it holds, and says how much.
type VoidRequest struct {
	AuthorizationID string `json:"authorization_id"`
	Amount          int64  `json:"amount"`
	Currency        string `json:"currency"`
}

// Void is the acquirer's answer to a void: Amount is what it released.
type Void struct {
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

// The reason of a capture whose answer states another finality than the
// one asked.
const ReasonFinal = "final_differs"

// CaptureMismatchError is a capture's answer that disagrees with what was
// asked or with itself.
type CaptureMismatchError = ActionMismatchError[Capture]

// VoidMismatchError is a void's answer that disagrees with what was asked
// or with itself.
type VoidMismatchError = ActionMismatchError[Void]

// ReadCapture decodes an answer of endpoint that carries a capture and
// checks its status against the body's. An answer no table names (202
// Accepted: an acquirer that will decide later) proves nothing:
// ErrOutcomeUnknown, to be looked up again, never a capture.
func ReadCapture(endpoint string, status int, body []byte) (Capture, error) {
	return readAction[Capture]("capture", endpoint, status, body)
}

// ReadVoid decodes an answer of endpoint that carries a void, as
// ReadCapture does a capture.
func ReadVoid(endpoint string, status int, body []byte) (Void, error) {
	return readAction[Void]("void", endpoint, status, body)
}

// CheckCaptureTerms compares a capture with what was asked under key, as
// CheckRefundTerms does a refund: the echoed key, terms stated, the amount,
// the currency and the authorization, and then whether it is final as
// asked. It returns nil or a *CaptureMismatchError whose Endpoint and
// HTTPStatus are the caller's to fill.
func CheckCaptureTerms(c Capture, key string, asked CaptureRequest) error {
	reason := checkAction(c, key, actionTerms{key, asked.Amount, asked.Currency, asked.AuthorizationID}, false)
	if reason == "" && c.Final != asked.Final {
		reason = ReasonFinal
	}
	return mismatch(reason, c)
}

// CheckVoidTerms compares a void with what was asked under key. A void
// that succeeded must have released the amount asked, which is what the
// caller's books hold as remaining: another amount means the two sides'
// books differ. A declined void released nothing, and states 0.
func CheckVoidTerms(v Void, key string, asked VoidRequest) error {
	want := actionTerms{key, asked.Amount, asked.Currency, asked.AuthorizationID}
	declined := v.Status == VoidDeclined
	if declined {
		want.amount = 0
	}
	return mismatch(checkAction(v, key, want, declined), v)
}

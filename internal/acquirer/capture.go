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

package capture

import (
	"context"
	"errors"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/op"
)

// Acquirer is what captures and voids need of the card acquirer.
type Acquirer interface {
	// Capture captures req under key, and Void releases what remains of
	// req's authorization under key; the acquirer deduplicates by key.
	// Errors wrap acquirer.ErrNotSent or acquirer.ErrOutcomeUnknown.
	Capture(ctx context.Context, key string, req acquirer.CaptureRequest) (acquirer.Capture, error)
	Void(ctx context.Context, key string, req acquirer.VoidRequest) (acquirer.Void, error)
	// LookupCapture and LookupVoid return the action made under key, or
	// acquirer.ErrNotFound.
	LookupCapture(ctx context.Context, key string) (acquirer.Capture, error)
	LookupVoid(ctx context.Context, key string) (acquirer.Void, error)
}

// asked is what one attempt asks of the acquirer: the entry's amount
// (which the reservation resolved) of the charge's authorization, and
// whether a capture is final.
type asked struct {
	AuthorizationID, Currency string
	Amount                    int64
	Final                     bool
}

// stated is what the acquirer's answer to a capture or a void states, as
// the row and an operator read it.
type stated struct {
	ID, Status, DeclineCode, AuthorizationID, Currency string
	Amount                                             int64
}

// acts are the acquirer's side of one of the two operations, A being its
// answer (acquirer.Capture or acquirer.Void): the call, its lookup, the
// check of an answer against what was asked, and what an answer and a
// mismatch state. The rest of the path is one for both (operation).
type acts[A any] interface {
	send(ctx context.Context, acq Acquirer, key string, q asked) (A, error)
	lookup(ctx context.Context, acq Acquirer, key string) (A, error)
	// check is acquirer.CheckCaptureTerms or CheckVoidTerms, the
	// mismatch naming endpoint.
	check(a A, key string, q asked, endpoint string) error
	stated(a A) stated
	// ofRow is the answer row states, of the authorization authorizationID:
	// what a hold shows when the row, not a fresh answer, disagrees.
	ofRow(row Row, authorizationID string) A
	// disagrees is a mismatch of a for reason, named by endpoint: the
	// operation's own findings (a row or an entry that disagrees).
	disagrees(a A, reason, endpoint string) error
	// mismatch is err's reason, endpoint and status, and its evidence of
	// what was asked (q under key): ok false when err is no mismatch of A.
	mismatch(err error, key string, q asked) (m heldFor, ok bool)
	// endpoints are the call's and its lookup's names.
	endpoints() (call, lookup string)
}

// heldFor is a mismatch as a hold records it.
type heldFor struct {
	Reason, Endpoint string
	HTTPStatus       int
	Stated           stated
	Evidence         []byte
}

// captureActs are a capture's acts.
type captureActs struct{}

func (captureActs) send(ctx context.Context, acq Acquirer, key string, q asked) (acquirer.Capture, error) {
	return acq.Capture(ctx, key, q.capture())
}

func (captureActs) lookup(ctx context.Context, acq Acquirer, key string) (acquirer.Capture, error) {
	return acq.LookupCapture(ctx, key)
}

func (captureActs) check(c acquirer.Capture, key string, q asked, endpoint string) error {
	err := acquirer.CheckCaptureTerms(c, key, q.capture())
	var m *acquirer.CaptureMismatchError
	if errors.As(err, &m) {
		m.Endpoint = endpoint
	}
	return err
}

func (captureActs) stated(c acquirer.Capture) stated {
	return stated{ID: c.ID, Status: c.Status, DeclineCode: c.DeclineCode, AuthorizationID: c.AuthorizationID, Currency: c.Currency, Amount: c.Amount}
}

func (captureActs) ofRow(r Row, authorizationID string) acquirer.Capture {
	return acquirer.Capture{ID: r.AcquirerActionID, Status: r.Status, DeclineCode: r.DeclineCode, AuthorizationID: authorizationID,
		Amount: r.Amount, Currency: r.Currency, Final: r.Final()}
}

func (captureActs) disagrees(c acquirer.Capture, reason, endpoint string) error {
	return &acquirer.CaptureMismatchError{Reason: reason, Endpoint: endpoint, Stated: c}
}

func (a captureActs) mismatch(err error, key string, q asked) (heldFor, bool) {
	var m *acquirer.CaptureMismatchError
	if !errors.As(err, &m) {
		return heldFor{}, false
	}
	return heldFor{Reason: m.Reason, Endpoint: m.Endpoint, HTTPStatus: m.HTTPStatus, Stated: a.stated(m.Stated), Evidence: m.Evidence(key, q.capture())}, true
}

func (captureActs) endpoints() (string, string) {
	return acquirer.EndpointCapture, acquirer.EndpointCaptureLookup
}

// voidActs are a void's acts.
type voidActs struct{}

func (voidActs) send(ctx context.Context, acq Acquirer, key string, q asked) (acquirer.Void, error) {
	return acq.Void(ctx, key, q.void())
}

func (voidActs) lookup(ctx context.Context, acq Acquirer, key string) (acquirer.Void, error) {
	return acq.LookupVoid(ctx, key)
}

func (voidActs) check(v acquirer.Void, key string, q asked, endpoint string) error {
	err := acquirer.CheckVoidTerms(v, key, q.void())
	var m *acquirer.VoidMismatchError
	if errors.As(err, &m) {
		m.Endpoint = endpoint
	}
	return err
}

func (voidActs) stated(v acquirer.Void) stated {
	return stated{ID: v.ID, Status: v.Status, DeclineCode: v.DeclineCode, AuthorizationID: v.AuthorizationID, Currency: v.Currency, Amount: v.Amount}
}

func (voidActs) ofRow(r Row, authorizationID string) acquirer.Void {
	return acquirer.Void{ID: r.AcquirerActionID, Status: r.Status, DeclineCode: r.DeclineCode, AuthorizationID: authorizationID,
		Amount: r.Amount, Currency: r.Currency}
}

func (voidActs) disagrees(v acquirer.Void, reason, endpoint string) error {
	return &acquirer.VoidMismatchError{Reason: reason, Endpoint: endpoint, Stated: v}
}

func (a voidActs) mismatch(err error, key string, q asked) (heldFor, bool) {
	var m *acquirer.VoidMismatchError
	if !errors.As(err, &m) {
		return heldFor{}, false
	}
	return heldFor{Reason: m.Reason, Endpoint: m.Endpoint, HTTPStatus: m.HTTPStatus, Stated: a.stated(m.Stated), Evidence: m.Evidence(key, q.void())}, true
}

func (voidActs) endpoints() (string, string) {
	return acquirer.EndpointVoid, acquirer.EndpointVoidLookup
}

func (q asked) capture() acquirer.CaptureRequest {
	return acquirer.CaptureRequest{AuthorizationID: q.AuthorizationID, Amount: q.Amount, Currency: q.Currency, Final: q.Final}
}

func (q asked) void() acquirer.VoidRequest {
	return acquirer.VoidRequest{AuthorizationID: q.AuthorizationID, Amount: q.Amount, Currency: q.Currency}
}

// termsOf are what an answer states, as an operator is shown them.
func termsOf(s stated) op.Terms {
	return op.Terms{AuthorizationID: s.AuthorizationID, ActionID: s.ID, Status: s.Status, Amount: s.Amount, Currency: s.Currency}
}

package acquirer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/idempotent-payments/idempay/internal/strictjson"
)

// The kinds of a Movement: what the acquirer did.
const (
	MovementAuthorization = "authorization"
	MovementCapture       = "capture"
	MovementRefund        = "refund"
	MovementVoid          = "void"
)

// Movement is one line of an acquirer's report of a day: one thing it
// did, under the idempotency key it was asked under (our downstream key,
// the reference the daily match pairs with a row), with its terms as the
// acquirer holds them. A real acquirer's report gives at least the key
// or our reference, the kind, the amount, the currency and the time
// (docs/acquirer.md); a settlement file of another format is read into
// the same lines.
type Movement struct {
	Kind string `json:"kind"`
	Key  string `json:"key"`
	// ID is the acquirer's own id of it; AuthorizationID the authorization
	// it acts on (an authorization's own id for an authorization).
	ID              string `json:"id"`
	AuthorizationID string `json:"authorization_id"`
	// AuthorizationKey is the key the authorization it acts on was asked
	// under (its own key for an authorization): the charge it moves money
	// on, as a real report gives the payment's reference beside a
	// modification's.
	AuthorizationKey string `json:"authorization_key"`
	// Status is the outcome it states (captured, authorized, declined;
	// succeeded or declined for an action).
	Status   string    `json:"status"`
	Amount   int64     `json:"amount"`
	Currency string    `json:"currency"`
	At       time.Time `json:"at"`
}

// ReportPage is one page of a day's report, in the report's order, and
// the cursor of the next page ("" after the last).
type ReportPage struct {
	Movements []Movement `json:"movements"`
	Next      string     `json:"next,omitempty"`
}

// Reporter reads an acquirer's report of what it did on one UTC day
// (day is that day's midnight, UTC), a page at a time: cursor "" starts
// it, and each page names the next. A cursor is the reporter's own; one it
// did not give is refused (ErrBadCursor).
type Reporter interface {
	Report(ctx context.Context, day time.Time, cursor string) (ReportPage, error)
}

// ErrBadCursor: a report was asked from a cursor its reporter never gave.
var ErrBadCursor = errors.New("acquirer report: not a cursor of this report")

// DayOf is the UTC day of t: its midnight.
func DayOf(t time.Time) time.Time {
	return t.UTC().Truncate(24 * time.Hour)
}

// ReadReportPage decodes a report page, strictly: an acquirer's answer is
// checked before anything reads it. Every movement must name its kind, its
// key and its authorization's, its status, an amount (0 for a decline that moved nothing), a
// currency and a time within day.
func ReadReportPage(day time.Time, body []byte) (ReportPage, error) {
	var p ReportPage
	if err := strictjson.UnmarshalResponse(body, &p); err != nil {
		return ReportPage{}, fmt.Errorf("acquirer report: %w", err)
	}
	end := day.Add(24 * time.Hour)
	for i, m := range p.Movements {
		switch {
		case m.Kind != MovementAuthorization && m.Kind != MovementCapture && m.Kind != MovementRefund && m.Kind != MovementVoid:
			return ReportPage{}, fmt.Errorf("acquirer report: movement %d: kind %q", i, m.Kind)
		case m.Key == "" || m.AuthorizationKey == "" || m.Amount < 0 || m.Currency == "" || m.Status == "":
			return ReportPage{}, fmt.Errorf("acquirer report: movement %d: without its keys, status, amount or currency", i)
		case m.At.Before(day) || !m.At.Before(end):
			return ReportPage{}, fmt.Errorf("acquirer report: movement %d at %s, not on %s", i, m.At.Format(time.RFC3339Nano), day.Format(time.DateOnly))
		}
	}
	return p, nil
}

// Movement is the authorization a, made under key, as a report line
// states it.
func (a Authorization) Movement(key string) Movement {
	return Movement{Kind: MovementAuthorization, Key: key, ID: a.ID, AuthorizationID: a.ID, AuthorizationKey: key,
		Status: a.Status, Amount: a.Amount, Currency: a.Currency, At: a.CreatedAt}
}

// Movement is the refund r, made under key, as a report line states it;
// AuthorizationKey is left to the caller, which an action's answer does
// not carry.
func (r Refund) Movement(key string) Movement { return movementOf(MovementRefund, key, r, r.CreatedAt) }

// Movement is the capture c, made under key, as a report line states it
// (as Refund.Movement).
func (c Capture) Movement(key string) Movement {
	return movementOf(MovementCapture, key, c, c.CreatedAt)
}

// Movement is the void v, made under key, as a report line states it (as
// Refund.Movement).
func (v Void) Movement(key string) Movement { return movementOf(MovementVoid, key, v, v.CreatedAt) }

// movementOf is action a of kind, made under key at at, as a report line.
func movementOf[T action](kind, key string, a T, at time.Time) Movement {
	t := a.terms()
	return Movement{Kind: kind, Key: key, ID: a.actionID(), AuthorizationID: t.authorizationID, Status: a.actionStatus(),
		Amount: t.amount, Currency: t.currency, At: at}
}

package refundtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/refund"
)

// Ledger is refund.Ledger in memory.
type Ledger struct {
	mu     sync.Mutex
	rows   map[string]refund.Refund
	voided map[string]bool // the voided markers, by refund id
	books  Lister          // nil: its rows are listed nowhere
}

// Lister lists a row of another operation in its books
// (chargetest.Ledger.List): the books every operation's rows share.
type Lister interface {
	List(u charge.Unpublished)
}

// NewLedger returns an empty ledger.
func NewLedger() *Ledger { return &Ledger{rows: map[string]refund.Refund{}, voided: map[string]bool{}} }

// NewLedgerListedIn returns an empty ledger whose rows written with a
// region are listed unpublished in books, as the table lists them beside
// the charges'.
func NewLedgerListedIn(books Lister) *Ledger {
	l := NewLedger()
	l.books = books
	return l
}

// Write implements refund.Ledger: the first row under an id wins; none
// is written where the voided marker is.
func (l *Ledger) Write(_ context.Context, r refund.Refund) (refund.Refund, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if old, ok := l.rows[r.ID]; ok {
		return old, nil
	}
	if l.voided[r.ID] {
		return refund.Refund{}, fmt.Errorf("put refund %s: %w", r.ID, refund.ErrVoided)
	}
	l.rows[r.ID] = r
	if l.books != nil && r.Region != "" {
		l.books.List(charge.Unpublished{ID: r.ID, Region: r.Region, Since: r.CreatedAt.Truncate(time.Millisecond)})
	}
	return r, nil
}

// Get implements refund.Ledger.
func (l *Ledger) Get(_ context.Context, id string) (refund.Refund, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.rows[id]
	if !ok && l.voided[id] {
		return refund.Refund{}, fmt.Errorf("refund %s: %w: %w", id, refund.ErrNoRefund, refund.ErrVoided)
	}
	if !ok {
		return refund.Refund{}, refund.ErrNoRefund
	}
	return r, nil
}

// Void implements refund.Ledger.
func (l *Ledger) Void(_ context.Context, id string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.rows[id]; ok {
		return fmt.Errorf("void refund %s: %w", id, refund.ErrRowExists)
	}
	l.voided[id] = true
	return nil
}

// Render is a refund.Renderer for the suites: the row as JSON, 201 or
// 402, or the bound's refusal as 422 with what remained.
func Render(a refund.Answer) idem.Response {
	switch {
	case a.Refund == nil:
		return AnswerJSON(a, http.StatusUnprocessableEntity)
	case a.Refund.Status != acquirer.RefundSucceeded:
		return AnswerJSON(a.Refund, http.StatusPaymentRequired)
	}
	return AnswerJSON(a.Refund, http.StatusCreated)
}

// AnswerJSON is v as JSON, answered with status: the suites' renderers of
// every action's answers.
func AnswerJSON(v any, status int) idem.Response {
	body, err := json.Marshal(v)
	if err != nil {
		panic(err) // strings, numbers, booleans and times
	}
	return idem.Response{StatusCode: status, Body: body}
}

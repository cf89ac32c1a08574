package refundtest

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/refund"
)

// Ledger is refund.Ledger in memory.
type Ledger struct {
	mu   sync.Mutex
	rows map[string]refund.Refund
}

// NewLedger returns an empty ledger.
func NewLedger() *Ledger { return &Ledger{rows: map[string]refund.Refund{}} }

// Write implements refund.Ledger: the first row under an id wins.
func (l *Ledger) Write(_ context.Context, r refund.Refund) (refund.Refund, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if old, ok := l.rows[r.ID]; ok {
		return old, nil
	}
	l.rows[r.ID] = r
	return r, nil
}

// Get implements refund.Ledger.
func (l *Ledger) Get(_ context.Context, id string) (refund.Refund, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.rows[id]
	if !ok {
		return refund.Refund{}, refund.ErrNoRefund
	}
	return r, nil
}

// Render is a refund.Renderer for the suites: the row as JSON, 201 or
// 402, or the bound's refusal as 422 with what remained.
func Render(a refund.Answer) idem.Response {
	var v any = a
	status := http.StatusUnprocessableEntity
	if a.Refund != nil {
		v, status = a.Refund, http.StatusCreated
		if a.Refund.Status != acquirer.RefundSucceeded {
			status = http.StatusPaymentRequired
		}
	}
	body, err := json.Marshal(v)
	if err != nil {
		panic(err) // strings, numbers, booleans and a time
	}
	return idem.Response{StatusCode: status, Body: body}
}

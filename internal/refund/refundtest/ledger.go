package refundtest

import (
	"encoding/json"
	"net/http"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/op/optest"
	"github.com/idempotent-payments/idempay/internal/refund"
)

// Ledger is refund.Ledger in memory.
type Ledger = optest.Rows[refund.Refund]

// Lister lists a row of another operation in its books.
type Lister = optest.Lister

// NewLedger returns an empty ledger.
func NewLedger() *Ledger { return NewLedgerListedIn(nil) }

// NewLedgerListedIn returns an empty ledger whose rows written with a
// region are listed unpublished in books, as the table lists them beside
// the charges'.
func NewLedgerListedIn(books Lister) *Ledger {
	return optest.NewRows(func(r refund.Refund) op.Origin { return r.Origin },
		optest.RowErrors{NoRow: refund.ErrNoRefund, Voided: refund.ErrVoided, RowExists: refund.ErrRowExists}, books)
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

package refund

import (
	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/op"
)

// Operation is the service as the operator's channel and the reconciler
// run it, through the registry of operations (op.Registry).
func (s *Service) Operation() op.Operation {
	return op.Adapt(s, op.Kind[Refund, acquirer.Refund]{Name: Operation, Shown: "what the acquirer says now, as the entry reserved it; nothing was written", AnswerTerms: TermsOf, RowTerms: rowTerms, RowOf: s.completedRow})
}

// TermsOf are the acquirer's refund r as an operator is shown it.
func TermsOf(r acquirer.Refund) op.Terms {
	return op.Terms{AuthorizationID: r.AuthorizationID, ActionID: r.ID, Status: r.Status, Amount: r.Amount, Currency: r.Currency}
}

// rowTerms are the terms refund row r states, nil for no row: the row
// names its charge, not the authorization.
func rowTerms(r Refund) *op.Terms {
	if r.ID == "" {
		return nil
	}
	return &op.Terms{ActionID: r.AcquirerRefundID, Status: r.Status, Amount: r.Amount, Currency: r.Currency}
}

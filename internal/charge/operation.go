package charge

import (
	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/op"
)

// Operation is the service as the operator's channel and the reconciler
// run it, through the registry of operations (op.Registry).
func (s *Service) Operation() op.Operation {
	return op.Adapt(s, op.Kind[Charge, acquirer.Authorization]{Name: Operation, Shown: "what the acquirer says now; nothing was written", AnswerTerms: TermsOf, RowTerms: rowTerms, RowOf: s.completedRow})
}

// TermsOf are the acquirer's authorization auth as an operator is shown it.
func TermsOf(auth acquirer.Authorization) op.Terms {
	return op.Terms{AuthorizationID: auth.ID, Status: auth.Status, Amount: auth.Amount, Currency: auth.Currency}
}

// rowTerms are the terms charge row c states, nil for no row.
func rowTerms(c Charge) *op.Terms {
	if c.ID == "" {
		return nil
	}
	return &op.Terms{AuthorizationID: c.AuthorizationID, Status: c.Status, Amount: c.Amount, Currency: c.Currency}
}

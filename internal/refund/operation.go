package refund

import (
	"context"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/op"
)

// Operation is the service as the operator's channel and the reconciler
// run it, through the registry of operations (op.Registry).
func (s *Service) Operation() op.Operation { return operation{s} }

type operation struct{ s *Service }

func (o operation) Name() string { return Operation }

func (o operation) Peek(ctx context.Context, pk string) (op.Terms, error) {
	r, err := o.s.Peek(ctx, pk)
	return TermsOf(r), err
}

func (o operation) Reconcile(ctx context.Context, pk string) (op.Reconciled, error) {
	return o.s.Reconcile(ctx, pk)
}

func (o operation) Settle(ctx context.Context, d op.Decision) (op.Settled[*op.Terms], error) {
	return settled(o.s.Settle(ctx, d))
}

func (o operation) ReadBack(ctx context.Context, d op.Decision) (op.Settled[*op.Terms], error) {
	return settled(o.s.ReadBack(ctx, d))
}

func (o operation) RowTerms(ctx context.Context, rec *idem.Record) *op.Terms {
	if res := o.s.Get(ctx, rec.Account, ID(rec.DownstreamKey)); res.Outcome == op.Found {
		return rowTerms(res.Refund)
	}
	return nil
}

// settled is st, with its row's terms when it has a row.
func settled(st op.Settled[Refund], err error) (op.Settled[*op.Terms], error) {
	out := op.Settled[*op.Terms]{Settlement: st.Settlement}
	if st.Row.ID != "" {
		out.Row = rowTerms(st.Row)
	}
	return out, err
}

// rowTerms are a refund row's terms: the row names its charge, not the
// authorization.
func rowTerms(r Refund) *op.Terms {
	return &op.Terms{ActionID: r.AcquirerRefundID, Status: r.Status, Amount: r.Amount, Currency: r.Currency}
}

// TermsOf are the acquirer's refund r as an operator is shown it.
func TermsOf(r acquirer.Refund) op.Terms {
	return op.Terms{AuthorizationID: r.AuthorizationID, ActionID: r.ID, Status: r.Status, Amount: r.Amount, Currency: r.Currency}
}

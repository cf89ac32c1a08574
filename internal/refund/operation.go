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
	return op.Terms{AuthorizationID: r.AuthorizationID, ActionID: r.ID, Status: r.Status, Amount: r.Amount, Currency: r.Currency}, err
}

func (o operation) Reconcile(ctx context.Context, pk string) (op.Reconciled, error) {
	return o.s.Reconcile(ctx, pk)
}

func (o operation) Settle(ctx context.Context, d op.Decision) (op.Settled, error) {
	return settled(o.s.Settle(ctx, decision(d)))
}

func (o operation) ReadBack(ctx context.Context, d op.Decision) (op.Settled, error) {
	return settled(o.s.ReadBack(ctx, decision(d)))
}

func (o operation) RowTerms(ctx context.Context, rec *idem.Record) *op.Terms {
	if res := o.s.Get(ctx, rec.Account, ID(rec.DownstreamKey)); res.Outcome == op.Found {
		return rowTerms(res.Refund)
	}
	return nil
}

// decision is d as the service takes it: the terms a refund's.
func decision(d op.Decision) Decision {
	return Decision{PK: d.PK, Instance: d.Instance, Action: d.Action, By: d.By, ID: d.ID,
		Terms: acquirer.Refund{ID: d.Terms.ActionID, AuthorizationID: d.Terms.AuthorizationID, Status: d.Terms.Status, Amount: d.Terms.Amount, Currency: d.Terms.Currency}}
}

// settled is st, with its row's terms when it has a row.
func settled(st Settled, err error) (op.Settled, error) {
	out := op.Settled{Settlement: st.Settlement}
	if st.Refund.ID != "" {
		out.Row = rowTerms(st.Refund)
	}
	return out, err
}

// rowTerms are a refund row's terms: the row names its charge, not the
// authorization.
func rowTerms(r Refund) *op.Terms {
	return &op.Terms{ActionID: r.AcquirerRefundID, Status: r.Status, Amount: r.Amount, Currency: r.Currency}
}

package main

import (
	"context"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/operator"
	"github.com/idempotent-payments/idempay/internal/refund"
)

// refundOps are the refund service's paths, for a refund's record.
type refundOps struct{ h *Handler }

func (o refundOps) reconcile(ctx context.Context, pk string) (charge.Reconciled, error) {
	return o.h.Refunds.Reconcile(ctx, pk)
}

func (o refundOps) readBack(ctx context.Context, req operator.Request) operator.Answer {
	return refundSettled(o.h.Refunds.ReadBack(ctx, refund.Decision{PK: req.Record, Instance: req.Intent, Action: req.Of, ID: req.Decision}))
}

func (o refundOps) settle(ctx context.Context, req operator.Request, by string) operator.Answer {
	d := refund.Decision{PK: req.Record, Instance: req.Intent, Action: req.Action, By: by, ID: req.Decision}
	if t := req.Terms; t != nil {
		d.Terms = acquirer.Refund{ID: t.RefundID, AuthorizationID: t.AuthorizationID, Status: t.Status, Amount: t.Amount, Currency: t.Currency}
	}
	return refundSettled(o.h.Refunds.Settle(ctx, d))
}

// look asks the acquirer, writing nothing, what refund it has under the
// intent's downstream key, checked against what the entry reserved.
func (o refundOps) look(ctx context.Context, req operator.Request) operator.Answer {
	r, err := o.h.Refunds.Peek(ctx, req.Record)
	return looked(refundTerms(r), err, refund.ErrNoAcquirerRefund, "the acquirer has no refund under the record's downstream key",
		"what the acquirer says now, as the entry reserved it; nothing was written")
}

// terms are the row's terms of a completed refund record (nil when it
// does not read).
func (o refundOps) terms(ctx context.Context, rec *idem.Record) *operator.Terms {
	if res := o.h.Refunds.Get(ctx, rec.Account, refund.ID(rec.DownstreamKey)); res.Outcome == refund.Found {
		return rowTerms(res.Refund)
	}
	return nil
}

// refundSettled is settled for a refund's settlement.
func refundSettled(st refund.Settled, err error) operator.Answer {
	var terms *operator.Terms
	if st.Refund.ID != "" {
		terms = rowTerms(st.Refund)
	}
	return settled(st.Settlement, terms, err)
}

func refundTerms(r acquirer.Refund) *operator.Terms {
	return &operator.Terms{RefundID: r.ID, AuthorizationID: r.AuthorizationID, Status: r.Status, Amount: r.Amount, Currency: r.Currency}
}

func rowTerms(r refund.Refund) *operator.Terms {
	return &operator.Terms{RefundID: r.AcquirerRefundID, Status: r.Status, Amount: r.Amount, Currency: r.Currency}
}

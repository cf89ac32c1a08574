package main

import (
	"context"
	"errors"
	"time"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/operator"
	"github.com/idempotent-payments/idempay/internal/refund"
)

// serveRefund is serve for a refund's record: the refund service's own
// paths, with the same answers.
func (h *Handler) serveRefund(ctx context.Context, req operator.Request, by string) operator.Answer {
	if h.Refunds == nil { // a wiring mistake: said, never guessed around
		return operator.Answer{Outcome: operator.OutcomeFailed, Detail: "this channel has no refund service"}
	}
	d := refund.Decision{PK: req.Record, Instance: req.Intent, Action: req.Action, By: by, ID: req.Decision}
	switch req.Action {
	case operator.Look:
		return h.lookRefund(ctx, req)
	case operator.Reconcile, operator.Release:
		return h.reconcile(ctx, req, h.Refunds.Reconcile, h.refundTerms)
	case operator.ReadBack:
		d.Action, d.By = req.Of, ""
		return refundSettled(h.Refunds.ReadBack(ctx, d))
	}
	if t := req.Terms; t != nil {
		d.Terms = acquirer.Refund{ID: t.RefundID, AuthorizationID: t.AuthorizationID, Status: t.Status, Amount: t.Amount, Currency: t.Currency}
	}
	return refundSettled(h.Refunds.Settle(ctx, d))
}

// lookRefund asks the acquirer, writing nothing, what refund it has under
// the intent's downstream key, checked against what the entry reserved.
func (h *Handler) lookRefund(ctx context.Context, req operator.Request) operator.Answer {
	if a, ok := h.gone(ctx, req); !ok {
		return a
	}
	r, err := h.Refunds.Peek(ctx, req.Record)
	switch {
	case err == nil:
		return operator.Answer{Outcome: operator.OutcomeLooked, Terms: refundTerms(r), Detail: "what the acquirer says now, as the entry reserved it; nothing was written"}
	case errors.Is(err, refund.ErrNoAcquirerRefund):
		return operator.Answer{Outcome: operator.OutcomeNoAuthorization, Detail: "the acquirer has no refund under the record's downstream key"}
	case errors.Is(err, acquirer.ErrMismatch):
		return operator.Answer{Outcome: operator.OutcomeMismatch, Terms: refundTerms(r), Detail: err.Error()}
	case errors.Is(err, charge.ErrCompleted), errors.Is(err, idem.ErrOtherDownstream):
		return operator.Answer{Outcome: operator.OutcomeRefused, Detail: err.Error()}
	}
	return operator.Answer{Outcome: operator.OutcomeFailed, Detail: err.Error()}
}

// refundTerms are the row's terms of a completed refund record (nil when
// it does not read).
func (h *Handler) refundTerms(ctx context.Context, rec *idem.Record) *operator.Terms {
	if res := h.Refunds.Get(ctx, rec.Account, refund.ID(rec.DownstreamKey)); res.Outcome == refund.Found {
		return rowTerms(res.Refund)
	}
	return nil
}

// refundSettled is settled for a refund's settlement.
func refundSettled(st refund.Settled, err error) operator.Answer {
	a := operator.Answer{Outcome: st.State.String(), TookEffect: st.TookEffect()}
	if st.State == 0 {
		a.Outcome = operator.OutcomeRefused
	}
	if err != nil {
		a.Detail = err.Error()
	}
	if s := st.Decision; s != nil {
		a.Settlement = &operator.Settlement{Action: s.Action, By: s.By, Decision: s.Decision, At: s.At.UTC()}
	}
	if st.Refund.ID != "" {
		a.Terms = rowTerms(st.Refund)
	}
	if st.State == charge.InProgress {
		a.RetryAfter = max(1, int(time.Until(st.Until).Seconds()+1))
	}
	return a
}

func refundTerms(r acquirer.Refund) *operator.Terms {
	return &operator.Terms{RefundID: r.ID, AuthorizationID: r.AuthorizationID, Status: r.Status, Amount: r.Amount, Currency: r.Currency}
}

func rowTerms(r refund.Refund) *operator.Terms {
	return &operator.Terms{RefundID: r.AcquirerRefundID, Status: r.Status, Amount: r.Amount, Currency: r.Currency}
}

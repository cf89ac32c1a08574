package main

import (
	"context"
	"encoding/base64"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/obs"
	"github.com/idempotent-payments/idempay/internal/operator"
	"github.com/idempotent-payments/idempay/internal/refund"
)

// Handler serves the operator's channel: one request per invocation of
// the function URL. It runs the charge service's own operator paths
// (Peek, Reconcile, Settle, ReadBack), or the refund service's for a
// refund's record, with the deployment's acquirer and clock, and records
// as who decided the caller Lambda authenticated (the request context's
// IAM user ARN), never anything the request says of itself.
type Handler struct {
	Service *charge.Service
	Refunds *refund.Service
	Logger  *slog.Logger
}

// Handle answers one request: 403 when the invocation names no IAM caller
// (a URL that is not AWS_IAM's), 400 for a request that is not a POST of
// one valid operator.Request, and otherwise 200 with the operator.Answer,
// whatever the outcome. Every acting request is logged at WARN with who
// asked and the decision's id.
func (h *Handler) Handle(ctx context.Context, ev events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
	by := callerOf(ev)
	if by == "" {
		return respond(http.StatusForbidden, operator.Answer{Outcome: operator.OutcomeInvalid,
			Detail: "no authenticated caller: the channel serves only requests IAM authenticated (a function URL with AWS_IAM auth)"})
	}
	if ev.RequestContext.HTTP.Method != http.MethodPost {
		return respond(http.StatusBadRequest, operator.Answer{Outcome: operator.OutcomeInvalid, By: by, Detail: "POST a request"})
	}
	body := []byte(ev.Body)
	if ev.IsBase64Encoded {
		var err error
		if body, err = base64.StdEncoding.DecodeString(ev.Body); err != nil {
			return respond(http.StatusBadRequest, operator.Answer{Outcome: operator.OutcomeInvalid, By: by, Detail: "the body is not base64"})
		}
	}
	req, err := operator.Decode(body)
	if err != nil {
		return respond(http.StatusBadRequest, operator.Answer{Outcome: operator.OutcomeInvalid, By: by, Detail: err.Error()})
	}
	ctx = obs.WithAttrs(ctx, slog.String("record", idem.Ref(req.Record)), slog.String("action", req.Action), slog.String("by", by))
	if req.Decision != "" {
		ctx = obs.WithAttrs(ctx, slog.String("decision", req.Decision))
	}
	a := h.serve(ctx, req, by)
	a.By = by
	level := slog.LevelWarn // a decision about money: every one is in the logs
	if !operator.Acting(req.Action) {
		level = slog.LevelInfo
	}
	h.Logger.Log(ctx, level, "operator", "outcome", a.Outcome, "took_effect", a.TookEffect, "detail", a.Detail)
	return respond(http.StatusOK, a)
}

// callerOf is the caller's ARN as Lambda authenticated it, or "".
func callerOf(ev events.LambdaFunctionURLRequest) string {
	if a := ev.RequestContext.Authorizer; a != nil && a.IAM != nil {
		return a.IAM.UserARN
	}
	return ""
}

// operation is what the channel runs of one operation's service: a
// charge's (chargeOps) or a refund's (refundOps).
type operation interface {
	// look is the acquirer's answer for the record, writing nothing.
	look(ctx context.Context, req operator.Request) operator.Answer
	// reconcile is the reconciler's path; terms what a completed record's
	// row says.
	reconcile(ctx context.Context, pk string) (charge.Reconciled, error)
	terms(ctx context.Context, rec *idem.Record) *operator.Terms
	// settle carries out a settlement decided by by; readBack says what
	// the decision req names did.
	settle(ctx context.Context, req operator.Request, by string) operator.Answer
	readBack(ctx context.Context, req operator.Request) operator.Answer
}

func (h *Handler) serve(ctx context.Context, req operator.Request, by string) operator.Answer {
	var op operation = chargeOps{h}
	if scope, err := idem.ParsePK(req.Record); err == nil && scope.Operation == refund.Operation {
		if h.Refunds == nil { // a wiring mistake: said, never guessed around
			return operator.Answer{Outcome: operator.OutcomeFailed, Detail: "this channel has no refund service"}
		}
		op = refundOps{h}
	}
	switch req.Action {
	case operator.Look:
		if a, ok := h.gone(ctx, req); !ok {
			return a
		}
		return op.look(ctx, req)
	case operator.Reconcile, operator.Release:
		return h.reconcile(ctx, req, op)
	case operator.ReadBack:
		return op.readBack(ctx, req)
	}
	return op.settle(ctx, req, by)
}

// chargeOps are the charge service's paths.
type chargeOps struct{ h *Handler }

func (o chargeOps) reconcile(ctx context.Context, pk string) (charge.Reconciled, error) {
	return o.h.Service.Reconcile(ctx, pk)
}

func (o chargeOps) readBack(ctx context.Context, req operator.Request) operator.Answer {
	return chargeSettled(o.h.Service.ReadBack(ctx, charge.Decision{PK: req.Record, Instance: req.Intent, Action: req.Of, ID: req.Decision}))
}

func (o chargeOps) settle(ctx context.Context, req operator.Request, by string) operator.Answer {
	d := charge.Decision{PK: req.Record, Instance: req.Intent, Action: req.Action, By: by, ID: req.Decision}
	if t := req.Terms; t != nil {
		d.Terms = acquirer.Authorization{ID: t.AuthorizationID, Status: t.Status, Amount: t.Amount, Currency: t.Currency}
	}
	return chargeSettled(o.h.Service.Settle(ctx, d))
}

// look asks the acquirer, writing nothing, what it has under the intent's
// downstream key.
func (o chargeOps) look(ctx context.Context, req operator.Request) operator.Answer {
	auth, err := o.h.Service.Peek(ctx, req.Record)
	return looked(termsOf(auth), err, charge.ErrNoAuthorization, "the acquirer has no authorization under the record's downstream key",
		"what the acquirer says now; nothing was written")
}

// looked is a look's answer: terms, or none (the acquirer has nothing:
// errNone), a mismatch (with the terms), a refusal, or a failure.
func looked(terms *operator.Terms, err, errNone error, noneDetail, lookedDetail string) operator.Answer {
	switch {
	case err == nil:
		return operator.Answer{Outcome: operator.OutcomeLooked, Terms: terms, Detail: lookedDetail}
	case errors.Is(err, errNone):
		return operator.Answer{Outcome: operator.OutcomeNoAuthorization, Detail: noneDetail}
	case errors.Is(err, acquirer.ErrMismatch):
		return operator.Answer{Outcome: operator.OutcomeMismatch, Terms: terms, Detail: err.Error()}
	case errors.Is(err, charge.ErrCompleted), errors.Is(err, idem.ErrOtherDownstream):
		return operator.Answer{Outcome: operator.OutcomeRefused, Detail: err.Error()}
	}
	return operator.Answer{Outcome: operator.OutcomeFailed, Detail: err.Error()}
}

// gone answers for a request whose intent is no longer the record's (ok
// false), or says it is (ok true).
func (h *Handler) gone(ctx context.Context, req operator.Request) (operator.Answer, bool) {
	rec, err := h.Service.Record(ctx, req.Record)
	switch {
	case errors.Is(err, idem.ErrNotFound) || err == nil && rec.DownstreamKey != req.Intent:
		return operator.Answer{Outcome: operator.OutcomeGone, Detail: "the record is gone, or another intent of its key holds it: look again"}, false
	case err != nil:
		return operator.Answer{Outcome: operator.OutcomeFailed, Detail: err.Error()}, false
	}
	return operator.Answer{}, true
}

// reconcile runs the reconciler's own path on the record (Release: the
// same path, and an answer that says when it completed instead): the
// charge service's or the refund service's, with terms reading what a
// completed record's row says.
func (h *Handler) reconcile(ctx context.Context, req operator.Request, op operation) operator.Answer {
	if a, ok := h.gone(ctx, req); !ok {
		return a
	}
	did, err := op.reconcile(ctx, req.Record)
	switch {
	case did == charge.ReconciledMismatch && err != nil:
		return operator.Answer{Outcome: operator.OutcomeFailed, Detail: "the acquirer's answer disagrees with the request, and holding the record failed; it stays in flight: " + err.Error()}
	case errors.Is(err, idem.ErrOtherDownstream):
		return operator.Answer{Outcome: operator.OutcomeRefused, Detail: "nothing written: " + err.Error()}
	case err != nil:
		return operator.Answer{Outcome: operator.OutcomeFailed, Detail: "nothing is known yet; the record stays in flight: " + err.Error()}
	}
	switch did {
	case charge.ReconciledReleased:
		return operator.Answer{Outcome: operator.OutcomeReleased, TookEffect: true,
			Detail: "the acquirer has nothing under the record: the key is released (a refund's reservation first), and the client's next retry starts anew"}
	case charge.ReconciledCompleted:
		a := operator.Answer{Outcome: operator.OutcomeCompleted, TookEffect: req.Action == operator.Reconcile,
			Detail: "the acquirer has it: the record completed with the acquirer's outcome"}
		if req.Action == operator.Release {
			a.Detail = "not released: the acquirer has it, so the record completed with it"
		}
		if rec, err := h.Service.Record(ctx, req.Record); err == nil {
			a.Terms = op.terms(ctx, rec)
		}
		return a
	case charge.ReconciledMismatch:
		return operator.Answer{Outcome: operator.OutcomeMismatch, Detail: "the acquirer's answer disagrees with the request: the record is now held for an operator"}
	case charge.ReconciledHeld:
		return operator.Answer{Outcome: operator.OutcomeHeld, Detail: "the record is held for an operator: settle it with void-confirmed or accept"}
	}
	return operator.Answer{Outcome: operator.OutcomeNothingToDo,
		Detail: "nothing changed: the record is completed, or its lease is live or ended less than T + skew ago; try again later"}
}

// settled is the answer of a settlement, from the state Settle read back,
// with terms the row's of a completed record (nil without one).
func settled(st charge.Settlement, terms *operator.Terms, err error) operator.Answer {
	a := operator.Answer{Outcome: st.State.String(), TookEffect: st.TookEffect(), Terms: terms}
	if st.State == 0 {
		a.Outcome = operator.OutcomeRefused
	}
	if err != nil {
		a.Detail = err.Error()
	}
	if s := st.Decision; s != nil {
		a.Settlement = &operator.Settlement{Action: s.Action, By: s.By, Decision: s.Decision, At: s.At.UTC()}
	}
	if st.State == charge.InProgress {
		a.RetryAfter = max(1, int(time.Until(st.Until).Seconds()+1))
	}
	return a
}

// chargeSettled is settled for a charge's settlement.
func chargeSettled(st charge.Settled, err error) operator.Answer {
	var terms *operator.Terms
	if st.Charge.ID != "" {
		terms = chargeTerms(st.Charge)
	}
	return settled(st.Settlement, terms, err)
}

// terms are the ledger row's terms of a completed charge record (nil
// when it does not read).
func (o chargeOps) terms(ctx context.Context, rec *idem.Record) *operator.Terms {
	if res := o.h.Service.Get(ctx, rec.Account, charge.ID(rec.DownstreamKey)); res.Outcome == charge.Found {
		return chargeTerms(res.Charge)
	}
	return nil
}

func termsOf(auth acquirer.Authorization) *operator.Terms {
	return &operator.Terms{AuthorizationID: auth.ID, Status: auth.Status, Amount: auth.Amount, Currency: auth.Currency}
}

func chargeTerms(c charge.Charge) *operator.Terms {
	return &operator.Terms{AuthorizationID: c.AuthorizationID, Status: c.Status, Amount: c.Amount, Currency: c.Currency}
}

// respond is the function URL's answer: a, as JSON, with status.
func respond(status int, a operator.Answer) (events.LambdaFunctionURLResponse, error) {
	body, err := a.Encode()
	if err != nil {
		return events.LambdaFunctionURLResponse{}, err
	}
	return events.LambdaFunctionURLResponse{StatusCode: status, Headers: map[string]string{"Content-Type": "application/json"}, Body: string(body)}, nil
}

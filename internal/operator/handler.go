package operator

import (
	"context"
	"encoding/base64"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/obs"
	"github.com/idempotent-payments/idempay/internal/op"
)

// Handler is the channel's adapter to its function URL: one request per
// invocation. It runs the operator's paths of the record's operation
// (op.Operation: Peek, Reconcile, Settle, ReadBack), found by the record's
// key in the registry, with the deployment's acquirer and clock, and
// records as who decided the caller Lambda authenticated (the request
// context's IAM user ARN), never anything the request says of itself.
type Handler struct {
	Operations *op.Registry
	// Lookup reads a live record (idem.Guard.Lookup): whether the intent a
	// request names is still the record's.
	Lookup func(ctx context.Context, pk string) (*idem.Record, error)
	Logger *slog.Logger
}

// Handle answers one request: 403 when the invocation names no IAM caller
// (a URL that is not AWS_IAM's), 400 for a request that is not a POST of
// one valid Request, and otherwise 200 with the Answer, whatever the
// outcome. Every acting request is logged at WARN with who asked and the
// decision's id.
func (h *Handler) Handle(ctx context.Context, ev events.LambdaFunctionURLRequest) (events.LambdaFunctionURLResponse, error) {
	by := callerOf(ev)
	if by == "" {
		return respond(http.StatusForbidden, Answer{Outcome: OutcomeInvalid,
			Detail: "no authenticated caller: the channel serves only requests IAM authenticated (a function URL with AWS_IAM auth)"})
	}
	if ev.RequestContext.HTTP.Method != http.MethodPost {
		return respond(http.StatusBadRequest, Answer{Outcome: OutcomeInvalid, By: by, Detail: "POST a request"})
	}
	body := []byte(ev.Body)
	if ev.IsBase64Encoded {
		var err error
		if body, err = base64.StdEncoding.DecodeString(ev.Body); err != nil {
			return respond(http.StatusBadRequest, Answer{Outcome: OutcomeInvalid, By: by, Detail: "the body is not base64"})
		}
	}
	req, err := Decode(body)
	if err != nil {
		return respond(http.StatusBadRequest, Answer{Outcome: OutcomeInvalid, By: by, Detail: err.Error()})
	}
	ctx = obs.WithAttrs(ctx, slog.String("record", idem.Ref(req.Record)), slog.String("action", req.Action), slog.String("by", by))
	if req.Decision != "" {
		ctx = obs.WithAttrs(ctx, slog.String("decision", req.Decision))
	}
	a := h.serve(ctx, req, by)
	a.By = by
	level := slog.LevelWarn // a decision about money: every one is in the logs
	if !Acting(req.Action) {
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

func (h *Handler) serve(ctx context.Context, req Request, by string) Answer {
	o, err := h.Operations.Of(req.Record)
	if err != nil {
		return Answer{Outcome: OutcomeRefused, Detail: err.Error()}
	}
	d := op.Decision{PK: req.Record, Instance: req.Intent, Action: req.Action, By: by, ID: req.Decision}
	switch req.Action {
	case Look:
		if a, ok := h.gone(ctx, req); !ok {
			return a
		}
		t, err := o.Peek(ctx, req.Record)
		return looked(t, err, o.Shown())
	case Reconcile, Release:
		return h.reconcile(ctx, req, o)
	case ReadBack:
		d.Action = req.Of
		return settled(o.ReadBack(ctx, d))
	}
	if t := req.Terms; t != nil {
		d.Terms = op.Terms{AuthorizationID: t.AuthorizationID, ActionID: t.RefundID, Status: t.Status, Amount: t.Amount, Currency: t.Currency}
	}
	return settled(o.Settle(ctx, d))
}

// looked is a look's answer: terms, or none (the acquirer has nothing), a
// mismatch (with the terms), a refusal, or a failure.
func looked(t op.Terms, err error, shown string) Answer {
	switch {
	case err == nil:
		return Answer{Outcome: OutcomeLooked, Terms: termsOf(&t), Detail: shown}
	case errors.Is(err, op.ErrNothingAtAcquirer):
		return Answer{Outcome: OutcomeNoAuthorization, Detail: err.Error()}
	case errors.Is(err, acquirer.ErrMismatch):
		return Answer{Outcome: OutcomeMismatch, Terms: termsOf(&t), Detail: err.Error()}
	case errors.Is(err, op.ErrCompleted), errors.Is(err, idem.ErrOtherDownstream):
		return Answer{Outcome: OutcomeRefused, Detail: err.Error()}
	}
	return Answer{Outcome: OutcomeFailed, Detail: err.Error()}
}

// gone answers for a request whose intent is no longer the record's (ok
// false), or says it is (ok true).
func (h *Handler) gone(ctx context.Context, req Request) (Answer, bool) {
	rec, err := h.Lookup(ctx, req.Record)
	switch {
	case errors.Is(err, idem.ErrNotFound) || err == nil && rec.DownstreamKey != req.Intent:
		return Answer{Outcome: OutcomeGone, Detail: "the record is gone, or another intent of its key holds it: look again"}, false
	case err != nil:
		return Answer{Outcome: OutcomeFailed, Detail: err.Error()}, false
	}
	return Answer{}, true
}

// reconcile runs the reconciler's own path of the record's operation
// (Release: the same path, and an answer that says when it completed
// instead), with the terms a completed record's row states.
func (h *Handler) reconcile(ctx context.Context, req Request, o op.Operation) Answer {
	if a, ok := h.gone(ctx, req); !ok {
		return a
	}
	did, err := o.Reconcile(ctx, req.Record)
	switch {
	case did == op.ReconciledMismatch && err != nil:
		return Answer{Outcome: OutcomeFailed, Detail: "the acquirer's answer disagrees with the request, and holding the record failed; it stays in flight: " + err.Error()}
	case errors.Is(err, idem.ErrOtherDownstream):
		return Answer{Outcome: OutcomeRefused, Detail: "nothing written: " + err.Error()}
	case err != nil:
		return Answer{Outcome: OutcomeFailed, Detail: "nothing is known yet; the record stays in flight: " + err.Error()}
	}
	switch did {
	case op.ReconciledReleased:
		return Answer{Outcome: OutcomeReleased, TookEffect: true,
			Detail: "the acquirer has nothing under the record: the key is released (a refund's reservation first), and the client's next retry starts anew"}
	case op.ReconciledCompleted:
		a := Answer{Outcome: OutcomeCompleted, TookEffect: req.Action == Reconcile,
			Detail: "the acquirer has it: the record completed with the acquirer's outcome"}
		if req.Action == Release {
			a.Detail = "not released: the acquirer has it, so the record completed with it"
		}
		if rec, err := h.Lookup(ctx, req.Record); err == nil {
			a.Terms = termsOf(o.RowTerms(ctx, rec))
		}
		return a
	case op.ReconciledMismatch:
		return Answer{Outcome: OutcomeMismatch, Detail: "the acquirer's answer disagrees with the request: the record is now held for an operator"}
	case op.ReconciledHeld:
		return Answer{Outcome: OutcomeHeld, Detail: "the record is held for an operator: settle it with void-confirmed or accept"}
	}
	return Answer{Outcome: OutcomeNothingToDo,
		Detail: "nothing changed: the record is completed, or its lease is live or ended less than T + skew ago; try again later"}
}

// settled is the answer of a settlement, from the state Settle or
// ReadBack read back, with the terms of a completed record's row.
func settled(st op.Settled[*op.Terms], err error) Answer {
	a := Answer{Outcome: st.State.String(), TookEffect: st.TookEffect(), Terms: termsOf(st.Row)}
	if st.State == 0 {
		a.Outcome = OutcomeRefused
	}
	if err != nil {
		a.Detail = err.Error()
	}
	if s := st.Decision; s != nil {
		a.Settlement = &Settlement{Action: s.Action, By: s.By, Decision: s.Decision, At: s.At.UTC()}
	}
	if st.State == op.InProgress {
		a.RetryAfter = max(1, int(time.Until(st.Until).Seconds()+1))
	}
	return a
}

// termsOf is t as the channel states terms (nil for none).
func termsOf(t *op.Terms) *Terms {
	if t == nil {
		return nil
	}
	return &Terms{AuthorizationID: t.AuthorizationID, RefundID: t.ActionID, Status: t.Status, Amount: t.Amount, Currency: t.Currency}
}

// respond is the function URL's answer: a, as JSON, with status.
func respond(status int, a Answer) (events.LambdaFunctionURLResponse, error) {
	body, err := a.Encode()
	if err != nil {
		return events.LambdaFunctionURLResponse{}, err
	}
	return events.LambdaFunctionURLResponse{StatusCode: status, Headers: map[string]string{"Content-Type": "application/json"}, Body: string(body)}, nil
}

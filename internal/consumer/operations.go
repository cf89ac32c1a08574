package consumer

import (
	"context"
	"errors"
	"time"

	"github.com/idempotent-payments/idempay/internal/capture"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/command"
	"github.com/idempotent-payments/idempay/internal/event"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/obs"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/operations"
	"github.com/idempotent-payments/idempay/internal/outbox"
	"github.com/idempotent-payments/idempay/internal/refund"
)

// queued is how the queue adapter carries one operation's commands: the
// operation its command type names, its door, the row a replay's event comes
// from, and its refusal's event (its own metrics are its registration's,
// operations.Registration.Count). Every operation that declares the queue (operations.Queue) has
// one (TestEveryQueuedOperationIsCarried); the handler finds it here by
// the command's type or the verdict's operation, and never branches on
// either.
type queued struct {
	operation string
	run       func(ctx context.Context, h *Handler, in Inbox, cmd command.Command, keys []string) verdict
	replayed  func(ctx context.Context, h *Handler, account, key string) (outbox.Row, op.Outcome)
	rejection func(messageID, producer, account, idempotencyKey, code string, at time.Time) event.Event
}

// queuedOps are the queued operations, by the type of their commands.
var queuedOps = map[command.Type]queued{
	command.TypeCharge: {
		operation: charge.Operation,
		run: func(ctx context.Context, h *Handler, in Inbox, cmd command.Command, keys []string) verdict {
			res := h.Service.Charge(ctx, charge.Input{Account: cmd.Account, Keys: keys, Body: cmd.Request, Source: event.SourceQueue(in.Producer)})
			v := chargeVerdictOf(res)
			v.key = res.Key
			return v
		},
		replayed: func(ctx context.Context, h *Handler, account, key string) (outbox.Row, op.Outcome) {
			res := h.Service.ByKey(ctx, account, key)
			return operations.ChargeRow{Charge: res.Charge}, res.Outcome
		},
		rejection: event.OfRejection,
	},
	command.TypeRefund: queuedAction(refund.Operation, refund.Codes, event.Refunds, func(h *Handler) (actionService[refund.Refund], bool) {
		if h.Refunds == nil {
			return actionService[refund.Refund]{}, false
		}
		return actionService[refund.Refund]{door: h.Refunds.Refund, byKey: h.Refunds.ByKey}, true
	}, func(r refund.Refund) outbox.Row { return operations.RefundRow{Refund: r} }, func(op.Code) bool { return true }),
	command.TypeCapture: queuedAction(capture.OperationCapture, capture.CaptureCodes, event.Captures, func(h *Handler) (actionService[capture.Row], bool) {
		if h.Captures == nil {
			return actionService[capture.Row]{}, false
		}
		return actionService[capture.Row]{door: h.Captures.Capture, byKey: h.Captures.CaptureByKey}, true
	}, actionRow, func(c op.Code) bool { return c == op.CodeCaptureExceedsAuthorization }),
	command.TypeVoid: queuedAction(capture.OperationVoid, capture.VoidCodes, event.Voids, func(h *Handler) (actionService[capture.Row], bool) {
		if h.Captures == nil {
			return actionService[capture.Row]{}, false
		}
		return actionService[capture.Row]{door: h.Captures.Void, byKey: h.Captures.VoidByKey}, true
	}, actionRow, func(op.Code) bool { return false }),
}

func actionRow(r capture.Row) outbox.Row { return operations.ActionRow{Row: r} }

// actionService is one action's door and its lookup by key.
type actionService[R any] struct {
	door  func(context.Context, op.ActionInput) op.ActionResult[R]
	byKey func(ctx context.Context, account, key string) op.ActionResult[R]
}

// queuedAction is how the queue carries the commands of an action on a
// charge (a refund, a capture, a void): its service, of h (false when h
// has none: a wiring mistake, kept, and loud), its rows as the outbox
// sees them (wrap), and which refusals are the bound's (bound). A stored
// refusal with no row under it (op.Result.Rowless, or, for an answer
// stored before results said so, a code bound names) is told to the
// producer as kind's rejected event rather than republished, since no row
// makes its event; a decline has its row, whose event the stream
// publishes.
func queuedAction[R any](operation string, codes op.Codes, kind event.Kind, service func(*Handler) (actionService[R], bool),
	wrap func(R) outbox.Row, bound func(op.Code) bool) queued {
	return queued{
		operation: operation,
		run: func(ctx context.Context, h *Handler, in Inbox, cmd command.Command, keys []string) verdict {
			svc, ok := service(h)
			if !ok {
				h.Logger.ErrorContext(ctx, "a "+operation+" command, and no service to run it; will retry")
				return verdict{outcome: obs.OutcomeUnavailable, operation: operation, retry: true}
			}
			res := svc.door(ctx, op.ActionInput{Account: cmd.Account, Keys: keys, ChargeID: cmd.ChargeID, Body: cmd.Request, Source: event.SourceQueue(in.Producer)})
			v := verdictOf(call{operation: operation, codes: codes, outcome: res.Outcome, record: res.Record, attempt: res.Attempt,
				waitOut: res.WaitOut, errs: res.Errors, reason: res.Reason})
			v.key = res.Key
			if res.Refusal != "" && (rowless(res.Response) || bound(res.Refusal)) && (res.Outcome == op.Executed || res.Outcome == op.Replayed) {
				e := kind.OfRefusal(event.Refusal{ActionID: res.ID, ChargeID: cmd.ChargeID, Account: cmd.Account,
					IdempotencyKey: res.Key, Source: res.Source, Code: string(res.Refusal), At: res.ClaimedAt})
				v.tell, v.republish = &e, false
			}
			return v
		},
		replayed: func(ctx context.Context, h *Handler, account, key string) (outbox.Row, op.Outcome) {
			svc, _ := service(h)
			res := svc.byKey(ctx, account, key)
			return wrap(res.Row), res.Outcome
		},
		rejection: kind.OfRejection,
	}
}

// chargeVerdictOf is the verdict of a charge command's result.
func chargeVerdictOf(res charge.Result) verdict {
	v := verdictOf(call{operation: charge.Operation, codes: charge.Codes, outcome: res.Outcome, record: res.Record, attempt: res.Attempt,
		waitOut: res.WaitOut, errs: res.Errors, reason: res.Reason})
	v.notSent, v.unknown = res.AcquirerNotSent, res.AcquirerUnknown
	return v
}

// queuedOf is the queued operation of verdict v: a charge's before the
// command named one (a message that is no command).
func queuedOf(v verdict) queued {
	for _, q := range queuedOps {
		if q.operation == v.operation {
			return q
		}
	}
	return queuedOps[command.TypeCharge]
}

// replayedEvent is the event of the row v's key names: found false with
// the lookup's outcome in err when there is none.
func (h *Handler) replayedEvent(ctx context.Context, v verdict) (event.Event, bool, error) {
	row, outcome := queuedOf(v).replayed(ctx, h, v.account, v.key)
	if outcome != op.Found {
		return event.Event{}, false, errors.New(outcome.String())
	}
	e, err := row.RowEvent()
	return e, true, err
}

// rowless reports whether a stored answer says no row answers it.
func rowless(resp idem.Response) bool {
	r, ok := op.ResultOf(resp)
	return ok && r.Rowless
}

package consumer

import (
	"context"
	"errors"
	"time"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/command"
	"github.com/idempotent-payments/idempay/internal/event"
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
	command.TypeRefund: {
		operation: refund.Operation,
		run:       runRefund,
		replayed: func(ctx context.Context, h *Handler, account, key string) (outbox.Row, op.Outcome) {
			res := h.Refunds.ByKey(ctx, account, key)
			return operations.RefundRow{Refund: res.Row}, res.Outcome
		},
		rejection: event.Refunds.OfRejection,
	},
}

// runRefund takes a refund command: its door, and the bound's refusal
// told to the producer (refund.rejected with the code) rather than
// republished, since it has no row.
func runRefund(ctx context.Context, h *Handler, in Inbox, cmd command.Command, keys []string) verdict {
	if h.Refunds == nil { // a wiring mistake: kept, and loud
		h.Logger.ErrorContext(ctx, "a refund command, and no refund service to run it; will retry")
		return verdict{outcome: obs.OutcomeUnavailable, operation: refund.Operation, retry: true}
	}
	res := h.Refunds.Refund(ctx, refund.Input{Account: cmd.Account, Keys: keys, ChargeID: cmd.ChargeID, Body: cmd.Request, Source: event.SourceQueue(in.Producer)})
	v := refundVerdictOf(res)
	v.key = res.Key
	if code := string(res.Refusal); code != "" && (res.Outcome == op.Executed || res.Outcome == op.Replayed) {
		e := event.Refunds.OfRefusal(event.Refusal{ActionID: res.ID, ChargeID: cmd.ChargeID, Account: cmd.Account,
			IdempotencyKey: res.Key, Source: res.Source, Code: code, At: res.ClaimedAt})
		v.tell, v.republish = &e, false
	}
	return v
}

// chargeVerdictOf is the verdict of a charge command's result.
func chargeVerdictOf(res charge.Result) verdict {
	v := verdictOf(call{operation: charge.Operation, codes: charge.Codes, outcome: res.Outcome, record: res.Record, attempt: res.Attempt,
		waitOut: res.WaitOut, errs: res.Errors, reason: res.Reason})
	v.notSent, v.unknown = res.AcquirerNotSent, res.AcquirerUnknown
	return v
}

// refundVerdictOf is the verdict of a refund command's result.
func refundVerdictOf(res refund.Result) verdict {
	return verdictOf(call{operation: refund.Operation, codes: refund.Codes, outcome: res.Outcome, record: res.Record, attempt: res.Attempt,
		waitOut: res.WaitOut, errs: res.Errors, reason: res.Reason})
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

package main

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/command"
	"github.com/idempotent-payments/idempay/internal/event"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/obs"
	"github.com/idempotent-payments/idempay/internal/outbox"
	"github.com/idempotent-payments/idempay/internal/refund"
)

// Delayer changes when a received message is delivered again.
type Delayer interface {
	Delay(ctx context.Context, receiptHandle string, d time.Duration) error
}

// DeadLetters takes messages that must never be retried, with the reason:
// the rejected-commands queue.
type DeadLetters interface {
	Send(ctx context.Context, body string, attributes map[string]string) error
}

// Handler processes batches of commands and reports partial batch
// failures: one bad message never fails its batch. Which commands it takes
// is its Inboxes': a producer's queue brings charge commands for that
// producer's accounts, the reconcile queue the sweeper's reconcile commands.
type Handler struct {
	Service *charge.Service
	// Refunds reconciles the refund records the sweeper flags; a charge's
	// record goes to Service.
	Refunds Reconciler
	// Inboxes are the queues this function reads, by ARN (a record's
	// eventSourceARN). A message from any other queue is refused.
	Inboxes     map[string]inbox
	DeadLetters DeadLetters
	// Concurrency bounds the messages of one batch processed at once.
	Concurrency int
	Logger      *slog.Logger
	// Metrics gets one EMF line per message; nil skips it.
	Metrics *obs.Metrics
	// Outcomes, when set, gets a charge.rejected event for every command a
	// producer's queue brought that is refused, before the message is
	// dead-lettered and deleted: a refusal writes nothing to the table, so
	// no change publishes it. A message from a queue of no producer has
	// nobody to tell. It also gets the charge's captured or declined event
	// again, the same id, when a producer's command is a replay: a producer
	// that missed its event sends the same command again and receives it
	// (its lookup by key; HTTP callers have GET /v1/charges?idempotency_key).
	// The event goes where the ledger row says, to the charge's first asker.
	Outcomes Outcomes
	// Now is the clock of the rejections' time (time.Now when nil).
	Now func() time.Time
}

// Reconciler resolves a stale record (refund.Service.Reconcile).
type Reconciler interface {
	Reconcile(ctx context.Context, pk string) (charge.Reconciled, error)
}

// Outcomes is where the consumer's rejections are published.
type Outcomes interface {
	Publish(ctx context.Context, e event.Event) error
}

// inbox is one queue the handler reads: what it admits, and the queue
// itself, to delay a message's redelivery.
type inbox struct {
	command.Inbox
	Queue Delayer
}

// verdict is what to do with one message.
type verdict struct {
	outcome    obs.Outcome // for the log line and the metrics
	record     string      // idem.Ref of the record, when known
	attempt    int
	retry      bool          // report a batch item failure
	delay      time.Duration // and, when positive, redeliver after this
	rejectCode string        // dead-letter with this code (and success)
	reason     string
	republish  bool // a replay: publish the charge's event again
	// account is the command's ("" before it decoded); key is its key as
	// the service parsed it (charge.Result.Key: the bare key, whether the
	// command sent it bare or quoted), or as the command named it when it
	// never parsed
	account, key string
	// acquirer calls that proved nothing sent, and that left the outcome unknown
	notSent, unknown int
}

// Handle processes one batch.
func (h *Handler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	var (
		mu       sync.Mutex
		failures []events.SQSBatchItemFailure
		wg       sync.WaitGroup
		slots    = make(chan struct{}, max(1, h.Concurrency))
	)
	for _, msg := range ev.Records {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			start := time.Now()
			ctx := obs.WithAttrs(ctx, slog.String("messageId", msg.MessageId))
			in, known := h.Inboxes[msg.EventSourceARN]
			if in.Producer != "" {
				ctx = obs.WithAttrs(ctx, slog.String("producer", in.Producer))
			}
			v := h.process(ctx, in, known, msg)
			// Every line about the message names its record ("" when the
			// message never named one).
			ctx = obs.WithAttrs(ctx, slog.String("record", v.record))
			done := h.settle(ctx, in, msg, v)
			h.Logger.InfoContext(ctx, "message", "operation", charge.Operation,
				"outcome", v.outcome, "attempt", v.attempt, "retry", !done, "acquirer_not_sent", v.notSent, "acquirer_unknown", v.unknown,
				"total_ms", float64(time.Since(start).Microseconds())/1000)
			if h.Metrics != nil {
				values := map[string]float64{obs.MetricLatencyMs: float64(time.Since(start).Microseconds()) / 1000, obs.MetricAcquirerErrors: float64(v.notSent + v.unknown)}
				if v.rejectCode != "" && done {
					values[obs.MetricDeadLettered] = 1
				}
				h.Metrics.Record(v.outcome, values)
			}
			if !done {
				mu.Lock()
				failures = append(failures, events.SQSBatchItemFailure{ItemIdentifier: msg.MessageId})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return events.SQSEventResponse{BatchItemFailures: failures}, nil
}

// settle carries out v and reports whether the message is done (deleted).
func (h *Handler) settle(ctx context.Context, in inbox, msg events.SQSMessage, v verdict) bool {
	switch {
	case v.rejectCode != "":
		if h.Outcomes != nil && in.Producer != "" {
			now := time.Now
			if h.Now != nil {
				now = h.Now
			}
			if err := h.Outcomes.Publish(ctx, event.OfRejection(msg.MessageId, in.Producer, v.account, v.key, v.rejectCode, now())); err != nil {
				h.Logger.WarnContext(ctx, "publishing the rejection failed; the message will be retried", "reject_code", v.rejectCode, "error", err)
				return false
			}
		}
		err := h.DeadLetters.Send(ctx, msg.Body, map[string]string{
			"reject_code": v.rejectCode, "reject_reason": v.reason, "source_message_id": msg.MessageId,
			"source_queue": msg.EventSourceARN,
		})
		if err != nil {
			h.Logger.ErrorContext(ctx, "dead-letter failed; the message will be retried", "reject_code", v.rejectCode, "error", err)
			return false
		}
		h.Logger.WarnContext(ctx, "message rejected", "reject_code", v.rejectCode)
		return true
	case v.republish && h.Outcomes != nil && in.Producer != "":
		return h.republish(ctx, v)
	case v.retry:
		if v.delay > 0 && in.Queue != nil { // only a known inbox's messages are delayed
			if err := in.Queue.Delay(ctx, msg.ReceiptHandle, v.delay); err != nil {
				h.Logger.WarnContext(ctx, "delay failed; the queue's visibility timeout applies", "error", err)
			}
		}
		return false
	}
	return true
}

// republish publishes again the event of the charge a replayed command
// names, read through the service's lookup by key, and reports whether
// the message is done: a failed read or publish keeps it for a retry,
// which replays again.
func (h *Handler) republish(ctx context.Context, v verdict) bool {
	res := h.Service.ByKey(ctx, v.account, v.key)
	if res.Outcome != charge.Found {
		h.Logger.WarnContext(ctx, "a replayed command's charge was not found to republish its event; the message will be retried", "lookup", res.Outcome.String())
		return false
	}
	e, err := outbox.RowEvent(res.Charge)
	if err == nil {
		err = h.Outcomes.Publish(ctx, e)
	}
	if err != nil {
		h.Logger.WarnContext(ctx, "republishing a replayed command's event failed; the message will be retried", "error", err)
		return false
	}
	return true
}

// process decides what to do with msg, which arrived on in (known false:
// on a queue not among the handler's Inboxes).
func (h *Handler) process(ctx context.Context, in inbox, known bool, msg events.SQSMessage) verdict {
	if !known {
		return verdict{outcome: obs.OutcomeProducerNotAllowed, rejectCode: rejectNotAllowed, reason: "the message came from a queue this consumer does not read for any producer"}
	}
	cmd, err := command.Decode(msg.Body)
	if reqErr, inRequest := command.RequestError(err); inRequest {
		// The request is not even well-formed JSON (a syntax error, a
		// duplicate name, invalid UTF-8, a lone surrogate), so the envelope
		// cannot be read past it: refused as the HTTP route refuses those
		// bytes (VALIDATION_FAILED), before the key is looked at.
		v := verdicts[charge.RequestInvalid]
		v.outcome = charge.RequestInvalid.Name()
		v.reason = charge.DecodeError(reqErr).Error()
		return v
	}
	if err != nil {
		return verdict{outcome: obs.OutcomeMalformed, rejectCode: rejectMalformed, reason: err.Error()}
	}
	if ok, why := in.Admits(cmd); !ok {
		return verdict{outcome: obs.OutcomeProducerNotAllowed, rejectCode: rejectNotAllowed, reason: why, account: cmd.Account, key: cmd.IdempotencyKey}
	}
	switch cmd.Type {
	case command.TypeCharge:
		var keys []string
		if cmd.IdempotencyKey != "" {
			keys = []string{cmd.IdempotencyKey}
		}
		res := h.Service.Charge(ctx, charge.Input{Account: cmd.Account, Keys: keys, Body: cmd.Request, Source: event.SourceQueue(in.Producer)})
		v := verdictOf(res)
		v.account, v.key = cmd.Account, cmp.Or(res.Key, cmd.IdempotencyKey)
		return v
	default: // command.TypeReconcile: Decode knows no other
		record := idem.Ref(cmd.PK)
		reconcile := h.Service.Reconcile
		if scope, err := idem.ParsePK(cmd.PK); err == nil && scope.Operation == refund.Operation {
			if h.Refunds == nil { // a wiring mistake: kept, and loud, never dead-lettered as malformed
				h.Logger.ErrorContext(obs.WithAttrs(ctx, slog.String("record", record)), "a refund's reconcile command, and no refund service to run it; will retry")
				return verdict{outcome: obs.OutcomeReconcileFailed, record: record, retry: true}
			}
			reconcile = h.Refunds.Reconcile
		}
		outcome, err := reconcile(ctx, cmd.PK)
		if outcome == charge.ReconciledMismatch { // held, unless the hold failed (err): then retried
			return verdict{outcome: outcome.Name(), record: record, retry: err != nil}
		}
		if errors.Is(err, charge.ErrNotAChargeRecord) || errors.Is(err, refund.ErrNotARefundRecord) {
			return verdict{outcome: obs.OutcomeMalformed, rejectCode: rejectMalformed, reason: err.Error()}
		}
		if err != nil {
			h.Logger.WarnContext(obs.WithAttrs(ctx, slog.String("record", record)), "reconcile failed; will retry", "error", err)
			return verdict{outcome: obs.OutcomeReconcileFailed, record: record, retry: true}
		}
		return verdict{outcome: outcome.Name(), record: record} // held: deleted, left to its operator
	}
}

// The queue path's own dead-letter codes (command.RejectMalformed, …).
const (
	rejectMalformed  = command.RejectMalformed
	rejectNotAllowed = command.RejectProducerNotAllowed
)

// verdicts is the one table from the service's outcomes to what happens to
// a message. A charge command is refused with the code the HTTP route
// answers the same input with; a refusal is final, so it is dead-lettered
// with the reason and never retried. A command without a key is refused
// rather than given one: SQS's message id covers redelivery of one message,
// not a producer that sends the same intent twice.
var verdicts = map[charge.Outcome]verdict{
	charge.Executed:    {},
	charge.Replayed:    {republish: true},
	charge.InFlight:    {retry: true},
	charge.Released:    {retry: true},
	charge.Pending:     {retry: true},
	charge.Unavailable: {retry: true},
	// Held for an operator: no receive can change that, so the message is
	// deleted with its own verdict (its outcome), never retried into the
	// DLQ; the operator's settlement decides the charge.
	charge.Mismatch:       {},
	charge.Held:           {},
	charge.AccountInvalid: {rejectCode: charge.AccountInvalid.Code()},
	charge.KeyMissing:     {rejectCode: charge.KeyMissing.Code()},
	charge.KeyInvalid:     {rejectCode: charge.KeyInvalid.Code()},
	charge.RequestInvalid: {rejectCode: charge.RequestInvalid.Code()},
	charge.KeyReused:      {rejectCode: charge.KeyReused.Code()},
}

// verdictOf looks a charge result up in verdicts. An in-flight message is
// hidden until the owner's lease has ended plus T and the skew (WaitOut,
// capped by SQS's 12 hours): by then the owner has finished or the record
// can be taken over, so one receive is spent per lease met, however long
// the lease, and no in-flight intent runs out of receives.
func verdictOf(res charge.Result) verdict {
	v, ok := verdicts[res.Outcome]
	if !ok { // an outcome this table does not know yet: keep the message
		v = verdict{retry: true}
	}
	v.outcome, v.record, v.attempt = res.Outcome.Name(), res.Record, res.Attempt
	v.notSent, v.unknown = res.AcquirerNotSent, res.AcquirerUnknown
	if res.Outcome == charge.InFlight {
		v.delay = res.WaitOut
	}
	if v.rejectCode != "" {
		v.reason = reasonOf(res)
	}
	return v
}

// reasonOf says why a command was refused, without echoing its values.
func reasonOf(res charge.Result) string {
	if len(res.Errors) > 0 {
		return (&charge.ValidationError{Errors: res.Errors}).Error() // as the HTTP detail reads
	}
	if res.Reason != "" {
		return res.Reason
	}
	return res.Outcome.String()
}

package consumer

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idempotent-payments/idempay/internal/capture"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/command"
	"github.com/idempotent-payments/idempay/internal/event"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/obs"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/operations"
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
// is its Inboxes': a producer's queue brings charge and refund commands
// for that producer's accounts, the reconcile queue the sweeper's
// reconcile commands.
type Handler struct {
	Service *charge.Service
	// Operations are the services a reconcile command reaches, by its
	// record's key.
	Operations *op.Registry
	// Refunds takes refund commands and reconciles the refund records the
	// sweeper flags; a charge's record goes to Service.
	Refunds Refunds
	// Captures takes capture and void commands.
	Captures Captures
	// Inboxes are the queues this function reads, by ARN (a record's
	// eventSourceARN). A message from any other queue is refused.
	Inboxes     map[string]Inbox
	DeadLetters DeadLetters
	// Concurrency bounds the messages of one batch processed at once.
	Concurrency int
	Logger      *slog.Logger
	// Metrics gets one EMF line per message; nil skips it.
	Metrics *obs.Metrics
	// Outcomes, when set, gets a charge.rejected or refund.rejected event
	// for every command a producer's queue brought that is refused at the
	// door, before the message is dead-lettered and deleted: a refusal
	// writes nothing to the table, so no change publishes it. A message
	// from a queue of no producer has nobody to tell. It gets a refund's
	// refund.rejected event when the bound refused it: the key's stored
	// answer, which writes no row. It also gets the charge's or the
	// refund's event again, the same id and body, when a producer's
	// command is a replay: a producer that missed its event sends the same
	// command again and receives it (its lookup by key; HTTP callers have
	// GET /v1/charges?idempotency_key). The event goes where the row or
	// the record says, to the first asker.
	Outcomes Outcomes
	// Now is the clock of a door rejection's time when its message has no
	// SentTimestamp (time.Now when nil).
	Now func() time.Time
}

// Refunds is what the consumer needs of the refund service
// (refund.Service): its door, its lookup by key, and the reconciliation
// of its records.
type Refunds interface {
	Refund(ctx context.Context, in refund.Input) refund.Result
	ByKey(ctx context.Context, account, key string) refund.Result
	Reconcile(ctx context.Context, pk string) (op.Reconciled, error)
}

// Captures is what the consumer needs of the capture service
// (capture.Service): its two doors and their lookups by key (a capture's
// and a void's records reconcile through Operations).
type Captures interface {
	Capture(ctx context.Context, in capture.Input) capture.Result
	Void(ctx context.Context, in capture.Input) capture.Result
	CaptureByKey(ctx context.Context, account, key string) capture.Result
	VoidByKey(ctx context.Context, account, key string) capture.Result
}

// Outcomes is where the consumer's rejections are published.
type Outcomes interface {
	Publish(ctx context.Context, e event.Event) error
}

// Inbox is one queue the handler reads: what it admits, and the queue
// itself, to delay a message's redelivery.
type Inbox struct {
	command.Inbox
	Queue Delayer
}

// InboxesOf are the inboxes the list admits, by ARN, each with its queue
// as queueOf makes it from its URL.
func InboxesOf(list []command.Inbox, queueOf func(url string) Delayer) map[string]Inbox {
	out := make(map[string]Inbox, len(list))
	for _, in := range list {
		out[in.ARN] = Inbox{Inbox: in, Queue: queueOf(in.URL)}
	}
	return out
}

// verdict is what to do with one message.
type verdict struct {
	outcome    obs.Outcome // for the log line and the metrics
	operation  string      // charge.Operation or refund.Operation
	record     string      // idem.Ref of the record, when known
	attempt    int
	retry      bool          // report a batch item failure
	delay      time.Duration // and, when positive, redeliver after this
	rejectCode string        // dead-letter with this code (and success)
	reason     string
	republish  bool // a replay: publish the charge's or the refund's event again
	// tell is an event to publish before the message is deleted: a refund
	// the bound refused
	tell *event.Event
	// told is a refusal code to tell the producer as refund.rejected when
	// the message is deleted without a dead letter: a refund of a held
	// charge, of which nothing was stored
	told string
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
			h.Logger.InfoContext(ctx, "message", obs.KeyOperation, cmp.Or(v.operation, charge.Operation),
				obs.KeyOutcome, v.outcome, "attempt", v.attempt, "retry", !done, obs.KeyAcquirerNotSent, v.notSent, obs.KeyAcquirerUnknown, v.unknown,
				obs.KeyTotalMs, float64(time.Since(start).Microseconds())/1000)
			if h.Metrics != nil {
				values := map[string]float64{obs.MetricLatencyMs: float64(time.Since(start).Microseconds()) / 1000, obs.MetricAcquirerErrors: float64(v.notSent + v.unknown)}
				if v.rejectCode != "" && done {
					values[obs.MetricDeadLettered] = 1
				}
				if reg, ok := operations.ByName(v.operation); ok {
					reg.Count(v.outcome, values)
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
func (h *Handler) settle(ctx context.Context, in Inbox, msg events.SQSMessage, v verdict) bool {
	switch {
	case v.rejectCode != "":
		if h.Outcomes != nil && in.Producer != "" {
			if err := h.Outcomes.Publish(ctx, queuedOf(v).rejection(msg.MessageId, in.Producer, v.account, v.key, v.rejectCode, h.sentAt(msg))); err != nil {
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
	case v.tell != nil && h.Outcomes != nil && in.Producer != "":
		if err := h.Outcomes.Publish(ctx, *v.tell); err != nil {
			h.Logger.WarnContext(ctx, "publishing a refund's refusal failed; the message will be retried", "error", err)
			return false
		}
		return true
	case v.told != "" && h.Outcomes != nil && in.Producer != "":
		if err := h.Outcomes.Publish(ctx, queuedOf(v).rejection(msg.MessageId, in.Producer, v.account, v.key, v.told, h.sentAt(msg))); err != nil {
			h.Logger.WarnContext(ctx, "publishing a refusal failed; the message will be retried", "error", err)
			return false
		}
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

// republish publishes again the event of the charge or the refund a
// replayed command names, read through its service's lookup by key (a
// bound's refusal is told from v.tell instead), and reports whether the
// message is done: a failed read or publish keeps it for a retry, which
// replays again.
func (h *Handler) republish(ctx context.Context, v verdict) bool {
	e, found, err := h.replayedEvent(ctx, v)
	if !found {
		h.Logger.WarnContext(ctx, "a replayed command's row was not found to republish its event; the message will be retried", "lookup", err)
		return false
	}
	if err == nil {
		err = h.Outcomes.Publish(ctx, e)
	}
	if err != nil {
		h.Logger.WarnContext(ctx, "republishing a replayed command's event failed; the message will be retried", "error", err)
		return false
	}
	return true
}

// sentAt is when msg was first sent (its SentTimestamp), the same on
// every receive of it; now when SQS did not say.
func (h *Handler) sentAt(msg events.SQSMessage) time.Time {
	if ms, err := strconv.ParseInt(msg.Attributes["SentTimestamp"], 10, 64); err == nil && ms > 0 {
		return time.UnixMilli(ms)
	}
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

// process decides what to do with msg, which arrived on in (known false:
// on a queue not among the handler's Inboxes).
func (h *Handler) process(ctx context.Context, in Inbox, known bool, msg events.SQSMessage) verdict {
	if !known {
		return verdict{outcome: obs.OutcomeProducerNotAllowed, rejectCode: rejectNotAllowed, reason: "the message came from a queue this consumer does not read for any producer"}
	}
	cmd, err := command.Decode(msg.Body)
	if reqErr, inRequest := command.RequestError(err); inRequest {
		// The request is not even well-formed JSON (a syntax error, a
		// duplicate name, invalid UTF-8, a lone surrogate), so the envelope
		// cannot be read past it: refused as the HTTP route refuses those
		// bytes (VALIDATION_FAILED), before the key is looked at.
		// It is told as its operation's refusal when the command's type
		// came before its request (as Encode writes it); a message that
		// names no operation is told as a charge's.
		return verdict{outcome: op.RequestInvalid.Name(), operation: queuedOps[cmd.Type].operation, rejectCode: string(op.CodeValidationFailed),
			reason: charge.DecodeError(reqErr).Error()}
	}
	if err != nil {
		return verdict{outcome: obs.OutcomeMalformed, rejectCode: rejectMalformed, reason: err.Error()}
	}
	if ok, why := in.Admits(cmd); !ok {
		return verdict{outcome: obs.OutcomeProducerNotAllowed, operation: queuedOps[cmd.Type].operation, rejectCode: rejectNotAllowed, reason: why,
			account: cmd.Account, key: cmd.IdempotencyKey}
	}
	q, ok := queuedOps[cmd.Type]
	if !ok { // command.TypeReconcile: Decode knows no other
		return h.reconcile(ctx, cmd.PK)
	}
	var keys []string
	if cmd.IdempotencyKey != "" {
		keys = []string{cmd.IdempotencyKey}
	}
	v := q.run(ctx, h, in, cmd, keys)
	v.account, v.key = cmd.Account, cmp.Or(v.key, cmd.IdempotencyKey)
	return v
}

// reconcile runs the reconcile command of the record pk, on the service
// of its operation (op.Registry.Of).
func (h *Handler) reconcile(ctx context.Context, pk string) verdict {
	record := idem.Ref(pk)
	o, err := h.Operations.Of(pk)
	if err != nil { // no record's key, or of no operation registered: the sweeper flags a stale record again
		return verdict{outcome: obs.OutcomeMalformed, rejectCode: rejectMalformed, reason: err.Error()}
	}
	outcome, err := o.Reconcile(ctx, pk)
	operation := o.Name()
	switch {
	case outcome == op.ReconciledMismatch: // held, unless the hold failed (err): then retried
		return verdict{outcome: outcome.Name(), operation: operation, record: record, retry: err != nil}
	case errors.Is(err, op.ErrUnknownOperation): // a service given another's record: no retry changes it
		return verdict{outcome: obs.OutcomeMalformed, operation: operation, rejectCode: rejectMalformed, reason: err.Error()}
	case err != nil:
		h.Logger.WarnContext(obs.WithAttrs(ctx, slog.String("record", record)), "reconcile failed; will retry", "error", err)
		return verdict{outcome: obs.OutcomeReconcileFailed, operation: operation, record: record, retry: true}
	}
	return verdict{outcome: outcome.Name(), operation: operation, record: record} // held: deleted, left to its operator
}

// The queue path's own dead-letter codes (command.RejectMalformed, …).
const (
	rejectMalformed  = command.RejectMalformed
	rejectNotAllowed = command.RejectProducerNotAllowed
)

// verdicts is the one table from an operation's outcomes to what happens
// to a message, for every operation. A command is refused with the code
// the HTTP route answers the same input with (the operation's op.Codes);
// a refusal is final, so it is dead-lettered with the reason and never
// retried (no such charge and a charge that cannot be refunded are final
// too). A command without a key is refused rather than given one: SQS's
// message id covers redelivery of one message, not a producer that sends
// the same intent twice. What may change with time is retried.
var verdicts = map[op.Outcome]rule{
	op.Executed:      {},
	op.Replayed:      {verdict: verdict{republish: true}},
	op.InFlight:      {verdict: verdict{retry: true}, waitOut: true},
	op.Released:      {verdict: verdict{retry: true}},
	op.Pending:       {verdict: verdict{retry: true}},
	op.Unavailable:   {verdict: verdict{retry: true}},
	op.ChargePending: {verdict: verdict{retry: true}, waitOut: true},
	// Held for an operator: no receive can change that, so the message is
	// deleted with its own verdict (its outcome), never retried into the
	// DLQ; the operator's settlement decides.
	op.Mismatch: {},
	op.Held:     {},
	// A call on a held charge stored nothing, so the producer is told
	// (a rejection event with the code), to send it again once the charge
	// is settled.
	op.ChargeHeld:     {tell: true},
	op.AccountInvalid: {reject: true},
	op.KeyMissing:     {reject: true},
	op.KeyInvalid:     {reject: true},
	op.RequestInvalid: {reject: true},
	op.KeyReused:      {reject: true},
	op.NotFound:       {reject: true},
	op.NotRefundable:  {reject: true},
	// A capture's and a void's: nothing capturable and an expired
	// authorization are final; one that meets another capture or void in
	// flight is hidden until that intent's lease has surely ended
	// (capture.Result.WaitOut), as a command that meets its charge in
	// flight is.
	op.NotCapturable:        {reject: true},
	op.AuthorizationExpired: {reject: true},
	op.CaptureInFlight:      {verdict: verdict{retry: true}, waitOut: true},
	op.VoidInFlight:         {verdict: verdict{retry: true}, waitOut: true},
	// One that meets a capture or void held for an operator stored
	// nothing, and no lease's end frees it: told and deleted, as a call on
	// a held charge is.
	op.CaptureHeld: {tell: true},
	op.VoidHeld:    {tell: true},
}

// rule is a row of verdicts: the verdict, and whether its message is
// dead-lettered with the outcome's code (reject), told the producer with
// it (tell), or hidden until the lease it met has ended (waitOut: the
// owner's lease plus T and the skew, capped by SQS's 12 hours, so one
// receive is spent per lease met, however long the lease, and no
// in-flight intent runs out of receives).
type rule struct {
	verdict
	reject, tell, waitOut bool
}

// call is what the table reads of one operation's result.
type call struct {
	operation string
	codes     op.Codes
	outcome   op.Outcome
	record    string
	attempt   int
	waitOut   time.Duration
	errs      []charge.FieldError
	reason    string
}

// verdictOf looks c up in verdicts; an outcome the table does not know
// keeps the message.
func verdictOf(c call) verdict {
	r, ok := verdicts[c.outcome]
	if !ok {
		r = rule{verdict: verdict{retry: true}}
	}
	v := r.verdict
	v.outcome, v.operation, v.record, v.attempt = c.outcome.Name(), c.operation, c.record, c.attempt
	if r.waitOut {
		v.delay = c.waitOut
	}
	switch {
	case r.reject:
		v.rejectCode = string(c.codes.Of(c.outcome))
		v.reason = refusal(c.errs, c.reason, c.outcome.String())
	case r.tell:
		v.told = string(c.codes.Of(c.outcome))
	}
	return v
}

// refusal says why a command was refused: its field errors, as the HTTP
// detail reads, or the reason the key or the account was refused, or the
// outcome.
func refusal(errs []charge.FieldError, reason, outcome string) string {
	switch {
	case len(errs) > 0:
		return (&charge.ValidationError{Errors: errs}).Error()
	case reason != "":
		return reason
	}
	return outcome
}

package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/obs"
)

// Delayer changes when a received message is delivered again.
type Delayer interface {
	Delay(ctx context.Context, receiptHandle string, d time.Duration) error
}

// DeadLetters takes messages that must never be retried, with the reason.
type DeadLetters interface {
	Send(ctx context.Context, body string, attributes map[string]string) error
}

// Handler processes batches of charge and reconcile commands from the
// charge-commands queue and reports partial batch failures: one bad message
// never fails its batch.
type Handler struct {
	Service     *charge.Service
	Commands    Delayer
	DeadLetters DeadLetters
	// Concurrency bounds the messages of one batch processed at once.
	Concurrency int
	Logger      *slog.Logger
	// Metrics gets one EMF line per message; nil skips it.
	Metrics *obs.Metrics
}

// command is a message on the queue: a charge (same key space as the HTTP
// route) or a reconcile request from the sweeper.
type command struct {
	Type           string          `json:"type"`
	Account        string          `json:"account"`
	IdempotencyKey string          `json:"idempotency_key"`
	Request        json.RawMessage `json:"request"`
	PK             string          `json:"pk"`
}

// verdict is what to do with one message.
type verdict struct {
	outcome    string // for the log line and the metrics
	record     string // idem.Ref of the record, when known
	attempt    int
	retry      bool          // report a batch item failure
	delay      time.Duration // and, when positive, redeliver after this
	rejectCode string        // dead-letter with this code (and success)
	reason     string
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
			v := h.process(ctx, msg)
			done := h.settle(ctx, msg, v)
			h.Logger.InfoContext(ctx, "message", "messageId", msg.MessageId, "operation", charge.Operation, "record", v.record,
				"outcome", v.outcome, "attempt", v.attempt, "retry", !done, "total_ms", float64(time.Since(start).Microseconds())/1000)
			if h.Metrics != nil {
				values := map[string]float64{"LatencyMs": float64(time.Since(start).Microseconds()) / 1000}
				if v.rejectCode != "" && done {
					values["DeadLettered"] = 1
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
func (h *Handler) settle(ctx context.Context, msg events.SQSMessage, v verdict) bool {
	switch {
	case v.rejectCode != "":
		err := h.DeadLetters.Send(ctx, msg.Body, map[string]string{
			"reject_code": v.rejectCode, "reject_reason": v.reason, "source_message_id": msg.MessageId,
		})
		if err != nil {
			h.Logger.ErrorContext(ctx, "dead-letter failed; the message will be retried", "messageId", msg.MessageId, "error", err)
			return false
		}
		h.Logger.WarnContext(ctx, "message rejected", "messageId", msg.MessageId, "reject_code", v.rejectCode)
		return true
	case v.retry:
		if v.delay > 0 {
			if err := h.Commands.Delay(ctx, msg.ReceiptHandle, v.delay); err != nil {
				h.Logger.WarnContext(ctx, "delay failed; the queue's visibility timeout applies", "messageId", msg.MessageId, "error", err)
			}
		}
		return false
	}
	return true
}

func (h *Handler) process(ctx context.Context, msg events.SQSMessage) verdict {
	var cmd command
	if err := json.Unmarshal([]byte(msg.Body), &cmd); err != nil {
		return verdict{outcome: "rejected", rejectCode: "MALFORMED", reason: "not a JSON command"}
	}
	switch cmd.Type {
	case "charge":
		return h.charge(ctx, cmd)
	case "reconcile":
		outcome, err := h.Service.Reconcile(ctx, cmd.PK)
		if err != nil {
			h.Logger.WarnContext(ctx, "reconcile failed; will retry", "messageId", msg.MessageId, "error", err)
			return verdict{outcome: "reconcile_failed", record: idem.Ref(cmd.PK), retry: true}
		}
		return verdict{outcome: "reconciled_" + strings.ReplaceAll(outcome.String(), " ", "_"), record: idem.Ref(cmd.PK)}
	}
	return verdict{outcome: "rejected", rejectCode: "MALFORMED", reason: "unknown command type"}
}

// charge runs a charge command through the same service as the HTTP route.
// A command without a key is rejected: SQS's message id covers redelivery,
// not a producer that sends the same intent twice.
func (h *Handler) charge(ctx context.Context, cmd command) verdict {
	key, err := idem.ParseKey(cmd.IdempotencyKey)
	if err != nil {
		return verdict{outcome: "rejected", rejectCode: "IDEMPOTENCY_KEY_INVALID", reason: err.Error()}
	}
	req, err := charge.ParseRequest(cmd.Request, 0)
	if err != nil {
		return verdict{outcome: "rejected", rejectCode: "VALIDATION_FAILED", reason: err.Error()}
	}
	res := h.Service.ChargeParsed(ctx, idem.Scope{Operation: charge.Operation, Account: cmd.Account, Key: key}, req)
	v := verdict{outcome: res.Outcome, record: res.Record, attempt: res.Attempt}
	switch status := res.StatusCode; {
	case status == 409:
		v.retry, v.delay = true, retryAfter(res)
	case status >= 500:
		v.retry = true
	case status == 201, status == 402:
	default: // 401 (no usable account), 422 (key reused) and any other final answer
		var p struct {
			Code string `json:"code"`
		}
		_ = json.Unmarshal(res.Body, &p)
		v.rejectCode, v.reason = p.Code, "final answer "+strconv.Itoa(status)
	}
	return v
}

func retryAfter(res charge.Result) time.Duration {
	secs, err := strconv.Atoi(res.Headers["Retry-After"])
	if err != nil || secs <= 0 {
		return time.Second
	}
	return time.Duration(secs) * time.Second
}

// Package operations is the one place where the calls that move money
// register: each operation's name, the keys and ids of its ledger rows,
// the events it makes, and the triggers that carry it. The table's
// adapter, the outbox, the publisher and the backstop find an operation
// here, by its records' name or its rows' id or key, and never branch on
// one; adding an operation adds one Registration to the list below.
package operations

import (
	"slices"
	"strings"
	"time"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/capture"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/event"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/obs"
	"github.com/idempotent-payments/idempay/internal/refund"
	"github.com/idempotent-payments/idempay/internal/tabledef"
)

// Trigger is a way a call reaches an operation.
type Trigger string

// The triggers. An operation declares those that carry it; the matrix
// test proves that each one it declares serves it.
const (
	HTTP       Trigger = "http"       // API Gateway (package httpapi)
	Queue      Trigger = "queue"      // SQS commands (package consumer)
	Operator   Trigger = "operator"   // the operator's function URL (package operator)
	Stream     Trigger = "stream"     // the table's stream: its events (package publish)
	Reconciler Trigger = "reconciler" // the reconcile queue (package consumer, op.Operation.Reconcile)
	Backstop   Trigger = "backstop"   // another region's take-over of its rows (package backstop)
)

// Registration is one operation as every adapter knows it.
type Registration struct {
	// Name is the operation its records are claimed under
	// (idem.Scope.Operation).
	Name string
	// RowIDPrefix starts the id of each of its ledger rows, and
	// RowKeyPrefix the table key of each (tabledef).
	RowIDPrefix, RowKeyPrefix string
	// Triggers are the triggers that carry it.
	Triggers []Trigger
	// Events are the events it makes: its rows' outcomes, its records'
	// holds and releases, and a queued command's rejection.
	Events []event.Type
	// Held and Released are the events of its record rec, made held at
	// at, or deleted while held (released at at).
	Held, Released func(rec *idem.Record, at time.Time) (event.Event, error)
	// Metric, when set, counts each of its requests and commands on their
	// metrics line, and MismatchMetric those held on the acquirer's
	// answer: the operation's own alarms read them (Count). HeldMetric is
	// the sweeper's count of its records held for an operator.
	Metric, MismatchMetric, HeldMetric string
	// MovementKind is the kind of the acquirer's report lines its rows
	// pair with in the daily match (acquirer.Movement…), and Moves what
	// one of its rows, or one of those lines, with status and amount moved
	// on its charge: captured, refunded.
	MovementKind string
	Moves        func(status string, amount int64) (captured, refunded int64)
}

// Count adds the operation's own counts to the values of one request or
// command that came to outcome.
func (r Registration) Count(outcome obs.Outcome, values map[string]float64) {
	if r.Metric == "" {
		return
	}
	values[r.Metric] = 1
	if outcome == obs.OutcomeAcquirerMismatch && r.MismatchMetric != "" {
		values[r.MismatchMetric] = 1
	}
}

// Carries reports whether t carries the operation.
func (r Registration) Carries(t Trigger) bool { return slices.Contains(r.Triggers, t) }

// all are the registrations, in the order they were added.
var all = []Registration{
	{
		Name: charge.Operation, RowIDPrefix: charge.IDPrefix, RowKeyPrefix: tabledef.LedgerPrefix,
		Triggers: []Trigger{HTTP, Queue, Operator, Stream, Reconciler, Backstop},
		Events:   []event.Type{event.Captured, event.Authorized, event.Declined, event.Expired, event.Held, event.Released, event.Rejected},
		Held:     chargeHeld, Released: chargeReleased,
		MovementKind: acquirer.MovementAuthorization, Moves: capturedWhen(acquirer.StatusCaptured),
	},
	{
		Name: refund.Operation, RowIDPrefix: refund.IDPrefix, RowKeyPrefix: tabledef.RefundPrefix,
		Triggers: []Trigger{HTTP, Queue, Operator, Stream, Reconciler, Backstop},
		Events:   []event.Type{event.RefundSucceeded, event.RefundDeclined, event.RefundHeld, event.RefundReleased, event.RefundRejected},
		Held:     refundHeld, Released: refundReleased,
		Metric: obs.MetricRefunds, MismatchMetric: obs.MetricRefundMismatches, HeldMetric: obs.MetricHeldRefunds,
		MovementKind: acquirer.MovementRefund, Moves: refundedWhenSucceeded,
	},
	{
		Name: capture.OperationCapture, RowIDPrefix: capture.CaptureIDPrefix, RowKeyPrefix: tabledef.CapturePrefix,
		Triggers: []Trigger{HTTP, Queue, Operator, Stream, Reconciler, Backstop},
		Events:   event.Captures.Types(),
		Held:     captureHold(event.Captures.OfHold), Released: captureHold(event.Captures.OfRelease),
		Metric: obs.MetricCaptures, MismatchMetric: obs.MetricCaptureMismatches, HeldMetric: obs.MetricHeldCaptures,
		MovementKind: acquirer.MovementCapture, Moves: capturedWhen(acquirer.CaptureSucceeded),
	},
	{
		Name: capture.OperationVoid, RowIDPrefix: capture.VoidIDPrefix, RowKeyPrefix: tabledef.VoidPrefix,
		Triggers: []Trigger{HTTP, Queue, Operator, Stream, Reconciler, Backstop},
		Events:   event.Voids.Types(),
		Held:     voidHold(event.Voids.OfHold), Released: voidHold(event.Voids.OfRelease),
		Metric: obs.MetricVoids, MismatchMetric: obs.MetricVoidMismatches, HeldMetric: obs.MetricHeldVoids,
		MovementKind: acquirer.MovementVoid, Moves: movesNothing,
	},
}

// capturedWhen: a row or line in status succeeded captured its amount.
func capturedWhen(succeeded string) func(string, int64) (int64, int64) {
	return func(status string, amount int64) (int64, int64) {
		if status == succeeded {
			return amount, 0
		}
		return 0, 0
	}
}

// refundedWhenSucceeded: a succeeded refund returned its amount.
func refundedWhenSucceeded(status string, amount int64) (int64, int64) {
	if status == acquirer.RefundSucceeded {
		return 0, amount
	}
	return 0, 0
}

// movesNothing: a void releases what was never captured.
func movesNothing(string, int64) (int64, int64) { return 0, 0 }

// ByMovement is the registration whose rows pair with the acquirer's
// report lines of kind.
func ByMovement(kind string) (Registration, bool) {
	return find(func(r Registration) bool { return r.MovementKind == kind })
}

// All are the registrations.
func All() []Registration { return slices.Clone(all) }

// ByName is the registration of the operation name.
func ByName(name string) (Registration, bool) {
	return find(func(r Registration) bool { return r.Name == name })
}

// ByRowID is the registration whose rows' ids row id starts with.
func ByRowID(id string) (Registration, bool) {
	return find(func(r Registration) bool { return strings.HasPrefix(id, r.RowIDPrefix) })
}

// ByRowKey is the registration whose rows' keys the table key key starts
// with.
func ByRowKey(key string) (Registration, bool) {
	return find(func(r Registration) bool { return strings.HasPrefix(key, r.RowKeyPrefix) })
}

func find(match func(Registration) bool) (Registration, bool) {
	if i := slices.IndexFunc(all, match); i >= 0 {
		return all[i], true
	}
	return Registration{}, false
}

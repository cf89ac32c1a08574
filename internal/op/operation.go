package op

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/idempotent-payments/idempay/internal/idem"
)

// ErrNothingAtAcquirer: an operator's look found nothing at the acquirer
// under the record's downstream key: there are no terms to accept. Each
// operation says it in its own words (NothingAtAcquirer).
var ErrNothingAtAcquirer = errors.New("the acquirer has nothing under the record's downstream key")

// NothingAtAcquirer is an operation's ErrNothingAtAcquirer, in its own
// words: errors.Is(err, ErrNothingAtAcquirer) holds, and it reads text.
func NothingAtAcquirer(text string) error { return wordedError{text, ErrNothingAtAcquirer} }

// NotItsRecord is an operation's refusal of a key that is not one of its
// records, in its own words: errors.Is(err, ErrUnknownOperation) holds.
func NotItsRecord(text string) error { return wordedError{text, ErrUnknownOperation} }

// wordedError is the sentinel is, in an operation's words.
type wordedError struct {
	text string
	is   error
}

func (e wordedError) Error() string        { return e.text }
func (e wordedError) Is(target error) bool { return target == e.is }

// ErrUnknownOperation: a record's key names no registered operation (or
// is no record's key). No retry changes it.
var ErrUnknownOperation = errors.New("no registered operation has this record")

// Terms are an acquirer's terms as an operator is shown them and decides
// on them: an authorization's (AuthorizationID), or an action's on an
// authorization (ActionID the acquirer's id of it, a refund's, and
// AuthorizationID the authorization it acts on, where the acquirer
// stated it).
type Terms struct {
	AuthorizationID, ActionID, Status, Currency string
	Amount                                      int64
}

// Decision is an operator's settlement of a held record, as the
// operator's channel received it.
type Decision struct {
	// PK is the held record.
	PK string
	// Instance is the record's downstream key as the operator was shown
	// it: a decision settles that intent of the key, never a later one.
	Instance string
	// Action is idem.SettleAccept or idem.SettleVoidConfirmed.
	Action string
	// By names who decided: the principal the channel authenticated.
	By string
	// ID is the decision's id, the same on every retry of one decision
	// (idem.ValidDecisionID).
	ID string
	// Terms, for an accept, are the acquirer's terms as the operator was
	// shown them (Operation.Peek): the fresh lookup after the take-over
	// must state the same.
	Terms Terms
}

// Operation is what the operator's channel and the reconciler run of one
// operation's service (charge, refund), the same for every operation: a
// trigger finds it by its records' key (Registry.Of) and never branches on
// its name.
type Operation interface {
	// Name is the operation its records are claimed under
	// (idem.Scope.Operation).
	Name() string
	// Peek is the acquirer's answer for the record pk's intent, checked as
	// the operation checks it and asked without taking anything over: what
	// an operator is shown before deciding. It writes nothing. Errors:
	// idem.ErrNotFound, ErrCompleted, idem.ErrOtherDownstream, an error
	// wrapping ErrNothingAtAcquirer, a mismatch (with the terms), or the
	// lookup's failure.
	Peek(ctx context.Context, pk string) (Terms, error)
	// Shown says what Peek's terms are, for the person shown them: what
	// the acquirer says now, checked as the operation checks it.
	Shown() string
	// Reconcile resolves the record pk left in flight (the reconciler's
	// path): an error means nothing is known yet, except one wrapping
	// ErrUnknownOperation, which no retry changes.
	Reconcile(ctx context.Context, pk string) (Reconciled, error)
	// Settle carries out d through the operation's own steps and reads
	// the record back (Settler.Settle): the error is nil exactly when the
	// decision took effect. ReadBack reads back what d did, writing
	// nothing. The row, once the intent completed, is its terms (nil
	// without one).
	Settle(ctx context.Context, d Decision) (Settled[*Terms], error)
	ReadBack(ctx context.Context, d Decision) (Settled[*Terms], error)
	// RowTerms are the terms the row of rec, a completed record, states
	// (nil when it does not read).
	RowTerms(ctx context.Context, rec *idem.Record) *Terms
}

// Registry is a deployment's operations, each by the name its records
// carry. Every trigger that reaches an operation by a record reaches it
// here.
type Registry struct {
	byName map[string]Operation
	names  []string
}

// NewRegistry registers ops. It panics on none, or two of one name: a
// wiring mistake.
func NewRegistry(ops ...Operation) *Registry {
	if len(ops) == 0 {
		panic("op.NewRegistry: no operation")
	}
	r := &Registry{byName: map[string]Operation{}}
	for _, o := range ops {
		if _, dup := r.byName[o.Name()]; dup {
			panic("op.NewRegistry: two operations named " + o.Name())
		}
		r.byName[o.Name()] = o
		r.names = append(r.names, o.Name())
	}
	return r
}

// Of is the operation of the record pk: an error wrapping
// ErrUnknownOperation when pk is no record's key or its operation is not
// registered.
func (r *Registry) Of(pk string) (Operation, error) {
	scope, err := idem.ParsePK(pk)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnknownOperation, err)
	}
	o, ok := r.byName[scope.Operation]
	if !ok {
		return nil, fmt.Errorf("%w: operation %q", ErrUnknownOperation, scope.Operation)
	}
	return o, nil
}

// Names are the registered operations' names, in the order registered.
func (r *Registry) Names() []string { return slices.Clone(r.names) }

package op

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/obs"
)

// Settled is what the table says of a decision's record, read back: the
// Settlement, and the row of the intent once it completed (R's zero value
// without one).
type Settled[R any] struct {
	Settlement
	Row R
}

// Settler is the frame of an operator's settlement of one operation's held
// records, the same for every operation: the record check, the look's
// reading of the live record, the take-over, and Settle and ReadBack. An
// operation supplies only its own steps: how its row of an intent reads,
// and what an accept and a void-confirmed do.
type Settler[R any] struct {
	Guard *idem.Guard
	// Operation is the operation whose records it settles, and
	// NotItsRecord its refusal of any other key (errors.Is
	// ErrUnknownOperation).
	Operation    string
	NotItsRecord error
	// Row reads the row of the intent downstreamKey: found false when the
	// intent has none (no row, or a marker at its key).
	Row func(ctx context.Context, downstreamKey string) (row R, found bool, err error)
	// Accept and VoidConfirmed carry out a decision on a held record.
	Accept, VoidConfirmed func(ctx context.Context, d Decision) error
	Now                   func() time.Time
	Logger                *slog.Logger
}

// Own refuses, for step, a key that is not one of the operation's records
// (NotItsRecord): another operation's record is settled by its own steps.
func (s Settler[R]) Own(step, pk string) error {
	scope, err := idem.ParsePK(pk)
	if err == nil && scope.Operation != s.Operation {
		err = fmt.Errorf("operation %q", scope.Operation)
	}
	if err != nil {
		return fmt.Errorf("%s: %w: %w", step, s.NotItsRecord, err)
	}
	return nil
}

// Live is the record pk as an operator's look reads it before asking the
// acquirer: one of the operation's, in progress (held or not), claimed for
// this deployment's acquirer. Errors: the Own refusal, idem.ErrNotFound,
// ErrCompleted, idem.ErrOtherDownstream, or the read's.
func (s Settler[R]) Live(ctx context.Context, pk string) (*idem.Record, error) {
	if err := s.Own("peek", pk); err != nil {
		return nil, err
	}
	rec, err := s.Guard.Lookup(ctx, pk)
	if err != nil {
		return nil, err
	}
	if rec.Status != idem.StatusInProgress {
		return nil, fmt.Errorf("peek %s: %w", idem.Ref(pk), ErrCompleted)
	}
	if d := rec.Protocol.Downstream; d != "" && d != s.Guard.Protocol().Downstream {
		return nil, fmt.Errorf("peek %s (claimed for %q): %w", idem.Ref(pk), d, idem.ErrOtherDownstream)
	}
	return rec, nil
}

// Settle carries out the operator's decision d on the held record d.PK,
// of the intent d.Instance, through the operation's own steps, in the
// frame of RunSettlement: whatever happens, it reads the record back and
// returns what the table says; the error is nil exactly when the decision
// took effect.
func (s Settler[R]) Settle(ctx context.Context, d Decision) (Settled[R], error) {
	if err := s.Own("settle", d.PK); err != nil {
		return Settled[R]{}, err
	}
	act := s.Accept
	if d.Action == idem.SettleVoidConfirmed {
		act = s.VoidConfirmed
	}
	return RunSettlement(ctx, d.PK, d.By, d.ID, d.Instance, d.Action, func(st *Settled[R]) *Settlement { return &st.Settlement },
		func(ctx context.Context) (Settled[R], error) { return s.readBack(ctx, d) },
		func(ctx context.Context) error { return act(ctx, d) }, s.Logger)
}

// ReadBack is what the table says of decision d's record: the record of
// the intent d.Instance while it is there; otherwise the intent's row (a
// void is refused when there is one, and an accept writes one, so a row
// means the intent completed), then its release marker. A settlement
// counts as this decision's only when both its id and its action are d's.
// It writes nothing: one to three reads.
func (s Settler[R]) ReadBack(ctx context.Context, d Decision) (Settled[R], error) {
	if err := s.Own("read back", d.PK); err != nil {
		return Settled[R]{}, err
	}
	return s.readBack(ctx, d)
}

// readBack is ReadBack of a record already checked to be the
// operation's (Settle's reads: the key is parsed once a decision).
func (s Settler[R]) readBack(ctx context.Context, d Decision) (Settled[R], error) {
	rec, err := s.Guard.Lookup(ctx, d.PK)
	switch {
	case err == nil && rec.DownstreamKey == d.Instance:
		return s.stateOf(ctx, rec, d), nil
	case err != nil && !errors.Is(err, idem.ErrNotFound):
		return Settled[R]{}, err
	}
	// Gone, or the key's next intent holds it.
	switch row, found, err := s.Row(ctx, d.Instance); {
	case err != nil:
		return Settled[R]{}, err
	case found:
		return Settled[R]{Settlement: Settlement{State: CompletedByAnother}, Row: row}, nil
	}
	st, err := ReleasedBy(ctx, s.Guard, d.Instance, d.ID, d.Action)
	return Settled[R]{Settlement: st}, err
}

// stateOf is the state of rec, the record decision d is about, with its
// row once it completed.
func (s Settler[R]) stateOf(ctx context.Context, rec *idem.Record, d Decision) Settled[R] {
	out := Settled[R]{Settlement: SettlementOf(rec, d.ID, d.Action, s.Now())}
	if out.State == CompletedByThis || out.State == CompletedByAnother {
		if row, found, err := s.Row(ctx, rec.DownstreamKey); err == nil && found {
			out.Row = row
		}
	}
	return out
}

// TakeOver takes the held record of d over for d (idem.Guard.TakeOverHeld).
// giveBack ends the lease, the record staying held (even past the
// context's deadline), and wraps err in step's name and the record's.
func (s Settler[R]) TakeOver(ctx context.Context, d Decision, step string) (lease *idem.Lease, giveBack func(error) error, err error) {
	lease, err = s.Guard.TakeOverHeld(ctx, d.PK, d.Instance, idem.Settlement{Action: d.Action, By: d.By, Decision: d.ID})
	if err != nil {
		return nil, nil, err
	}
	return lease, func(err error) error {
		_ = lease.Abandon(context.WithoutCancel(ctx))
		return fmt.Errorf("%s %s: %w", step, idem.Ref(d.PK), err)
	}, nil
}

// Changed is nil when now states what shown does (the same id, status,
// amount and currency: an action's id when it has one, else the
// authorization's), else ErrTermsChanged with both.
func (shown Terms) Changed(now Terms) error {
	if shown.id() == now.id() && shown.Status == now.Status && shown.Amount == now.Amount && shown.Currency == now.Currency {
		return nil
	}
	return fmt.Errorf("%w: shown %s %d %s (%s), now %s %d %s (%s)", ErrTermsChanged,
		shown.Status, shown.Amount, shown.Currency, shown.id(), now.Status, now.Amount, now.Currency, now.id())
}

// id is the terms' own id: the action's, or the authorization's.
func (t Terms) id() string { return cmp.Or(t.ActionID, t.AuthorizationID) }

// Stale is the reconciler's start on the record pk, the same for every
// operation: the record check (Own), then the take-over of a lease that
// ended more than the wait-out ago (idem.Guard.TakeOverStale, DESIGN §4
// rule 3). The lease is nil when the reconciler stops there: nothing to
// do (no record, or another attempt took it over), a record held for its
// operator (ReconciledHeld), or an error (the check's, which no retry
// changes, or the take-over's).
func (s Settler[R]) Stale(ctx context.Context, pk string) (*idem.Lease, Reconciled, error) {
	if err := s.Own("reconcile", pk); err != nil {
		return nil, NothingToDo, err
	}
	lease, err := s.Guard.TakeOverStale(ctx, pk)
	switch {
	case errors.Is(err, idem.ErrNotFound) || errors.Is(err, idem.ErrLeaseLost):
		return nil, NothingToDo, nil
	case errors.Is(err, idem.ErrHeld):
		return nil, ReconciledHeld, nil
	case err != nil:
		return nil, NothingToDo, err
	}
	return lease, NothingToDo, nil
}

// StoredRequest is the request the lease's record was claimed with,
// parsed by parse (the operation's own reading of its canonical form).
func StoredRequest[Req any](lease *idem.Lease, parse func(idem.Canonical) (Req, error)) (Req, error) {
	canonical, err := lease.Request()
	var req Req
	if err == nil {
		req, err = parse(canonical)
	}
	if err != nil {
		return req, fmt.Errorf("stored request: %w", err)
	}
	return req, nil
}

// Reconcile is the reconciler's path on the record pk, the same for
// every operation: the take-over of a stale lease (Settler.Stale), the
// stored request (StoredRequest; one that does not read ends the lease
// and is an error), then resolve: the operation's own reads, then
// Resolve.
func Reconcile[R, Req any](ctx context.Context, s Settler[R], pk string, parse func(idem.Canonical) (Req, error),
	resolve func(context.Context, *idem.Lease, Req) (Reconciled, error)) (Reconciled, error) {
	ctx = obs.WithAttrs(ctx, slog.String("record", idem.Ref(pk)))
	lease, stopped, err := s.Stale(ctx, pk)
	if lease == nil {
		return stopped, err
	}
	req, err := StoredRequest(lease, parse)
	if err != nil {
		_ = lease.Abandon(ctx)
		return NothingToDo, fmt.Errorf("reconcile %s: %w", idem.Ref(pk), err)
	}
	return resolve(ctx, lease, req)
}

package op

import (
	"context"

	"github.com/idempotent-payments/idempay/internal/idem"
)

// Service is what an operation's service offers the operator's channel
// and the reconciler, in its own types: R its row, A the acquirer's
// answer an operator is shown.
type Service[R, A any] interface {
	Peek(ctx context.Context, pk string) (A, error)
	Reconcile(ctx context.Context, pk string) (Reconciled, error)
	Settle(ctx context.Context, d Decision) (Settled[R], error)
	ReadBack(ctx context.Context, d Decision) (Settled[R], error)
}

// Kind is how an operation's own types read as every operation's: the
// acquirer's answer as terms, a row's terms (nil for R's zero value: no
// row), and the row of a completed record (found false without one).
type Kind[R, A any] struct {
	Name string
	// Shown says what a look's terms are (Operation.Shown).
	Shown       string
	AnswerTerms func(A) Terms
	RowTerms    func(R) *Terms
	RowOf       func(ctx context.Context, rec *idem.Record) (R, bool)
}

// Adapt is svc as an Operation, read through k: what an operation
// registers (NewRegistry).
func Adapt[R, A any](svc Service[R, A], k Kind[R, A]) Operation { return adapted[R, A]{svc, k} }

type adapted[R, A any] struct {
	svc Service[R, A]
	k   Kind[R, A]
}

func (a adapted[R, A]) Name() string { return a.k.Name }

func (a adapted[R, A]) Shown() string { return a.k.Shown }

func (a adapted[R, A]) Peek(ctx context.Context, pk string) (Terms, error) {
	answer, err := a.svc.Peek(ctx, pk)
	return a.k.AnswerTerms(answer), err
}

func (a adapted[R, A]) Reconcile(ctx context.Context, pk string) (Reconciled, error) {
	return a.svc.Reconcile(ctx, pk)
}

func (a adapted[R, A]) Settle(ctx context.Context, d Decision) (Settled[*Terms], error) {
	return a.settled(a.svc.Settle(ctx, d))
}

func (a adapted[R, A]) ReadBack(ctx context.Context, d Decision) (Settled[*Terms], error) {
	return a.settled(a.svc.ReadBack(ctx, d))
}

func (a adapted[R, A]) RowTerms(ctx context.Context, rec *idem.Record) *Terms {
	if row, found := a.k.RowOf(ctx, rec); found {
		return a.k.RowTerms(row)
	}
	return nil
}

// settled is st with its row's terms.
func (a adapted[R, A]) settled(st Settled[R], err error) (Settled[*Terms], error) {
	return Settled[*Terms]{Settlement: st.Settlement, Row: a.k.RowTerms(st.Row)}, err
}

package refund

import (
	"context"
	"fmt"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/op"
)

// ErrNotARefundRecord: Reconcile was given a key that is not a refund's
// idempotency record. Nothing was read or written.
var ErrNotARefundRecord = op.NotItsRecord("not a refund's idempotency record")

// Reconcile resolves a refund record left in flight, as
// charge.Service.Reconcile does a charge's: it takes the lease over only
// once it ended more than the wait-out ago (DESIGN §4 rule 3), re-fences
// the entry and asks the acquirer. Found, it finishes as an attempt does
// (the row, the entry, the completion); absent, it releases the entry,
// then the record: nothing can be in transit any more. A held record is
// left to its operator, and an answer that disagrees holds the record. It
// answers in op.Reconciled's terms, so one reconciler counts both. An
// error means nothing is known yet: retry later; except
// ErrNotARefundRecord, which no retry changes.
func (s *Service) Reconcile(ctx context.Context, pk string) (op.Reconciled, error) {
	return op.Reconcile(ctx, s.settler(), pk, RequestFromCanonical, s.resolve)
}

// resolve is the reconciler's path once the lease is taken over: the
// charge, then op.Resolve.
func (s *Service) resolve(ctx context.Context, lease *idem.Lease, req Request) (op.Reconciled, error) {
	pk := lease.PK()
	ch := s.charges.Get(ctx, lease.Record().Account, req.ChargeID)
	if ch.Outcome != op.Found {
		// No reservation is made without the charge's row.
		if ch.Outcome == op.NotFound {
			// Released only when the intent holds no entry and has no row:
			// the re-fence folds it, so a reservation still on its way can
			// never land (a charge's GET also says not found for an
			// unreadable row, and an entry is left to a person); a row
			// says the refund was made and its entry folded by its
			// success, and the record completes from it.
			e, err := s.balances.Refence(ctx, req.ChargeID, s.intentOf(lease), lease.Attempt())
			if err != nil || e.State != EntryReleased {
				_ = lease.Abandon(ctx)
				return op.NothingToDo, fmt.Errorf("reconcile %s: the charge is not found, and its balance has an entry for the refund (or did not answer: %v)", idem.Ref(pk), err)
			}
			a := &attempt{s: s, req: req}
			switch row, found, err := a.row(ctx, lease); {
			case err != nil:
				_ = lease.Abandon(ctx)
				return op.NothingToDo, fmt.Errorf("reconcile %s: the refund's row: %w", idem.Ref(pk), err)
			case found:
				if res := a.fromRow(ctx, lease, row, nil); !a.Stored(res) {
					return op.NothingToDo, fmt.Errorf("reconcile %s: the completion from the refund's row did not land (%s)", idem.Ref(pk), res.Outcome)
				}
				return op.ReconciledCompleted, nil
			}
			if err := lease.ReleaseReconciled(ctx); err != nil {
				return op.NothingToDo, fmt.Errorf("reconcile %s: %w", idem.Ref(pk), err)
			}
			return op.ReconciledReleased, nil
		}
		_ = lease.Abandon(ctx)
		return op.NothingToDo, fmt.Errorf("reconcile %s: the charge: %s", idem.Ref(pk), ch.Outcome)
	}
	a := &attempt{s: s, req: req, ch: ch.Charge}
	return op.Resolve[acquirer.Refund, Result](ctx, lease, a, a)
}

// Stored reports whether res is a stored answer.
func (a *attempt) Stored(res Result) bool {
	return res.Outcome == op.Executed || res.Outcome == op.Replayed
}

// Leftover: the acquirer has no refund of the intent. A row an earlier
// attempt wrote from the acquirer's answer completes the record, whatever
// the entry says (an acquirer that does not find a refund it made must
// never free the key of an intent whose row the books hold); without
// one, the intent is released. An error is a failed read of the row.
func (a *attempt) Leftover(ctx context.Context, lease *idem.Lease) (Result, bool, error) {
	row, found, err := a.row(ctx, lease)
	if err != nil || !found {
		return Result{}, false, err
	}
	return a.fromRow(ctx, lease, row, nil), true, nil
}

package refund

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/obs"
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
	ctx = obs.WithAttrs(ctx, slog.String("record", idem.Ref(pk)))
	lease, stopped, err := s.settler().Stale(ctx, pk)
	if lease == nil {
		return stopped, err
	}
	canonical, err := lease.Request()
	var req Request
	if err == nil {
		req, err = RequestFromCanonical(canonical)
	}
	if err != nil {
		_ = lease.Abandon(ctx)
		return op.NothingToDo, fmt.Errorf("reconcile %s: stored request: %w", idem.Ref(pk), err)
	}
	ch := s.charges.Get(ctx, lease.Record().Account, req.ChargeID)
	if ch.Outcome != op.Found {
		// No reservation is made without the charge's row.
		if ch.Outcome == op.NotFound {
			// Released only when the intent holds no entry: the re-fence
			// folds it, so a reservation still on its way can never land
			// (a charge's GET also says not found for an unreadable row,
			// and an entry is left to a person).
			e, err := s.balances.Refence(ctx, req.ChargeID, intentOf(lease), lease.Attempt())
			if err != nil || e.State != EntryReleased {
				_ = lease.Abandon(ctx)
				return op.NothingToDo, fmt.Errorf("reconcile %s: the charge is not found, and its balance has an entry for the refund (or did not answer: %v)", idem.Ref(pk), err)
			}
			if err := lease.ReleaseReconciled(ctx); err != nil {
				return op.NothingToDo, fmt.Errorf("reconcile %s: %w", idem.Ref(pk), err)
			}
			return op.ReconciledReleased, nil
		}
		_ = lease.Abandon(ctx)
		return op.NothingToDo, fmt.Errorf("reconcile %s: the charge: %s", idem.Ref(pk), ch.Outcome)
	}
	entry, err := s.balances.Refence(ctx, req.ChargeID, intentOf(lease), lease.Attempt())
	if err != nil {
		_ = lease.Abandon(ctx)
		return op.NothingToDo, fmt.Errorf("reconcile %s: re-fence: %w", idem.Ref(pk), err)
	}
	found, err := s.lookup(ctx, lease, ch.Charge, entry)
	switch {
	case errors.Is(err, acquirer.ErrMismatch):
		if _, held := s.hold(ctx, lease, acquirerRequest(ch.Charge, entry), err); !held {
			return op.ReconciledMismatch, fmt.Errorf("reconcile %s: the hold was not written", idem.Ref(pk))
		}
		return op.ReconciledMismatch, nil
	case err == nil:
		return s.reconciled(pk, s.finish(ctx, lease, req, ch.Charge, entry, found))
	case !errors.Is(err, acquirer.ErrNotFound):
		_ = lease.Abandon(ctx)
		return op.NothingToDo, fmt.Errorf("reconcile %s: acquirer refund lookup: %w", idem.Ref(pk), err)
	}
	if entry.State == EntrySucceeded {
		return s.reconciled(pk, s.completeFromRow(ctx, lease, ch.Charge, entry))
	}
	return s.releaseReconciled(ctx, lease, req.ChargeID)
}

// releaseReconciled releases the entry, then the record.
func (s *Service) releaseReconciled(ctx context.Context, lease *idem.Lease, chargeID string) (op.Reconciled, error) {
	if err := s.balances.Release(ctx, chargeID, intentOf(lease), lease.Attempt()); err != nil {
		_ = lease.Abandon(ctx)
		return op.NothingToDo, fmt.Errorf("reconcile %s: release the entry: %w", idem.Ref(lease.PK()), err)
	}
	if err := lease.ReleaseReconciled(ctx); err != nil {
		return op.NothingToDo, fmt.Errorf("reconcile %s: %w", idem.Ref(lease.PK()), err)
	}
	return op.ReconciledReleased, nil
}

// reconciled is what a finishing attempt's result means to the reconciler.
func (s *Service) reconciled(pk string, res Result) (op.Reconciled, error) {
	if res.Outcome != op.Executed && res.Outcome != op.Replayed {
		return op.NothingToDo, fmt.Errorf("reconcile %s: completion did not land (%s)", idem.Ref(pk), res.Outcome)
	}
	return op.ReconciledCompleted, nil
}

package charge

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

// ErrNotAChargeRecord: Reconcile was given a key that is not a charge's
// idempotency record. Nothing was read or written; retrying cannot help.
var ErrNotAChargeRecord = op.NotItsRecord("not a charge's idempotency record")

// Reconcile resolves a record left in flight: it takes over the lease (only
// if it ended more than the in-transit bound plus the clock-skew margin ago,
// the record's or the deployment's, whichever is larger: DESIGN §4 rule
// 3), asks the acquirer by downstream key, and completes with the real
// outcome or releases the key. A held record is left to its operator
// (ReconciledHeld), and an answer that disagrees with the request holds
// the record (ReconciledMismatch). An error means nothing is known yet and the record stays in
// flight: retry later; except ErrNotAChargeRecord, which no retry changes.
// A record claimed for another acquirer is an error wrapping
// idem.ErrOtherDownstream, and nothing is asked or written.
func (s *Service) Reconcile(ctx context.Context, pk string) (op.Reconciled, error) {
	ctx = obs.WithAttrs(ctx, slog.String("record", idem.Ref(pk)))
	lease, stopped, err := s.settler().Stale(ctx, pk)
	if lease == nil {
		return stopped, err
	}
	canonical, err := lease.Request()
	if err != nil {
		return op.NothingToDo, fmt.Errorf("reconcile %s: stored request: %w", idem.Ref(pk), err)
	}
	req, err := RequestFromCanonical(canonical)
	if err != nil {
		return op.NothingToDo, fmt.Errorf("reconcile %s: %w", idem.Ref(pk), err)
	}
	auth, err := s.lookup(ctx, lease, req)
	switch {
	case errors.Is(err, acquirer.ErrMismatch):
		if _, held := s.hold(ctx, lease, req, err); !held {
			return op.ReconciledMismatch, fmt.Errorf("reconcile %s: the acquirer's answer disagrees, and the hold was not written", idem.Ref(pk))
		}
		return op.ReconciledMismatch, nil
	case err == nil:
		res := s.finish(ctx, lease, req, auth)
		if res.Outcome != op.Executed && res.Outcome != op.Replayed {
			return op.NothingToDo, fmt.Errorf("reconcile %s: completion did not land", idem.Ref(pk))
		}
		return op.ReconciledCompleted, nil
	case errors.Is(err, acquirer.ErrNotFound):
		// A ledger row is written only from an authorization: if an attempt
		// wrote one and died before completing, the charge exists whatever
		// the acquirer's lookup says now, and the record completes from it.
		if row, rowErr := s.ledger.Get(ctx, ID(lease.DownstreamKey())); rowErr == nil {
			s.cfg.Logger.ErrorContext(ctx, "the acquirer does not find a charge the ledger has; completing from the ledger row")
			return s.completeFromRow(ctx, lease, pk, row)
		} else if !errors.Is(rowErr, ErrNoCharge) {
			_ = lease.Abandon(ctx)
			return op.NothingToDo, fmt.Errorf("reconcile %s: ledger: %w", idem.Ref(pk), rowErr)
		}
		if err := lease.ReleaseReconciled(ctx); err != nil {
			return op.NothingToDo, fmt.Errorf("reconcile %s: %w", idem.Ref(pk), err)
		}
		return op.ReconciledReleased, nil
	default:
		_ = lease.Abandon(ctx)
		return op.NothingToDo, fmt.Errorf("reconcile %s: acquirer lookup: %w", idem.Ref(pk), err)
	}
}

// completeFromRow completes the record with the answer of a ledger row
// already written for it.
func (s *Service) completeFromRow(ctx context.Context, lease *idem.Lease, pk string, row Charge) (op.Reconciled, error) {
	if err := lease.Complete(ctx, s.stored(row)); err != nil {
		return op.NothingToDo, fmt.Errorf("reconcile %s: %w", idem.Ref(pk), err)
	}
	return op.ReconciledCompleted, nil
}

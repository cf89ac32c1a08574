package charge

import (
	"context"
	"errors"
	"fmt"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/idem"
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
	return op.Reconcile(ctx, s.settler(), pk, RequestFromCanonical, func(ctx context.Context, lease *idem.Lease, req Request) (op.Reconciled, error) {
		return op.Resolve[acquirer.Authorization, Result](ctx, lease, &attempt{s: s, req: req}, nil)
	})
}

// Stored reports whether res is a stored answer.
func (a *attempt) Stored(res Result) bool {
	return res.Outcome == op.Executed || res.Outcome == op.Replayed
}

// Leftover: a ledger row is written only from an authorization, so if
// an attempt wrote one and died before completing, the charge exists
// whatever the acquirer's lookup says now, and the record completes from
// it.
func (a *attempt) Leftover(ctx context.Context, lease *idem.Lease) (Result, bool, error) {
	row, err := a.s.ledger.Get(ctx, ID(lease.DownstreamKey()))
	switch {
	case errors.Is(err, ErrNoCharge):
		return Result{}, false, nil
	case err != nil:
		return Result{}, false, fmt.Errorf("ledger: %w", err)
	}
	a.s.cfg.Logger.ErrorContext(ctx, "the acquirer does not find a charge the ledger has; completing from the ledger row")
	return a.s.complete(ctx, lease, row), true, nil
}

package capture

import (
	"context"

	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/refund"
)

// retrying are balances whose steps are retried when another region's
// write conflicts with them (idem.RetryConflicts), as refund's are: a
// conflicted write had no effect, and every step is conditional and finds
// its own earlier write, so a retry is a fresh try of the same condition.
type retrying struct{ Balances }

func (r retrying) Reserve(ctx context.Context, res Reservation) (e refund.Entry, err error) {
	err = idem.RetryConflicts(ctx, func() (err error) {
		e, err = r.Balances.Reserve(ctx, res)
		return err
	})
	return e, err
}

func (r retrying) Refence(ctx context.Context, chargeID string, in refund.Intent, fence int) (e refund.Entry, err error) {
	err = idem.RetryConflicts(ctx, func() (err error) {
		e, err = r.Balances.Refence(ctx, chargeID, in, fence)
		return err
	})
	return e, err
}

func (r retrying) Succeed(ctx context.Context, chargeID string, in refund.Intent, fence int, kind Kind) error {
	return idem.RetryConflicts(ctx, func() error { return r.Balances.Succeed(ctx, chargeID, in, fence, kind) })
}

func (r retrying) Release(ctx context.Context, chargeID string, in refund.Intent, fence int, kind Kind) error {
	return idem.RetryConflicts(ctx, func() error { return r.Balances.Release(ctx, chargeID, in, fence, kind) })
}

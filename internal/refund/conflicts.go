package refund

import (
	"context"

	"github.com/idempotent-payments/idempay/internal/idem"
)

// retrying are balances whose steps are retried when another region's
// write conflicts with them (idem.RetryConflicts), as every other write of
// the service is. A conflicted write had no effect, and every step is
// conditional and finds its own earlier write, so a retry is a fresh try
// of the same condition. When every try conflicts the step fails with
// idem.ErrWriteConflict: before a send, the attempt then sends nothing.
type retrying struct{ Balances }

func (r retrying) Reserve(ctx context.Context, res Reservation) (e Entry, err error) {
	err = idem.RetryConflicts(ctx, func() (err error) {
		e, err = r.Balances.Reserve(ctx, res)
		return err
	})
	return e, err
}

func (r retrying) Refence(ctx context.Context, chargeID string, in Intent, fence int) (e Entry, err error) {
	err = idem.RetryConflicts(ctx, func() (err error) {
		e, err = r.Balances.Refence(ctx, chargeID, in, fence)
		return err
	})
	return e, err
}

func (r retrying) Succeed(ctx context.Context, chargeID string, in Intent, fence int) error {
	return idem.RetryConflicts(ctx, func() error { return r.Balances.Succeed(ctx, chargeID, in, fence) })
}

func (r retrying) Release(ctx context.Context, chargeID string, in Intent, fence int) error {
	return idem.RetryConflicts(ctx, func() error { return r.Balances.Release(ctx, chargeID, in, fence) })
}

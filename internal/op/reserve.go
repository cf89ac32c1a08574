package op

import (
	"context"
	"errors"
	"time"

	"github.com/idempotent-payments/idempay/internal/idem"
)

// MaxReservationTries bounds the writes of one reservation (Reserve):
// each one after the first is issued because another action of the same
// bound ended while the last was on its way, which only actions at the
// same instant on one charge meet.
const MaxReservationTries = 4

// ErrLeaseEnded: the lease ended before a reservation's write could be
// issued (idem.Lease.Stamp made no stamp). Nothing was reserved or sent.
var ErrLeaseEnded = errors.New("op: the lease ended before the reservation could be issued")

// Reserve issues a first attempt's reservation on a bound: write, stamped
// by the lease (idem.Lease.Stamp), under a deadline at the lease's end, so
// that no try of it is issued after that end (the SDK issues none once
// its context is done) and a take-over's fold, which comes after that
// end, refuses every try still on its way. A write refused with passed
// (another action's fold passed its stamp while it was on its way) is
// issued again with a new stamp, up to MaxReservationTries writes; the
// last refusal is returned as it came. ErrLeaseEnded when the lease ended
// before a write could be issued.
func Reserve[E any](ctx context.Context, lease *idem.Lease, passed error, write func(ctx context.Context, stamp time.Time) (E, error)) (E, error) {
	var (
		e   E
		err error
	)
	for range MaxReservationTries {
		stamp, ok := lease.Stamp()
		if !ok {
			var none E
			return none, ErrLeaseEnded
		}
		e, err = reserveOnce(ctx, lease, stamp, write)
		if !errors.Is(err, passed) {
			break
		}
	}
	return e, err
}

func reserveOnce[E any](ctx context.Context, lease *idem.Lease, stamp time.Time, write func(ctx context.Context, stamp time.Time) (E, error)) (E, error) {
	writeCtx, cancel := context.WithDeadline(ctx, lease.ExpiresAt())
	defer cancel()
	return write(writeCtx, stamp)
}

package idem

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// The bounds of RetryConflicts: at most conflictAttempts tries, the first
// retry after about conflictBackoff, each later one after twice the wait
// before it, each wait jittered so two regions do not collide again. A
// write that keeps conflicting gives up after at most about 105 ms of
// waiting plus its four round trips (each of which, on a global table,
// waits for another region): far inside any lease.
const (
	conflictAttempts = 4
	conflictBackoff  = 10 * time.Millisecond
)

// RetryConflicts runs write until it returns anything but ErrWriteConflict,
// at most conflictAttempts times, waiting between tries, and never past
// ctx. A conflicted write had no effect and every write here is
// conditional, so each retry is a fresh try of the same condition: if the
// other region's write changed the item, the retry fails its condition as
// any late write does. It returns write's last error (ErrWriteConflict
// when every try conflicted: nothing was written), or ctx's error if ctx
// ended while it waited.
func RetryConflicts(ctx context.Context, write func() error) error {
	return retryConflicts(ctx, conflictAttempts, write)
}

func retryConflicts(ctx context.Context, attempts int, write func() error) error {
	wait := conflictBackoff
	for try := 1; ; try++ {
		err := write()
		if !errors.Is(err, ErrWriteConflict) || try == attempts {
			return err
		}
		t := time.NewTimer(wait/2 + rand.N(wait))
		select {
		case <-ctx.Done():
			t.Stop()
			return errors.Join(err, ctx.Err())
		case <-t.C:
		}
		wait *= 2
	}
}

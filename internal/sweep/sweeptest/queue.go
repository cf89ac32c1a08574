// Package sweeptest has a reconcile queue in memory, for the tests of
// whatever sweeps.
package sweeptest

import (
	"context"
	"sync"

	"github.com/idempotent-payments/idempay/internal/queue"
)

// Queue is a sweep.Queue in memory: it keeps the bodies sent, in order,
// and takes batches as SQS does (queue.MaxBatch). It is safe for
// concurrent use.
type Queue struct {
	mu     sync.Mutex
	bodies []string
}

// SendBatch implements sweep.Queue.
func (q *Queue) SendBatch(_ context.Context, bodies []string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.bodies = append(q.bodies, bodies...)
	return nil
}

// MaxBatch implements sweep.Queue.
func (q *Queue) MaxBatch() int { return queue.MaxBatch }

// Drain returns the bodies sent since the last Drain.
func (q *Queue) Drain() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.bodies
	q.bodies = nil
	return out
}

package eventtest

import (
	"context"
	"sync"

	"github.com/idempotent-payments/idempay/internal/event"
)

// Topic is a topic that keeps the charge ids of the events it is given.
type Topic struct {
	mu  sync.Mutex
	ids []string
	// Fail, when set (between calls), refuses every event with it.
	Fail error
}

// Publish keeps e's charge id, or returns Fail.
func (t *Topic) Publish(_ context.Context, e event.Event) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.Fail != nil {
		return t.Fail
	}
	t.ids = append(t.ids, e.Charge.ID)
	return nil
}

// Take is the charge ids published since the last Take, in order.
func (t *Topic) Take() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	ids := t.ids
	t.ids = nil
	return ids
}

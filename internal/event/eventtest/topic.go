package eventtest

import (
	"context"
	"sync"

	"github.com/idempotent-payments/idempay/internal/event"
)

// Topic is a topic that keeps the events it is given.
type Topic struct {
	mu     sync.Mutex
	events []event.Event
	// Fail, when set (between calls), refuses every event with it.
	Fail error
}

// Publish keeps e, or returns Fail.
func (t *Topic) Publish(_ context.Context, e event.Event) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.Fail != nil {
		return t.Fail
	}
	t.events = append(t.events, e)
	return nil
}

// Take is the charge ids of the events published since the last Take or
// TakeEvents, in order ("" for an event about no charge).
func (t *Topic) Take() []string {
	var ids []string
	for _, e := range t.TakeEvents() {
		id := ""
		if e.Charge != nil {
			id = e.Charge.ID
		}
		ids = append(ids, id)
	}
	return ids
}

// TakeEvents is the events published since the last Take or TakeEvents,
// in order.
func (t *Topic) TakeEvents() []event.Event {
	t.mu.Lock()
	defer t.mu.Unlock()
	events := t.events
	t.events = nil
	return events
}

package localapi

import (
	"sync"
	"time"
)

// A DurationLog keeps durations while it records: each invocation of a
// pool (Pool.Durations), each command through the event source mappings
// (Stack.Commands). The zero DurationLog does not record.
type DurationLog struct {
	mu        sync.Mutex
	recording bool
	kept      []time.Duration
}

// Record starts recording, and forgets what was kept.
func (l *DurationLog) Record() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recording, l.kept = true, nil
}

// Take returns the durations kept since Record or the last Take, and
// keeps recording.
func (l *DurationLog) Take() []time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.kept
	l.kept = nil
	return out
}

// add keeps d while recording; a nil log keeps nothing.
func (l *DurationLog) add(d time.Duration) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.recording {
		l.kept = append(l.kept, d)
	}
}

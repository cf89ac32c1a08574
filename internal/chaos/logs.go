package chaos

import (
	"bufio"
	"encoding/json"
	"io"
	"os"

	"github.com/idempotent-payments/idempay/internal/obs"
	"github.com/idempotent-payments/idempay/internal/op"
)

// seen is what the functions' log lines say they saw.
type seen struct {
	// notSent and unknown add up the acquirer calls that failed with
	// "nothing sent" and with "outcome unknown".
	notSent, unknown int
	// outcomes lists the consumer's outcomes per SQS message id, in order.
	outcomes map[string][]string
	// takenOver adds up the rows the sweepers' take-overs published, for
	// a region that stopped or for their own region's publisher.
	takenOver int
}

// readLogs reads the functions' JSON lines from offset on: the charge
// function's "request" lines, the consumer's "message" lines and the
// sweeper's "take-over" lines. Other lines (the emulator's, the runtime
// library's) are skipped. A count may be absent from a line (the request
// line leaves out zeros), so every JSON line is read, not only those
// naming a given key.
func readLogs(path string, offset int64) (seen, error) {
	s := seen{outcomes: map[string][]string{}}
	f, err := os.Open(path)
	if err != nil {
		return s, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return s, err
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		// Our own log lines, written by log/slog's JSON handler: a plain
		// decode suffices.
		var l map[string]any
		if json.Unmarshal(line, &l) != nil {
			continue
		}
		count := func(key string) int {
			n, _ := l[key].(float64)
			return int(n)
		}
		text := func(key string) string {
			t, _ := l[key].(string)
			return t
		}
		s.notSent += count(obs.KeyAcquirerNotSent)
		s.unknown += count(obs.KeyAcquirerUnknown)
		s.takenOver += count("taken_over") + count("republished")
		if id := text("messageId"); text(obs.KeyMessage) == "message" && id != "" {
			s.outcomes[id] = append(s.outcomes[id], text(obs.KeyOutcome))
		}
	}
	return s, sc.Err()
}

// onlyInFlight reports whether every receive of message id found its key
// in flight (and there was at least one).
func (s seen) onlyInFlight(id string) bool {
	outs := s.outcomes[id]
	for _, o := range outs {
		if o != op.InFlight.String() {
			return false
		}
	}
	return len(outs) > 0
}

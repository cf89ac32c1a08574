package chaos

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"

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
// library's) are skipped.
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
		if len(line) == 0 || line[0] != '{' || !bytes.Contains(line, []byte(`"acquirer_unknown"`)) && !bytes.Contains(line, []byte(`"taken_over"`)) {
			continue
		}
		// Our own log lines, written by log/slog's JSON handler: a plain
		// decode suffices.
		var l struct {
			Message     string `json:"message"`
			MessageID   string `json:"messageId"`
			Outcome     string `json:"outcome"`
			NotSent     int    `json:"acquirer_not_sent"`
			Unknown     int    `json:"acquirer_unknown"`
			TakenOver   int    `json:"taken_over"`
			Republished int    `json:"republished"`
		}
		if json.Unmarshal(line, &l) != nil {
			continue
		}
		s.notSent += l.NotSent
		s.unknown += l.Unknown
		s.takenOver += l.TakenOver + l.Republished
		if l.Message == "message" && l.MessageID != "" {
			s.outcomes[l.MessageID] = append(s.outcomes[l.MessageID], l.Outcome)
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

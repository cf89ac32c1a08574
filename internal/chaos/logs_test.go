package chaos

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/idempotent-payments/idempay/internal/obs"
	"github.com/idempotent-payments/idempay/internal/op"
)

// TestReadLogsCountsEveryLine holds the reader to the lines as the
// functions write them: a request line names only its non-zero counts,
// so one with nothing sent and no outcome unknown still counts (a CI run
// once saw 18 outages and no "nothing sent" because such lines were
// skipped).
func TestReadLogsCountsEveryLine(t *testing.T) {
	lines := []string{
		`START RequestId: 1 Version: $LATEST`,
		fmt.Sprintf(`{"time":"t","level":"INFO","%s":"%s","%s":"charge","%s":1,"%s":3.5}`,
			obs.KeyMessage, obs.MessageRequest, obs.KeyOperation, obs.KeyAcquirerNotSent, obs.KeyTotalMs),
		fmt.Sprintf(`{"time":"t","level":"INFO","%s":"%s","%s":"charge","%s":1}`,
			obs.KeyMessage, obs.MessageRequest, obs.KeyOperation, obs.KeyAcquirerUnknown),
		fmt.Sprintf(`{"time":"t","level":"INFO","%s":"message","messageId":"m1","%s":"%s","%s":2,"%s":0}`,
			obs.KeyMessage, obs.KeyOutcome, op.InFlight, obs.KeyAcquirerNotSent, obs.KeyAcquirerUnknown),
		fmt.Sprintf(`{"time":"t","level":"INFO","%s":"take-over","taken_over":2,"republished":1}`, obs.KeyMessage),
		`{"not json`,
	}
	path := filepath.Join(t.TempDir(), "logs")
	var text string
	for _, l := range lines {
		text += l + "\n"
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := readLogs(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	if s.notSent != 3 || s.unknown != 1 || s.takenOver != 3 {
		t.Errorf("notSent %d, unknown %d, takenOver %d; want 3, 1, 3", s.notSent, s.unknown, s.takenOver)
	}
	if !s.onlyInFlight("m1") {
		t.Errorf("outcomes of m1 = %v, want [in_flight]", s.outcomes["m1"])
	}
}

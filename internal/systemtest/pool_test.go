package systemtest_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/localapi"
)

// TestPoolRetriesAnEmulatorThatExitsAtStart: an emulator that exits before
// it listens (its port taken by another process between the pool's pick and
// its bind) is started again on new ports, and the pool starts.
func TestPoolRetriesAnEmulatorThatExitsAtStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	failed := filepath.Join(dir, "failed-once")
	rie := filepath.Join(dir, "rie")
	script := "#!/bin/sh\nif [ ! -e '" + failed + "' ]; then touch '" + failed + "'; exit 1; fi\nexec '" + rieBin + "' \"$@\"\n"
	if err := os.WriteFile(rie, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := localapi.StartPool(localapi.PoolConfig{
		RIE: rie, Bootstrap: filepath.Join(binDir, "charge", "bootstrap"), Name: "charge", Instances: 1, Timeout: 10 * time.Second,
		Env: []string{"TABLE_NAME=pool-retry", "ACQUIRER_URL=http://127.0.0.1:1", "ACQUIRER_ID=sandbox"},
	})
	if err != nil {
		t.Fatalf("the pool gave up after one emulator exited at start: %v", err)
	}
	defer p.Close()
	if _, err := p.Invoke(context.Background(), getEvent); err != nil {
		t.Fatalf("the restarted instance does not serve: %v", err)
	}
	if _, err := os.Stat(failed); err != nil {
		t.Fatal("the emulator never exited at start: the test proves nothing")
	}
}

// getEvent is an API Gateway event for GET /v1/charges/ch_x: an invocation
// the function answers (with an error answer) even with no table or
// acquirer behind it.
var getEvent = []byte(`{"version":"2.0","routeKey":"GET /v1/charges/{id}","rawPath":"/v1/charges/ch_x","pathParameters":{"id":"ch_x"},"requestContext":{"authorizer":{"jwt":{"claims":{"sub":"a"}}},"http":{"method":"GET"}}}`)

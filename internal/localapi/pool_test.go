package localapi

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestPoolRetriesAnEmulatorThatExitsAtStart: an emulator that exits before
// it listens (its port taken by another process between the pool's pick and
// its bind) is started again on new ports, and the pool starts. It needs
// the RIE binary (make bin/aws-lambda-rie, which make fast and make test
// build) and builds the charge function.
func TestPoolRetriesAnEmulatorThatExitsAtStart(t *testing.T) {
	t.Parallel()
	rieBin := os.Getenv("AWS_LAMBDA_RIE")
	if rieBin == "" {
		rieBin = filepath.Join("..", "..", "bin", "aws-lambda-rie")
	}
	if _, err := os.Stat(rieBin); err != nil {
		t.Fatalf("no RIE at %s (make bin/aws-lambda-rie builds it): %v", rieBin, err)
	}
	dir := t.TempDir()
	if err := BuildFunctions(context.Background(), dir, "charge"); err != nil {
		t.Fatal(err)
	}
	failed := filepath.Join(dir, "failed-once")
	rie := filepath.Join(dir, "rie")
	abs, err := filepath.Abs(rieBin)
	if err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\nif [ ! -e '" + failed + "' ]; then touch '" + failed + "'; exit 1; fi\nexec '" + abs + "' \"$@\"\n"
	if err := os.WriteFile(rie, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := StartPool(PoolConfig{
		RIE: rie, Bootstrap: filepath.Join(dir, "charge", "bootstrap"), Name: "charge", Instances: 1, Timeout: 10 * time.Second,
		Env: []string{"TABLE_NAME=pool-retry", "ACQUIRER_URL=http://127.0.0.1:1", "ACQUIRER_ID=sandbox"},
	})
	if err != nil {
		t.Fatalf("the pool gave up after one emulator exited at start: %v", err)
	}
	defer p.Close()
	// The health check: answered (503, no table behind it) without a token.
	if _, err := p.Invoke(context.Background(), []byte(`{"version":"2.0","routeKey":"GET /health","rawPath":"/health","requestContext":{"http":{"method":"GET"}}}`)); err != nil {
		t.Fatalf("the restarted instance does not serve: %v", err)
	}
	if _, err := os.Stat(failed); err != nil {
		t.Fatal("the emulator never exited at start: the test proves nothing")
	}
}

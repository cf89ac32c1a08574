package chaos

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/localapi"
	"github.com/idempotent-payments/idempay/internal/sandbox"
)

// TestChaos is the small configuration of `make chaos`, with the same
// checks. It starts a DynamoDB Local of its own and stalls it, so make test
// runs it on its own, after the other packages.
func TestChaos(t *testing.T) {
	if os.Getenv("AWS_ENDPOINT_URL_SQS") == "" && os.Getenv("AWS_ENDPOINT_URL") == "" {
		t.Fatal("AWS_ENDPOINT_URL_SQS is not set: run `make test`")
	}
	rie := os.Getenv("AWS_LAMBDA_RIE")
	if rie == "" {
		rie = filepath.Join(moduleRoot(), "bin", "aws-lambda-rie")
	}
	bin := t.TempDir()
	if err := localapi.BuildFunctions(context.Background(), bin, localapi.Functions...); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", "") // Run points this process at its own database
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB_STREAMS", "")
	sum, err := Run(context.Background(), Config{
		Intents: 120, Clients: 3, Parallel: 20, Instances: 3, SQSShare: 0.2,
		KillEvery: time.Second, StallEvery: 2 * time.Second, OutageEvery: 3 * time.Second, OutageFor: time.Second,
		Faults: sandbox.Faults{LatencyMS: 5, HangRate: 0.05, HangMS: 1500, ErrorRate: 0.05, DropRate: 0.05, Seed: 7},
		Seed:   7, Drain: 60 * time.Second, RIE: rie, BinDir: bin,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", sum.Table())
	if v := sum.Violations(); len(v) > 0 {
		t.Fatalf("violations: %v", v)
	}
	if sum.Kills < 3 || sum.Stalls == 0 || sum.Outages == 0 || sum.Drops == 0 || sum.NotSent == 0 || sum.Unknown == 0 || sum.Authorizations == 0 {
		t.Fatalf("the run injected too little to prove anything: %+v", sum)
	}
}

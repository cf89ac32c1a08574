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
// checks: authorizations with their captures, voids and expiries, and
// refunds, included. Its database stalls every 2 s, so its authorizations
// get 15 s before they lapse: with 6 s nearly all lapsed before their
// captures and voids got through. It starts a DynamoDB Local of its own and stalls it, so make test
// runs it on its own, after the other packages.
func TestChaos(t *testing.T) {
	rie, bin := functions(t)
	sum, err := Run(context.Background(), Config{
		Intents: 120, Clients: 3, Parallel: 20, Instances: 3, SQSShare: 0.2, RefundsPerCharge: 4,
		AuthorizeShare: 0.3, CapturesPerAuthorization: 3, AuthorizationWindow: 15 * time.Second,
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
	if sum.Kills < 3 || sum.Stalls == 0 || sum.Outages == 0 || sum.Drops == 0 || sum.NotSent == 0 || sum.Unknown == 0 || sum.Authorizations == 0 ||
		!exercised(sum) {
		t.Fatalf("the run injected too little to prove anything: %+v", sum)
	}
}

// TestChaosTwoRegions is the small two-region run of `make chaos
// ARGS="-regions 2 -conflicts 0.05"`: two stacks on one table, a share of
// their writes refused as another region's conflict, each intent's clients
// spread over both regions, and the second region stopped whole midway, its
// clients failing over to the first with the same keys. The same checks.
func TestChaosTwoRegions(t *testing.T) {
	rie, bin := functions(t)
	sum, err := Run(context.Background(), Config{
		Intents: 120, Clients: 2, Parallel: 20, Instances: 2, SQSShare: 0.2, RefundsPerCharge: 4,
		AuthorizeShare: 0.3, CapturesPerAuthorization: 3, AuthorizationWindow: 6 * time.Second,
		KillEvery: 2 * time.Second, StallEvery: 5 * time.Second, OutageEvery: 4 * time.Second, OutageFor: time.Second,
		Faults: sandbox.Faults{LatencyMS: 5, HangRate: 0.03, HangMS: 1500, ErrorRate: 0.03, DropRate: 0.03, Seed: 11},
		Seed:   11, Drain: 60 * time.Second, RIE: rie, BinDir: bin,
		Regions: 2, ConflictShare: 0.05, StopAfter: 0.5,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", sum.Table())
	if v := sum.Violations(); len(v) > 0 {
		t.Fatalf("violations: %v", v)
	}
	if sum.Conflicts == 0 || sum.FailedOver == 0 || sum.Authorizations == 0 || !exercised(sum) {
		t.Fatalf("the run injected too little to prove anything: %+v", sum)
	}
}

// exercised reports whether a run moved every kind of action and saw
// authorizations expire: refunds, captures and voids each made by the
// acquirer and told as events, and expiries told as charge.expired.
func exercised(sum Summary) bool {
	for _, c := range []Actions{sum.Refunds, sum.Captures, sum.Voids} {
		if c.Acquirer == 0 || c.Events == 0 {
			return false
		}
	}
	return sum.Authorized > 0 && sum.Expired > 0 && sum.ExpiredEvents == sum.Expired
}

// functions are the RIE and the functions built for a run, with this
// process's database variables cleared (Run points it at its own).
func functions(t *testing.T) (rie, bin string) {
	t.Helper()
	if os.Getenv("AWS_ENDPOINT_URL_SQS") == "" && os.Getenv("AWS_ENDPOINT_URL") == "" {
		t.Fatal("AWS_ENDPOINT_URL_SQS is not set: run `make test`")
	}
	if rie = os.Getenv("AWS_LAMBDA_RIE"); rie == "" {
		rie = filepath.Join(moduleRoot(), "bin", "aws-lambda-rie")
	}
	bin = t.TempDir()
	if err := localapi.BuildFunctions(context.Background(), bin, localapi.Functions...); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", "")
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB_STREAMS", "")
	return rie, bin
}

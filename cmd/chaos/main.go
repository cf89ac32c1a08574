// Command chaos is `make chaos`: a bounded, self-stopping storm of retried
// charges, captures, voids and refunds against the local stack with faults, kills and database stalls,
// then the checks. It prints one summary table and exits 1 on any violation.
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/idempotent-payments/idempay/internal/chaos"
	"github.com/idempotent-payments/idempay/internal/localapi"
)

func main() {
	cfg := chaos.DefaultConfig()
	flag.IntVar(&cfg.Intents, "intents", cfg.Intents, "distinct charges")
	flag.IntVar(&cfg.Clients, "clients", cfg.Clients, "concurrent clients per intent")
	flag.IntVar(&cfg.Parallel, "parallel", cfg.Parallel, "intents in flight at once")
	flag.IntVar(&cfg.Instances, "instances", cfg.Instances, "charge function instances")
	flag.Float64Var(&cfg.SQSShare, "sqs", cfg.SQSShare, "share of intents also sent as queue commands")
	flag.IntVar(&cfg.RefundsPerCharge, "refunds", cfg.RefundsPerCharge, "each charge made gets 1 to this many partial refunds (0: none)")
	flag.Float64Var(&cfg.AuthorizeShare, "authorize", cfg.AuthorizeShare, "share of intents authorized without their capture")
	flag.IntVar(&cfg.CapturesPerAuthorization, "captures", cfg.CapturesPerAuthorization, "each authorization gets 1 to this many partial captures (0: none)")
	flag.DurationVar(&cfg.AuthorizationWindow, "window", cfg.AuthorizationWindow, "authorizations lapse after this long")
	flag.DurationVar(&cfg.KillEvery, "kill-every", cfg.KillEvery, "SIGKILL the busy instances this often (0: never)")
	flag.DurationVar(&cfg.StallEvery, "stall-every", cfg.StallEvery, "stall DynamoDB for 4 s this often (0: never)")
	flag.DurationVar(&cfg.OutageEvery, "outage-every", cfg.OutageEvery, "take the acquirer down (connections refused) this often")
	flag.DurationVar(&cfg.OutageFor, "outage-for", cfg.OutageFor, "for this long (0: never)")
	flag.Float64Var(&cfg.Faults.HangRate, "hang", cfg.Faults.HangRate, "acquirer: share of requests processed past the client's timeout")
	flag.Float64Var(&cfg.Faults.ErrorRate, "errors", cfg.Faults.ErrorRate, "acquirer: share answered 500 unprocessed")
	flag.Float64Var(&cfg.Faults.DropRate, "drops", cfg.Faults.DropRate, "acquirer: share processed, then the connection dropped")
	flag.IntVar(&cfg.Faults.LatencyMS, "latency-ms", cfg.Faults.LatencyMS, "acquirer: latency of every request")
	flag.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "seed of the intents and the faults")
	flag.DurationVar(&cfg.Drain, "drain", cfg.Drain, "bound of the drain after the load")
	flag.IntVar(&cfg.Regions, "regions", cfg.Regions, "1, or 2: two stacks on one table, the second stopped midway")
	flag.Float64Var(&cfg.ConflictShare, "conflicts", cfg.ConflictShare, "share of the functions' writes refused as another region's conflict")
	flag.Float64Var(&cfg.StopAfter, "stop-after", cfg.StopAfter, "with two regions: stop the second after this share of the intents (0.5)")
	flag.Parse()
	cfg.Faults.Seed = cfg.Seed

	bin := filepath.Join("dist", "local")
	if err := localapi.BuildFunctions(context.Background(), bin, localapi.Functions...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	cfg.RIE, cfg.BinDir = cmp.Or(os.Getenv("AWS_LAMBDA_RIE"), filepath.Join("bin", "aws-lambda-rie")), bin
	sum, err := chaos.Run(context.Background(), cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(2)
	}
	fmt.Print(sum.Table())
	if v := sum.Violations(); len(v) > 0 {
		fmt.Println("VIOLATIONS:", v)
		os.Exit(1)
	}
	fmt.Println("no violations")
}

// Command idemctl is the operator's tool: it finds a record from the raw
// account and key, lists records left in flight, asks for a reconciliation
// and, when the acquirer proves nothing was charged, releases a key. It
// works against AWS and against the local emulators alike: the SDK's
// standard variables say where.
//
//	idemctl inspect   --account A --key K
//	idemctl stale     [--older-than 6s]
//	idemctl reconcile --account A --key K [--queue-url URL]
//	idemctl release   --account A --key K [--acquirer-url URL] [--yes]
//
// --table (TABLE_NAME, default idempay-local) names the table; QUEUE_URL
// and ACQUIRER_URL (with ACQUIRER_API_KEY) the queue and the acquirer.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/command"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/idem/dynamostore"
	"github.com/idempotent-payments/idempay/internal/queue"
	"github.com/idempotent-payments/idempay/internal/setup"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "idemctl:", err)
		os.Exit(1)
	}
}

const usage = "usage: idemctl inspect|stale|reconcile|release [flags] (idemctl <command> -h)"

// run is the whole command, with its world passed in for the tests.
func run(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer, getenv func(string) string) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	cmd := args[0]
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	table := fs.String("table", setup.Or(getenv("TABLE_NAME"), "idempay-local"), "the table")
	account := fs.String("account", "", "the account (the JWT's account claim)")
	key := fs.String("key", "", "the client's Idempotency-Key")
	olderThan := fs.Duration("older-than", charge.DefaultInTransitBound+charge.DefaultClockSkew, "stale/release: lease ended at least this long ago (T + skew)")
	queueURL := fs.String("queue-url", getenv("QUEUE_URL"), "reconcile: the charge-commands queue")
	acquirerURL := fs.String("acquirer-url", getenv("ACQUIRER_URL"), "release: the acquirer")
	yes := fs.Bool("yes", false, "release: do not ask for confirmation")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	awsCfg, err := setup.AWS(ctx)
	if err != nil {
		return err
	}
	ddb := dynamodb.NewFromConfig(awsCfg)
	guard := idem.NewGuard(dynamostore.New(ddb, *table), idem.Config{})
	scope := idem.Scope{Operation: charge.Operation, Account: *account, Key: *key}
	needScope := func() error {
		if err := scope.Validate(); err != nil {
			return fmt.Errorf("--account and --key: %w", err)
		}
		return nil
	}
	out := json.NewEncoder(stdout)
	out.SetIndent("", "  ")

	switch cmd {
	case "inspect":
		if err := needScope(); err != nil {
			return err
		}
		rec, err := guard.Lookup(ctx, scope.PK())
		if errors.Is(err, idem.ErrNotFound) {
			return fmt.Errorf("no live record for that account and key (record %s)", idem.Ref(scope.PK()))
		}
		if err != nil {
			return err
		}
		return out.Encode(describe(ctx, guard, rec))

	case "stale":
		index := dynamostore.NewIndex(ddb, *table)
		cutoff := time.Now().Add(-*olderThan)
		for _, shard := range dynamostore.Shards(idem.DefaultShards) {
			var cur dynamostore.Cursor
			for {
				entries, next, err := index.EndedBefore(ctx, shard, cutoff, 100, cur)
				if err != nil {
					return err
				}
				for _, e := range entries {
					fmt.Fprintf(stdout, "%s  lease ended %s ago  reconcile attempts %d  %s\n",
						idem.Ref(e.PK), time.Since(e.LeaseExpiresAt).Round(time.Second), e.ReconcileAttempts, e.PK)
				}
				if next.Done() {
					break
				}
				cur = next
			}
		}
		return nil

	case "reconcile":
		if err := needScope(); err != nil {
			return err
		}
		if *queueURL == "" {
			return errors.New("--queue-url (or QUEUE_URL) is required")
		}
		body, err := command.Reconcile(scope.PK()).Encode()
		if err != nil {
			return err
		}
		if err := queue.New(sqs.NewFromConfig(awsCfg), *queueURL).SendBatch(ctx, []string{body}); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "reconcile of record %s enqueued\n", idem.Ref(scope.PK()))
		return nil

	case "release":
		if err := needScope(); err != nil {
			return err
		}
		if *acquirerURL == "" {
			return errors.New("--acquirer-url (or ACQUIRER_URL) is required: a key is released only when the acquirer says absent")
		}
		acq, err := acquirer.NewClient(*acquirerURL, getenv("ACQUIRER_API_KEY"), nil)
		if err != nil {
			return err
		}
		return release(ctx, guard, acq, scope, *olderThan, *yes, stdin, stdout)
	}
	return errors.New(usage)
}

// release frees a stuck key, only when the acquirer has no authorization
// under the record's downstream key and the lease ended longer ago than the
// in-transit bound plus the skew (nothing can still land).
func release(ctx context.Context, guard *idem.Guard, acq *acquirer.Client, scope idem.Scope, olderThan time.Duration, yes bool, stdin io.Reader, stdout io.Writer) error {
	rec, err := guard.Lookup(ctx, scope.PK())
	if err != nil {
		return err
	}
	if rec.Status != idem.StatusInProgress {
		return fmt.Errorf("record %s is %s: nothing to release", idem.Ref(rec.PK), rec.Status)
	}
	auth, err := acq.Lookup(ctx, rec.DownstreamKey)
	switch {
	case err == nil:
		return fmt.Errorf("the acquirer has authorization %s (%s) for this record: use reconcile, never release", auth.ID, auth.Status)
	case !errors.Is(err, acquirer.ErrNotFound):
		return fmt.Errorf("the acquirer lookup failed, so nothing is proven: %w", err)
	}
	if !yes {
		fmt.Fprintf(stdout, "The acquirer has no authorization for record %s. Release the key, so the client's next retry charges anew? Type yes: ", idem.Ref(rec.PK))
		answer, _ := bufio.NewReader(stdin).ReadString('\n')
		if strings.TrimSpace(answer) != "yes" {
			return errors.New("not released")
		}
	}
	lease, err := guard.TakeOverStale(ctx, rec.PK, olderThan)
	if err != nil {
		return fmt.Errorf("the lease is live or ended less than %s ago, or another worker took it: %w", olderThan, err)
	}
	if err := lease.ReleaseReconciled(ctx); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "record %s released\n", idem.Ref(rec.PK))
	return nil
}

// view is what inspect prints.
type view struct {
	Record            string            `json:"record"`
	PK                string            `json:"pk"`
	Status            idem.Status       `json:"status"`
	Attempt           int               `json:"attempt"`
	Lease             string            `json:"lease"`
	LeaseExpiresAt    time.Time         `json:"lease_expires_at"`
	DownstreamKey     string            `json:"downstream_key"`
	CreatedAt         time.Time         `json:"created_at"`
	ExpiresAt         time.Time         `json:"expires_at"`
	StaleAt           *time.Time        `json:"stale_at,omitempty"`
	ReconcileAttempts int               `json:"reconcile_attempts"`
	Response          *response         `json:"response,omitempty"`
	Ledger            map[string]string `json:"ledger,omitempty"`
}

type response struct {
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers"`
	Body    json.RawMessage   `json:"body"`
}

func describe(ctx context.Context, guard *idem.Guard, rec *idem.Record) view {
	v := view{
		Record: idem.Ref(rec.PK), PK: rec.PK, Status: rec.Status, Attempt: rec.Attempt,
		LeaseExpiresAt: rec.LeaseExpiresAt, DownstreamKey: rec.DownstreamKey, CreatedAt: rec.CreatedAt,
		ExpiresAt: rec.ExpiresAt, ReconcileAttempts: rec.ReconcileAttempts, Lease: "live",
	}
	if !rec.StaleAt.IsZero() {
		v.StaleAt = &rec.StaleAt
	}
	if !rec.LeaseExpiresAt.After(time.Now()) {
		v.Lease = "ended " + time.Since(rec.LeaseExpiresAt).Round(time.Second).String() + " ago"
	}
	if rec.Response != nil {
		body := json.RawMessage(rec.Response.Body)
		if !json.Valid(body) {
			body, _ = json.Marshal(string(rec.Response.Body))
		}
		v.Response = &response{Status: rec.Response.StatusCode, Headers: rec.Response.Headers, Body: body}
		if item, err := guard.Item(ctx, "CHARGE#"+charge.ChargeID(rec.DownstreamKey)); err == nil {
			v.Ledger = item.Attributes
		}
	}
	return v
}

// Command idemctl is the operator's tool: it finds a record from the raw
// account and key, lists records left in flight, and reconciles or
// releases a stuck key. It works against AWS and against the local
// emulators alike: the SDK's standard variables say where.
//
//	idemctl inspect   --account A --key K
//	idemctl stale     [--older-than 6s]
//	idemctl reconcile --account A --key K [--acquirer-url URL] [--yes]
//	idemctl release   --account A --key K [--acquirer-url URL] [--yes]
//
// reconcile and release run the reconciler's own code (charge.Reconcile):
// after the person confirms, take the lease over (fenced, and only if it
// ended more than T + skew ago), ask the acquirer, then complete the record
// with the acquirer's outcome or release the key. release is that path
// with the policy "release only, or refuse": when the acquirer has the
// charge it completes the record, says so and exits non-zero; it never
// deletes a charged record.
//
// --table (TABLE_NAME, default idempay-local) names the table; ACQUIRER_URL
// with ACQUIRER_SECRET_ARN (AWS) or ACQUIRER_API_KEY (local) the acquirer;
// IN_TRANSIT_BOUND and CLOCK_SKEW are the functions' (5s and 1s).
package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/charge/dynamoledger"
	"github.com/idempotent-payments/idempay/internal/command"
	"github.com/idempotent-payments/idempay/internal/httpapi"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/idem/dynamostore"
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
	table := fs.String("table", cmp.Or(getenv(setup.EnvTableName), "idempay-local"), "the table")
	account := fs.String("account", "", "the account (the JWT's account claim)")
	key := fs.String("key", "", "the client's Idempotency-Key")
	olderThan := fs.Duration("older-than", charge.DefaultInTransitBound+charge.DefaultClockSkew, "stale: lease ended at least this long ago (T + skew)")
	acquirerURL := fs.String("acquirer-url", getenv(setup.EnvAcquirerURL), "reconcile/release: the acquirer")
	yes := fs.Bool("yes", false, "reconcile/release: do not ask for confirmation")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	awsCfg, err := setup.AWS(ctx)
	if err != nil {
		return err
	}
	ddb := dynamodb.NewFromConfig(awsCfg)
	store := dynamostore.New(ddb, *table)
	ledger := dynamoledger.New(ddb, *table)
	guard := idem.NewGuard(store, idem.Config{})
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
		return out.Encode(describe(ctx, ledger, rec))

	case "stale":
		cutoff := time.Now().Add(-*olderThan)
		for shard := range idem.Shards {
			for page, err := range idem.EndedBefore(ctx, store, shard, cutoff) {
				if err != nil {
					return err
				}
				for _, e := range page {
					fmt.Fprintf(stdout, "%s  lease ended %s ago  reconcile attempts %d  %s\n",
						idem.Ref(e.PK), time.Since(e.LeaseExpiresAt).Round(time.Second), e.ReconcileAttempts, e.PK)
				}
			}
		}
		return nil

	case "reconcile", "release":
		if err := needScope(); err != nil {
			return err
		}
		if *acquirerURL == "" {
			return errors.New("--acquirer-url (or " + setup.EnvAcquirerURL + ") is required: only the acquirer knows whether the card was charged")
		}
		flags := map[string]string{setup.EnvTableName: *table, setup.EnvAcquirerURL: *acquirerURL}
		cfg, err := setup.FromEnv(func(k string) string {
			if v, ok := flags[k]; ok {
				return v
			}
			return getenv(k)
		})
		if err != nil {
			return err
		}
		svc, err := setup.ChargeService(ctx, awsCfg, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
		if err != nil {
			return err
		}
		return reconcile(ctx, svc, guard, scope.PK(), cmd == "release", *yes, stdin, stdout)
	}
	return errors.New(usage)
}

// reconcile resolves the stuck record pk through the reconciler's path,
// after the person confirms (unless yes). releaseOnly makes any outcome but
// a release an error, after saying what happened.
func reconcile(ctx context.Context, svc *charge.Service, guard *idem.Guard, pk string, releaseOnly, yes bool, stdin io.Reader, stdout io.Writer) error {
	ref := idem.Ref(pk)
	rec, err := guard.Lookup(ctx, pk)
	if errors.Is(err, idem.ErrNotFound) {
		return fmt.Errorf("no live record %s: nothing to do", ref)
	}
	if err != nil {
		return err
	}
	if rec.Status != idem.StatusInProgress {
		return fmt.Errorf("record %s is %s: nothing to do", ref, rec.Status)
	}
	if !yes {
		// Before anything is taken or asked: what the acquirer says is read
		// only after the take-over fences out every other worker.
		fmt.Fprintf(stdout, "Record %s is in flight (attempt %d, %s). Take its lease over (only if it ended more than T + skew ago), "+
			"ask the acquirer, then store the acquirer's outcome or release the key so the client's next retry charges anew? Type yes: ",
			ref, rec.Attempt, leaseState(rec))
		answer, _ := bufio.NewReader(stdin).ReadString('\n')
		if strings.TrimSpace(answer) != "yes" {
			return errors.New("nothing done")
		}
	}
	// As long as a consumer's invocation, so the lease it takes is no longer
	// than the consumer's (the redrive arithmetic counts on that).
	ctx, cancel := context.WithTimeout(ctx, command.ConsumerTimeout)
	defer cancel()
	did, err := svc.Reconcile(ctx, pk)
	if err != nil {
		return fmt.Errorf("nothing is known yet; record %s stays in flight: %w", ref, err)
	}
	switch did {
	case charge.ReconciledReleased:
		fmt.Fprintf(stdout, "record %s released: the acquirer has no charge under it; the client's next retry charges anew\n", ref)
		return nil
	case charge.ReconciledCompleted:
		auth := "?"
		if rec, err := guard.Lookup(ctx, pk); err == nil {
			if res := svc.Get(ctx, rec.Account, charge.ChargeID(rec.DownstreamKey)); res.Outcome == charge.Found {
				auth = res.Charge.AuthorizationID + " (" + res.Charge.Status + ")"
			}
		}
		fmt.Fprintf(stdout, "record %s completed with the acquirer's outcome, authorization %s\n", ref, auth)
		if releaseOnly {
			return fmt.Errorf("not released: the acquirer has the charge, so record %s now holds it", ref)
		}
		return nil
	}
	return fmt.Errorf("nothing changed: record %s is gone or completed, or its lease is live or ended less than T + skew ago; try again later", ref)
}

func leaseState(rec *idem.Record) string {
	if rec.LeaseExpiresAt.After(time.Now()) {
		return "lease live for " + time.Until(rec.LeaseExpiresAt).Round(time.Second).String()
	}
	return "lease ended " + time.Since(rec.LeaseExpiresAt).Round(time.Second).String() + " ago"
}

// view is what inspect prints.
type view struct {
	Record            string         `json:"record"`
	PK                string         `json:"pk"`
	Status            idem.Status    `json:"status"`
	Attempt           int            `json:"attempt"`
	Lease             string         `json:"lease"`
	LeaseExpiresAt    time.Time      `json:"lease_expires_at"`
	DownstreamKey     string         `json:"downstream_key"`
	CreatedAt         time.Time      `json:"created_at"`
	ExpiresAt         time.Time      `json:"expires_at"`
	StaleAt           *time.Time     `json:"stale_at,omitempty"`
	ReconcileAttempts int            `json:"reconcile_attempts"`
	Response          *response      `json:"response,omitempty"`
	Ledger            map[string]any `json:"ledger,omitempty"`
}

type response struct {
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers"`
	Body    json.RawMessage   `json:"body"`
}

func describe(ctx context.Context, ledger charge.Ledger, rec *idem.Record) view {
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
		v.Response = &response{Status: rec.Response.StatusCode, Headers: httpapi.Headers(*rec.Response), Body: body}
		if ch, err := ledger.Get(ctx, charge.ChargeID(rec.DownstreamKey)); err == nil {
			if json.Unmarshal(httpapi.Body(ch), &v.Ledger) == nil { // our own rendering: it parses
				v.Ledger["account"] = ch.Account
			}
		}
	}
	return v
}

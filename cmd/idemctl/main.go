// Command idemctl is the operator's tool: it finds a record from the raw
// account and key, lists records left in flight and records held for an
// operator, and has a record reconciled, released or settled. It works
// against AWS and against the local stack alike: the SDK's standard
// variables say where the table is, OPERATOR_URL where the operator's
// channel is.
//
//	idemctl inspect        --account A --key K [--operation refund|capture|void]
//	idemctl stale
//	idemctl held
//	idemctl reconcile      --account A --key K [--operation refund|capture|void] [--yes]
//	idemctl release        --account A --key K [--operation refund|capture|void] [--yes]
//	idemctl void-confirmed --account A --key K [--operation refund|capture|void] [--yes] | --decision ID --intent I
//	idemctl accept         --account A --key K [--operation refund|capture|void] [--yes] | --decision ID --intent I
//	idemctl republish      --charge ID [--charge ID ...] [--refund ID ...] | --failures-queue URL [--topic ARN]
//	idemctl match          --date YYYY-MM-DD
//
// idemctl never calls the acquirer and reads no acquirer URL, id,
// credential or protocol time: every acting command goes through the
// operator's channel (internal/operator), the operator function behind a
// function URL with AWS_IAM auth, which only the operator's role may call.
// It signs each request with the shell's AWS credentials; the function
// runs the service's own path (charge.Service.Reconcile, Peek, Settle, or
// refund.Service's for a refund's record)
// with the deployment's acquirer, credential and clock, so every wait-out
// is the deployment's, and records as who decided the principal IAM
// authenticated.
//
// An acting command shows the record (read from the table), then what the
// acquirer says now (the channel's look, which writes nothing), then asks
// the person, then sends the decision under a decision id of its own. It
// prints what the table holds afterwards (released or completed by this
// decision, by another, still held) and exits 0 only when this decision
// took effect. A settlement cut off in transit is sent again with the same
// id (the channel reads back what the first call did before doing
// anything); --decision and --intent, as printed, read back what a
// settlement did, and do nothing else.
//
// match shows the lines the daily match kept for a UTC day: each movement
// without its row, row without its movement, terms that differ, and charge
// whose totals passed their bounds, with what the table and the acquirer
// held when the match found it and the row as the table holds it now. It
// reads the table only.
//
// republish publishes outcome events again, through the publisher's own
// code: from the ledger rows of the charges named and the rows of the
// refunds named, or, draining the
// publisher's failures queue, from the stream records of each batch the
// stream trigger gave up on while the stream still holds them (24 hours).
// A subscriber deduplicates by the event's id, the same on every
// publication. --topic (OUTCOME_TOPIC_ARN) is the outcome topic.
//
// --table (TABLE_NAME, default idempay-local) names the table;
// --operator-url (OPERATOR_URL) the operator's channel; --region the
// region. The SDK's own log lines (a retried call's warnings) go to stderr
// only with --debug, after idemctl's own.
package main

import (
	"bufio"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/logging"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/capture"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/deploy"
	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/operations"
	"github.com/idempotent-payments/idempay/internal/operator"
	"github.com/idempotent-payments/idempay/internal/refund"
	"github.com/idempotent-payments/idempay/internal/setup"
)

func main() {
	sh := shell{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv, now: time.Now, aws: loadAWS}
	if err := run(context.Background(), os.Args[1:], sh); err != nil {
		fmt.Fprintln(os.Stderr, "idemctl:", err)
		os.Exit(1)
	}
}

const usage = "usage: idemctl inspect|stale|held|reconcile|release|void-confirmed|accept|republish|match [flags] (idemctl <command> -h)"

// shell is the world a command runs in, passed in for the tests: the
// person's terminal, the environment, the clock (for what it shows: no
// wait-out runs on it) and the AWS configuration (credentials, region,
// endpoints).
type shell struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	now            func() time.Time
	aws            func(ctx context.Context, region string) (aws.Config, error)
}

// loadAWS is the SDK's configuration from the process's environment, in
// region when one is given.
func loadAWS(ctx context.Context, region string) (aws.Config, error) {
	cfg, err := setup.AWS(ctx)
	if region != "" {
		cfg.Region = region
	}
	return cfg, err
}

// run is the whole command.
func run(ctx context.Context, args []string, sh shell) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	cmd := args[0]
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	var f flags
	f.table = fs.String("table", cmp.Or(sh.getenv(deploy.EnvTableName), "idempay-local"), "the table")
	f.account = fs.String("account", "", "the account (the JWT's account claim)")
	f.key = fs.String("key", "", "the client's Idempotency-Key")
	f.operation = fs.String("operation", charge.Operation, "the key's operation, charge, refund, capture or void (a key string names one intent of each)")
	f.operatorURL = fs.String("operator-url", sh.getenv(deploy.EnvOperatorURL), "acting commands: the operator's channel (the stack's OperatorUrl output)")
	f.decision = fs.String("decision", "", "void-confirmed/accept: read back what the decision of this id did (as printed), and do nothing else")
	f.intent = fs.String("intent", "", "with --decision: the intent it was about (as printed)")
	f.yes = fs.Bool("yes", false, "acting commands: do not ask for confirmation")
	f.debug = fs.Bool("debug", false, "write the SDK's own log lines to stderr")
	fs.Var(&f.charges, "charge", "republish: a charge id whose event to publish again (repeatable)")
	fs.Var(&f.refunds, "refund", "republish: a refund id whose event to publish again (repeatable)")
	f.failuresQueue = fs.String("failures-queue", "", "republish: the URL of the publisher's failures queue, to drain")
	f.topicARN = fs.String("topic", sh.getenv(deploy.EnvOutcomeTopicARN), "republish: the outcome topic's ARN")
	f.date = fs.String("date", "", "match: the UTC day whose kept lines to show, YYYY-MM-DD")
	f.region = fs.String("region", "", "the region whose table replica, queues and operator's channel to use (the SDK's AWS_REGION when empty); "+
		"in the multi-region mode any region's: the table is one, strongly consistent, so every command acts the same from each")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q: every value is a flag's", fs.Args())
	}
	if !slices.Contains(operationNames(), *f.operation) {
		return fmt.Errorf("--operation %q: want one of %s", *f.operation, strings.Join(operationNames(), ", "))
	}
	awsCfg, err := sh.aws(ctx, *f.region)
	if err != nil {
		return err
	}
	awsCfg.Logger = sdkLogger(sh.stderr, *f.debug)
	table := dynamo.Open(dynamodb.NewFromConfig(awsCfg), *f.table)
	store := table.Store()
	t := tool{
		sh: sh, flags: f, aws: awsCfg, store: store, ledger: table.Ledger(), refunds: table.Refunds(), rows: table.Rows(), balances: table.Balances(), books: table.Books(),
		matchBooks: table.MatchBooks(),
		tables: tables{ledger: table.Ledger(), refunds: table.Refunds(), balances: table.Balances(), captures: table.Captures(),
			captureRows: table.CaptureRows(), voidRows: table.VoidRows()},
		guard: idem.NewGuard(store, idem.Config{Now: sh.now}),
		scope: idem.Scope{Operation: *f.operation, Account: *f.account, Key: *f.key},
		out:   json.NewEncoder(sh.stdout),
	}
	t.out.SetIndent("", "  ")
	switch cmd {
	case "inspect":
		return t.inspect(ctx)
	case "stale":
		return t.stale(ctx)
	case "held":
		return t.held(ctx)
	case "republish":
		return t.republish(ctx)
	case "match":
		return t.match(ctx)
	case "reconcile", "release", "void-confirmed", "accept":
		return t.act(ctx, cmd)
	}
	return errors.New(usage)
}

// flags are the command line's values.
type flags struct {
	table, account, key, operation, operatorURL *string
	decision, intent                            *string
	yes, debug                                  *bool
	charges, refunds                            idFlag
	failuresQueue, topicARN, region             *string
	date                                        *string
}

// sdkLogger is where the SDK's own log lines go: a retried call's warnings
// ("failed to close HTTP response body") said nothing the person needs and
// came before idemctl's own message. They go to stderr only with debug, at
// debug level.
func sdkLogger(stderr io.Writer, debug bool) logging.Logger {
	if !debug || stderr == nil {
		return logging.Nop{}
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return logging.LoggerFunc(func(c logging.Classification, format string, v ...any) {
		logger.Debug(fmt.Sprintf(format, v...), "sdk", string(c))
	})
}

// tool is what every subcommand works with: the table's record store and
// ledger (to read; idemctl writes no record), the engine on them to read
// records, the record the flags name, and stdout as indented JSON.
type tool struct {
	sh       shell
	flags    flags
	aws      aws.Config
	store    *dynamo.Store
	ledger   *dynamo.Ledger
	refunds  *dynamo.Refunds
	rows     *dynamo.Rows
	balances *dynamo.Balances
	books    *dynamo.Books
	// matchBooks are the daily match's kept results (match).
	matchBooks *dynamo.MatchBooks
	// tables are what inspect reads besides the record.
	tables tables
	guard  *idem.Guard
	scope  idem.Scope
	out    *json.Encoder
}

func (t tool) needScope() error {
	if err := t.scope.Validate(); err != nil {
		return fmt.Errorf("--account and --key: %w", err)
	}
	return nil
}

// inspect shows the record the flags name and its ledger row.
func (t tool) inspect(ctx context.Context) error {
	if err := t.needScope(); err != nil {
		return err
	}
	rec, err := t.guard.Lookup(ctx, t.scope.PK())
	if errors.Is(err, idem.ErrNotFound) {
		return fmt.Errorf("no live record for that account and key (record %s)", idem.Ref(t.scope.PK()))
	}
	if err != nil {
		return err
	}
	return t.out.Encode(describe(ctx, t.tables, rec, t.sh.now()))
}

// stale lists the records whose lease ended longer ago than the compiled
// T + skew: a listing on this machine's clock, which decides nothing (the
// reconciliation, through the channel, waits out on the deployment's).
func (t tool) stale(ctx context.Context) error {
	now := t.sh.now()
	cutoff := now.Add(-idem.Protocol{InTransitBound: idem.DefaultInTransitBound, ClockSkew: idem.DefaultClockSkew}.WaitOut(idem.Protocol{}))
	for shard := range idem.Shards {
		for page, err := range idem.ListEndedBefore(ctx, t.store, shard, cutoff) {
			if err != nil {
				return err
			}
			for _, e := range page {
				fmt.Fprintf(t.sh.stdout, "%s  lease ended %s ago  reconcile attempts %d  %s\n",
					idem.Ref(e.PK), now.Sub(e.LeaseExpiresAt).Round(time.Second), e.ReconcileAttempts, e.PK)
			}
		}
	}
	return nil
}

// held shows every record held for an operator.
func (t tool) held(ctx context.Context) error {
	for page, err := range idem.HeldRecords(ctx, t.store, t.sh.now().Add(time.Hour)) {
		if err != nil {
			return err
		}
		for _, e := range page {
			rec, err := t.guard.Lookup(ctx, e.PK)
			if err != nil {
				return err
			}
			if err := t.out.Encode(describe(ctx, t.tables, rec, t.sh.now())); err != nil {
				return err
			}
		}
	}
	return nil
}

// republish publishes events again: of the charges and refunds named, or
// of the failed batches on the publisher's failures queue.
func (t tool) republish(ctx context.Context) error {
	f := t.flags
	if (len(f.charges)+len(f.refunds) > 0) == (*f.failuresQueue != "") {
		return errors.New("republish takes --charge ID or --refund ID (each repeatable), or --failures-queue URL, one of the two")
	}
	r, err := newRepublisher(t.aws, t.sh, *f.topicARN, t.books)
	if err != nil {
		return err
	}
	if *f.failuresQueue != "" {
		return republishFailures(ctx, r, *f.failuresQueue)
	}
	return errors.Join(republishRows(ctx, t.rows, r, f.charges, "charges"), republishRows(ctx, t.rows, r, f.refunds, "refunds"))
}

// actions are the channel's actions by command.
var actions = map[string]string{
	"reconcile": operator.Reconcile, "release": operator.Release, "void-confirmed": operator.VoidConfirmed, "accept": operator.Accept,
}

// act runs an acting command on the record the flags name: show it, show
// what the acquirer says, ask, send the decision through the channel, and
// say what the table holds afterwards. With --decision it only reads back
// what that decision did (readBack).
func (t tool) act(ctx context.Context, cmd string) error {
	f := t.flags
	if err := t.needScope(); err != nil {
		return err
	}
	if *f.operatorURL == "" {
		return errors.New("--operator-url (or " + deploy.EnvOperatorURL + ") is required: the operator's channel (the stack's OperatorUrl output, or what make run prints)")
	}
	client := &operator.Client{
		URL: *f.operatorURL, Region: t.aws.Region, Credentials: t.aws.Credentials, Attempts: 3,
		// The function's own timeout bounds the work; the call waits a
		// little longer for its answer.
		Timeout: deploy.Deployed().Function(deploy.FunctionOperator).Timeout + 10*time.Second,
	}
	pk, ref := t.scope.PK(), idem.Ref(t.scope.PK())
	if *f.decision != "" {
		return t.readBack(ctx, client, cmd, pk, ref)
	}
	if *f.intent != "" {
		return errors.New("--intent goes with --decision: it names the intent a decision was about")
	}
	rec, err := t.guard.Lookup(ctx, pk)
	if errors.Is(err, idem.ErrNotFound) {
		return fmt.Errorf("no live record %s: nothing to do", ref)
	}
	if err != nil {
		return err
	}
	if err := t.out.Encode(describe(ctx, t.tables, rec, t.sh.now())); err != nil {
		return err
	}
	if err := fits(cmd, rec, ref); err != nil {
		return err
	}
	req := operator.Request{Action: actions[cmd], Record: pk, Intent: rec.DownstreamKey, Decision: newDecisionID()}
	look, err := client.Do(ctx, operator.Request{Action: operator.Look, Record: pk, Intent: req.Intent})
	if err != nil {
		return fmt.Errorf("nothing done: the look through the operator's channel: %w", err)
	}
	fmt.Fprintf(t.sh.stdout, "The acquirer says now: %s\n", lookLine(look))
	switch {
	case cmd == "void-confirmed" && (look.Outcome == operator.OutcomeLooked || look.Outcome == operator.OutcomeMismatch):
		fmt.Fprintf(t.sh.stdout, "The acquirer still reports this %s: confirm only once you have voided it there.\n", t.scope.Operation)
	case cmd == "accept" && look.Outcome != operator.OutcomeLooked:
		return fmt.Errorf("nothing done, record %s stays held: there are no terms to accept (%s)", ref, lookLine(look))
	case cmd == "accept":
		req.Terms = look.Terms
	}
	if err := confirm(t.sh, *f.yes, question(cmd, t.scope.Operation, ref, req.Terms)); err != nil {
		return err
	}
	if operator.Settling(req.Action) {
		fmt.Fprintf(t.sh.stdout, "decision %s on intent %s (to read back what it did: --decision %s --intent %s)\n", req.Decision, req.Intent, req.Decision, req.Intent)
	}
	a, err := client.Do(ctx, req)
	if err != nil && operator.Settling(req.Action) {
		return fmt.Errorf("record %s: %w; nothing is known of decision %s: read back what it did with --decision %s --intent %s", ref, err, req.Decision, req.Decision, req.Intent)
	}
	if err != nil {
		return fmt.Errorf("record %s: %w; inspect it to see what the table holds", ref, err)
	}
	return t.report(ref, a)
}

// readBack asks the channel what the settlement --decision, about the
// intent --intent, did, and does nothing else: a decision is carried out
// once, by the call that was confirmed, and a person who lost its answer
// learns it here. Without --intent it refuses: the key's record may now be
// a later intent, which a decision never settles.
func (t tool) readBack(ctx context.Context, client *operator.Client, cmd, pk, ref string) error {
	f := t.flags
	switch {
	case !operator.Settling(actions[cmd]):
		return errors.New("--decision reads back a settlement (void-confirmed, accept); reconcile and release are read with inspect")
	case *f.intent == "":
		return errors.New("--decision needs --intent, the intent the decision was about (as printed): the key's record may now be a later intent")
	}
	a, err := client.Do(ctx, operator.Request{Action: operator.ReadBack, Record: pk, Intent: *f.intent, Decision: *f.decision, Of: actions[cmd]})
	if err != nil {
		return fmt.Errorf("record %s: %w", ref, err)
	}
	return t.report(ref, a)
}

// report prints the channel's answer and fails unless this request's
// action took effect.
func (t tool) report(ref string, a operator.Answer) error {
	line := outcomeLine(a)
	if a.Settlement == nil { // a settlement names who decided; otherwise, say who asked
		line += " (asked by " + a.By + ")"
	}
	fmt.Fprintf(t.sh.stdout, "record %s: %s\n", ref, line)
	if !a.TookEffect {
		return fmt.Errorf("record %s: %s: %s", ref, a.Outcome, a.Detail)
	}
	return nil
}

// fits refuses a new decision on a record it cannot apply to, before the
// person is asked.
func fits(cmd string, rec *idem.Record, ref string) error {
	switch {
	case rec.Status == idem.StatusCompleted:
		return fmt.Errorf("record %s is completed: nothing to do", ref)
	case (cmd == "reconcile" || cmd == "release") && rec.Held():
		return fmt.Errorf("record %s is held for an operator (%s): settle it with void-confirmed or accept", ref, rec.Hold.Reason)
	case (cmd == "void-confirmed" || cmd == "accept") && !rec.Held():
		return fmt.Errorf("record %s is not held (%s): nothing to settle", ref, rec.Status)
	}
	return nil
}

func question(cmd, operation, ref string, terms *operator.Terms) string {
	switch cmd {
	case "void-confirmed":
		return fmt.Sprintf("Record %s is held. "+voidQuestions[operation], ref)
	case "accept":
		return fmt.Sprintf("Record %s is held. Complete it with the acquirer's terms: %s?", ref, termsLine(terms))
	}
	return fmt.Sprintf("Record %s is in flight. Have the deployment take its lease over (only if it ended more than T + skew ago), "+
		"ask the acquirer, then store the acquirer's outcome or release the key so the client's next retry charges anew?", ref)
}

func lookLine(a operator.Answer) string {
	if t := a.Terms; t != nil && a.Outcome == operator.OutcomeLooked {
		return termsLine(t)
	}
	return cmp.Or(a.Detail, a.Outcome)
}

// termsLine is terms as a person reads them: an authorization's, or a
// refund's (its own id first).
func termsLine(t *operator.Terms) string {
	if t.RefundID != "" {
		return fmt.Sprintf("%s %d %s, refund %s", t.Status, t.Amount, t.Currency, t.RefundID)
	}
	return fmt.Sprintf("%s %d %s, authorization %s", t.Status, t.Amount, t.Currency, t.AuthorizationID)
}

func outcomeLine(a operator.Answer) string {
	line := a.Outcome
	if t := a.Terms; t != nil {
		line += ", " + termsLine(t)
	}
	if s := a.Settlement; s != nil {
		line += fmt.Sprintf(" (decision %s: %s by %s at %s)", s.Decision, s.Action, s.By, s.At.Format(time.RFC3339))
	}
	if a.Detail != "" {
		line += ": " + a.Detail
	}
	return line
}

// confirm asks the person, unless yes.
func confirm(sh shell, yes bool, question string) error {
	if yes {
		return nil
	}
	fmt.Fprint(sh.stdout, question+" Type yes: ")
	answer, _ := bufio.NewReader(sh.stdin).ReadString('\n')
	if strings.TrimSpace(answer) != "yes" {
		return errors.New("nothing done")
	}
	return nil
}

// stderrOrDiscard is where the publisher's own log lines go, when
// republish runs its handler.
func (sh shell) stderrOrDiscard() io.Writer {
	if sh.stderr == nil {
		return io.Discard
	}
	return sh.stderr
}

// newDecisionID is a fresh id for one decision.
func newDecisionID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return "dec-" + hex.EncodeToString(b[:])
}

func leaseState(rec *idem.Record, now time.Time) string {
	switch {
	case rec.Status == idem.StatusCompleted:
		return "ended: the record is completed"
	case rec.LeaseExpiresAt.After(now):
		return "live for " + rec.LeaseExpiresAt.Sub(now).Round(time.Second).String()
	}
	return "ended " + now.Sub(rec.LeaseExpiresAt).Round(time.Second).String() + " ago"
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
	Protocol          *protocolView  `json:"protocol,omitempty"`
	Hold              *holdView      `json:"hold,omitempty"`
	CreatedAt         time.Time      `json:"created_at"`
	ExpiresAt         *time.Time     `json:"expires_at,omitempty"`
	StaleAt           *time.Time     `json:"stale_at,omitempty"`
	ReconcileAttempts int            `json:"reconcile_attempts"`
	Response          *response      `json:"response,omitempty"`
	Ledger            map[string]any `json:"ledger,omitempty"`
	// Marker is the marker at the intent's row key when it has no row:
	// "held" (a held charge: its id leads to this record) or "voided" (an
	// operator confirmed it void: no row of it is ever written).
	Marker  string       `json:"marker,omitempty"`
	Balance *balanceView `json:"balance,omitempty"`
	// BalanceError says why a captured charge's balance did not read (a
	// missing grant, the table's failure).
	BalanceError string `json:"balance_error,omitempty"`
	// RefundEntry is a refund record's entry on its charge's balance, and
	// ActionEntry a capture's or a void's.
	RefundEntry *refundEntryView `json:"refund_entry,omitempty"`
	ActionEntry *refundEntryView `json:"action_entry,omitempty"`
}

// balanceView is a charge's refund balance: what its refunds returned,
// what refunds in flight reserve, what remains, and the entry of each
// refund in flight by its refund id (an ended refund's entry is folded
// into the figures).
type balanceView struct {
	Refunded  int64 `json:"refunded"`
	Reserved  int64 `json:"reserved"`
	Remaining int64 `json:"remaining"`
	// Refunds are a captured charge's refunds in flight, by id (none are
	// omitted).
	Refunds []refundEntryView `json:"refunds,omitempty"`
	// Capture is an authorization's capture side, and Entries every
	// intent its balance holds open, refunds' and captures' alike, by the
	// intent's downstream key (the balance does not say which: inspect
	// the intent's record by its key to tell).
	Capture *captureSideView  `json:"capture,omitempty"`
	Entries []intentEntryView `json:"entries,omitempty"`
	// ReleasedThrough: every refund intent claimed by then that holds no
	// entry is released (omitted when none was).
	ReleasedThrough *time.Time `json:"released_through,omitempty"`
	// FoldedAt: the latest fold; a reservation issued by then is refused
	// (omitted when none was).
	FoldedAt *time.Time `json:"folded_at,omitempty"`
}

// captureSideView is an authorization's capture side: Capturable +
// Reserved + Captured + Released = Authorized.
type captureSideView struct {
	Authorized  int64  `json:"authorized"`
	Captured    int64  `json:"captured"`
	Capturable  int64  `json:"capturable"`
	Reserved    int64  `json:"reserved"`
	Released    int64  `json:"released"`
	Closing     string `json:"closing,omitempty"` // the downstream key of the void or final capture in flight
	ClosingKind string `json:"closing_kind,omitempty"`
	Closed      string `json:"closed,omitempty"`
}

type intentEntryView struct {
	Intent string `json:"intent"`
	State  string `json:"state"`
	Amount int64  `json:"amount"`
}

type refundEntryView struct {
	ID     string `json:"id"`
	State  string `json:"state"` // a refund.State, or "folded" for an intent that ended with a row, which says how; "released" for one that ended without
	Amount int64  `json:"amount"`
}

type protocolView struct {
	InTransitBound string `json:"in_transit_bound"`
	ClockSkew      string `json:"clock_skew"`
	Acquirer       string `json:"acquirer"`
}

// holdView is a hold with both sides: what was asked and what the
// acquirer said (the evidence), and the operator's decision once made.
type holdView struct {
	Reason     string           `json:"reason"`
	At         time.Time        `json:"at"`
	Evidence   json.RawMessage  `json:"evidence"`
	Settlement *idem.Settlement `json:"settlement,omitempty"`
}

type response struct {
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    json.RawMessage   `json:"body"`
}

// storedResponse is the answer as the record stores it: its status, the
// headers stored with it (none for answers stored without them: the HTTP
// adapter rebuilds those on a replay) and its body.
func storedResponse(r *idem.Response) *response {
	return &response{Status: r.StatusCode, Headers: r.Headers, Body: jsonOrString(r.Body)}
}

// chargeRow is what inspect shows of a charge's ledger row: every field
// the row holds, by the names the API gives them, and its account.
func chargeRow(c charge.Charge) map[string]any {
	return map[string]any{
		"id": c.ID, "account": c.Account, "status": c.Status, "amount": c.Amount, "currency": c.Currency, "order_id": c.OrderID,
		"description": c.Description, "decline_code": c.DeclineCode, "authorization_id": c.AuthorizationID, "created_at": c.CreatedAt,
	}
}

// refundRow is chargeRow for a refund's row.
func refundRow(r refund.Refund) map[string]any {
	return map[string]any{
		"id": r.ID, "account": r.Account, "charge_id": r.ChargeID, "status": r.Status, "amount": r.Amount, "currency": r.Currency,
		"decline_code": r.DeclineCode, "reason": r.Reason, "created_at": r.CreatedAt,
	}
}

func describe(ctx context.Context, tbl tables, rec *idem.Record, now time.Time) view {
	v := view{
		Record: idem.Ref(rec.PK), PK: rec.PK, Status: rec.Status, Attempt: rec.Attempt,
		LeaseExpiresAt: rec.LeaseExpiresAt, DownstreamKey: rec.DownstreamKey, CreatedAt: rec.CreatedAt,
		ReconcileAttempts: rec.ReconcileAttempts, Lease: leaseState(rec, now),
	}
	if !rec.ExpiresAt.IsZero() {
		v.ExpiresAt = &rec.ExpiresAt
	}
	if p := rec.Protocol; p != (idem.Protocol{}) {
		v.Protocol = &protocolView{InTransitBound: p.InTransitBound.String(), ClockSkew: p.ClockSkew.String(), Acquirer: p.Downstream}
	}
	if h := rec.Hold; h != nil {
		v.Hold = &holdView{Reason: h.Reason, At: h.At, Evidence: jsonOrString(h.Evidence), Settlement: h.Settlement}
	}
	if !rec.StaleAt.IsZero() {
		v.StaleAt = &rec.StaleAt
	}
	if rec.Response != nil {
		v.Response = storedResponse(rec.Response)
	}
	if d, ok := describers[rec.Operation]; ok {
		d(ctx, &v, tbl, rec)
	}
	return v
}

// tables are what inspect reads besides the record.
type tables struct {
	ledger                charge.Ledger
	refunds               refund.Ledger
	balances              refund.Balances
	captures              capture.Balances
	captureRows, voidRows capture.Ledger
}

// describers add what inspect shows of a record of each operation: its
// row (whatever the record's state: an in-flight or held record may have
// one already) or the marker at its key, and its place on a balance.
// TestEveryOperationIsDescribed holds them equal to the registered
// operations.
var describers = map[string]func(context.Context, *view, tables, *idem.Record){
	charge.Operation: describeCharge,
	refund.Operation: describeRefund,
	capture.OperationCapture: describeAction(capture.CaptureID, func(t tables) capture.Ledger { return t.captureRows }, func(c idem.Canonical) (string, error) {
		r, err := capture.RequestFromCanonical(c)
		return r.ChargeID, err
	}),
	capture.OperationVoid: describeAction(capture.VoidID, func(t tables) capture.Ledger { return t.voidRows }, func(c idem.Canonical) (string, error) {
		r, err := capture.VoidRequestFromCanonical(c)
		return r.ChargeID, err
	}),
}

// voidQuestions ask an operator to confirm a void of a held record of
// each operation, after its reference.
var voidQuestions = map[string]string{
	charge.Operation:         "You voided its charge at the acquirer: release the key, so the client's next retry charges anew?",
	refund.Operation:         "You had its refund voided at the acquirer: release its reservation and the key, so the client's next retry refunds anew?",
	capture.OperationCapture: "You had its capture voided at the acquirer (or it never happened): release its reservation and the key, so the client's next retry captures anew?",
	capture.OperationVoid:    "The acquirer released nothing for it: release its reservation and the key, so captures of the charge go on and the client's next retry voids anew?",
}

// operationNames are the operations an operator acts on: the registered
// operations' names.
func operationNames() []string {
	var names []string
	for _, r := range operations.All() {
		names = append(names, r.Name)
	}
	return names
}

// describeCharge is what inspect shows of a charge's record.
func describeCharge(ctx context.Context, v *view, t tables, rec *idem.Record) {
	ch, err := t.ledger.Get(ctx, charge.ID(rec.DownstreamKey))
	var held *charge.HeldMarkerError
	switch {
	case err == nil:
		v.Ledger = chargeRow(ch)
		v.Balance, v.BalanceError = balanceOf(ctx, t, ch)
	case errors.As(err, &held):
		v.Marker = markerHeld
	case errors.Is(err, charge.ErrVoided):
		v.Marker = markerVoided
	}
}

// The markers inspect names (view.Marker).
const (
	markerHeld   = "held"
	markerVoided = "voided"
)

// describeRefund is what inspect shows of a refund's record: its refund
// row (whatever the record's state) and its entry on the charge's
// balance.
func describeRefund(ctx context.Context, v *view, t tables, rec *idem.Record) {
	refunds, balances := t.refunds, t.balances
	id := refund.ID(rec.DownstreamKey)
	// The charge is the row's, or the stored request's while the record is
	// in flight (a completion drops the request).
	chargeID := ""
	row, err := refunds.Get(ctx, id)
	if errors.Is(err, refund.ErrVoided) {
		v.Marker = markerVoided
	}
	if err == nil {
		chargeID = row.ChargeID
		v.Ledger = refundRow(row)
	} else if canonical, err := idem.DecodeCanonical(rec.Request); err == nil {
		if req, err := refund.RequestFromCanonical(canonical); err == nil {
			chargeID = req.ChargeID
		}
	}
	if chargeID == "" {
		return // a refusal by the bound, completed: no row, nothing reserved
	}
	e, ok, err := balances.Entry(ctx, chargeID, refund.Intent{Key: rec.DownstreamKey, Claimed: rec.CreatedAt})
	v.RefundEntry = entryView(v, id, e, ok, err)
}

// entryView is what inspect shows of an intent's entry on its charge's
// balance, read as e, ok and err, the intent's row id being id: nil when
// it holds none and never did (a failed read is v's BalanceError). An
// ended intent with a row (v.Ledger) is folded: its row says how it ended.
func entryView(v *view, id string, e refund.Entry, ok bool, err error) *refundEntryView {
	switch {
	case err != nil:
		v.BalanceError = err.Error()
	case ok && e.State != refund.EntryReleased:
		return &refundEntryView{ID: id, State: string(e.State), Amount: e.Amount}
	case v.Ledger != nil:
		return &refundEntryView{ID: id, State: stateFolded}
	case ok:
		return &refundEntryView{ID: id, State: string(e.State)}
	}
	return nil
}

// describeAction is what inspect shows of a capture's or a void's record
// (its row's id by id, in rows; its stored request's charge by chargeOf):
// its row (whatever the record's state) or the voided marker, and its
// entry on the charge's balance.
func describeAction(id func(string) string, rows func(tables) capture.Ledger,
	chargeOf func(idem.Canonical) (string, error)) func(context.Context, *view, tables, *idem.Record) {
	return func(ctx context.Context, v *view, t tables, rec *idem.Record) {
		rowID := id(rec.DownstreamKey)
		row, err := rows(t).Get(ctx, rowID)
		chargeID := row.ChargeID
		switch {
		case err == nil:
			v.Ledger = map[string]any{
				"id": row.ID, "account": row.Account, "charge_id": row.ChargeID, "kind": row.Kind, "status": row.Status, "amount": row.Amount,
				"currency": row.Currency, "decline_code": row.DeclineCode, "reason": row.Reason, "created_at": row.CreatedAt,
			}
		case errors.Is(err, capture.ErrVoided):
			v.Marker = markerVoided
		}
		if chargeID == "" { // the stored request's, while the record is in flight (a completion drops it)
			canonical, err := idem.DecodeCanonical(rec.Request)
			if err == nil {
				chargeID, err = chargeOf(canonical)
			}
			if err != nil {
				return // completed without a row (the bound's refusal): nothing reserved
			}
		}
		e, ok, err := t.captures.Entry(ctx, chargeID, refund.Intent{Key: rec.DownstreamKey, Claimed: rec.CreatedAt})
		v.ActionEntry = entryView(v, rowID, e, ok, err)
	}
}

// stateFolded is what inspect shows of a refund whose entry its success
// or its release folded: its row tells how it ended. It is not a
// refund.State: the balance holds no entry for such an intent.
const stateFolded = "folded"

// balanceOf is a charge's balance as inspect shows it: a captured
// charge's refund side, an authorization's both sides and every open
// entry (nil for a declined charge), or why it did not read. A charge
// never refunded has all of its amount remaining; an authorization never
// captured, all of it capturable.
func balanceOf(ctx context.Context, t tables, ch charge.Charge) (*balanceView, string) {
	if ch.Status != acquirer.StatusCaptured && ch.Status != acquirer.StatusAuthorized {
		return nil, ""
	}
	b, err := t.balances.Get(ctx, ch.ID)
	if err != nil {
		return nil, err.Error()
	}
	v := &balanceView{Refunded: b.Refunded, Reserved: b.Reserved, Remaining: b.Remaining}
	if ch.Status == acquirer.StatusAuthorized {
		cs, err := t.captures.Get(ctx, ch.ID)
		if err != nil {
			return nil, err.Error()
		}
		v.Capture = &captureSideView{Authorized: cs.Authorized, Captured: cs.Captured, Capturable: cs.Capturable, Reserved: cs.Reserved,
			Released: cs.Released, Closing: cs.Closing, ClosingKind: string(cs.ClosingKind), Closed: string(cs.Closed)}
		if cs.Authorized == 0 { // no step opened it yet
			v.Capture.Authorized, v.Capture.Capturable = ch.Amount, ch.Amount
		}
		for _, key := range slices.Sorted(maps.Keys(b.ByKey)) {
			e := b.ByKey[key]
			v.Entries = append(v.Entries, intentEntryView{Intent: key, State: string(e.State), Amount: e.Amount})
		}
		return withWatermarks(v, b), ""
	}
	v.Refunds = []refundEntryView{}
	if b.ChargeAmount == 0 {
		v.Remaining = ch.Amount
	}
	for _, key := range slices.Sorted(maps.Keys(b.ByKey)) {
		e := b.ByKey[key]
		v.Refunds = append(v.Refunds, refundEntryView{ID: refund.ID(key), State: string(e.State), Amount: e.Amount})
	}
	return withWatermarks(v, b), ""
}

// withWatermarks is v with b's watermarks, those it has.
func withWatermarks(v *balanceView, b refund.Balance) *balanceView {
	if !b.ReleasedThrough.IsZero() {
		v.ReleasedThrough = &b.ReleasedThrough
	}
	if !b.FoldedAt.IsZero() {
		v.FoldedAt = &b.FoldedAt
	}
	return v
}

// jsonOrString is b as JSON when it is JSON, else as a JSON string.
func jsonOrString(b []byte) json.RawMessage {
	if json.Valid(b) {
		return b
	}
	s, _ := json.Marshal(string(b))
	return s
}

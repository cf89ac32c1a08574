// Command idemctl is the operator's tool: it finds a record from the raw
// account and key, lists records left in flight and records held for an
// operator, and reconciles, releases or settles one. It works against AWS
// and against the local emulators alike: the SDK's standard variables say
// where.
//
//	idemctl inspect        --account A --key K
//	idemctl stale
//	idemctl held
//	idemctl reconcile      --account A --key K [--yes]
//	idemctl release        --account A --key K [--yes]
//	idemctl void-confirmed --account A --key K --by WHO [--yes]
//	idemctl accept         --account A --key K --by WHO [--yes]
//	idemctl republish      --charge ID [--charge ID ...] | --failures-queue URL [--topic ARN]
//
// reconcile and release run the reconciler's own code (charge.Reconcile):
// after the person confirms, take the lease over (fenced, and only if it
// ended more than T + skew ago), ask the acquirer, then complete the record
// with the acquirer's outcome or release the key. release is that path
// with the policy "release only, or refuse": when the acquirer has the
// charge it completes the record, says so and exits non-zero; it never
// deletes a charged record. void-confirmed and accept settle a held record
// through charge.Service.Settle; accept first shows what the acquirer says
// now (charge.Service.Peek) and writes only if the lookup after its
// take-over says the same.
//
// republish publishes outcome events again, through the publisher's own
// code: from the ledger rows of the charges named, or, draining the
// publisher's failures queue, from the stream records of each batch the
// stream trigger gave up on while the stream still holds them (24 hours).
// A subscriber deduplicates by the event's id, the same on every
// publication. --topic (OUTCOME_TOPIC_ARN) is the outcome topic.
//
// The protocol's times are not the shell's: T and the skew are the larger
// of the record's (stored at its claim and raised by every take-over) and
// the compiled defaults (idem.Protocol.WaitOut), the acquirer timeout is
// the compiled default, and no flag or variable changes them. The acquirer is named twice, by its logical id
// (--acquirer-id, ACQUIRER_ID) and its URL (--acquirer-url, ACQUIRER_URL):
// a command refuses, writing nothing, when the id is not the one the record
// was claimed with. --table (TABLE_NAME, default idempay-local) names the
// table; ACQUIRER_SECRET_ARN (AWS) or ACQUIRER_API_KEY (local) is the
// acquirer's credential.
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
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/charge/dynamoledger"
	"github.com/idempotent-payments/idempay/internal/deploy"
	"github.com/idempotent-payments/idempay/internal/httpapi"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/idem/dynamostore"
	"github.com/idempotent-payments/idempay/internal/obs"
	"github.com/idempotent-payments/idempay/internal/setup"
)

func main() {
	sh := shell{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv, now: time.Now}
	if err := run(context.Background(), os.Args[1:], sh); err != nil {
		fmt.Fprintln(os.Stderr, "idemctl:", err)
		os.Exit(1)
	}
}

const usage = "usage: idemctl inspect|stale|held|reconcile|release|void-confirmed|accept|republish [flags] (idemctl <command> -h)"

// shell is the world a command runs in, passed in for the tests: the
// person's terminal, the environment and the clock. The service's own log
// lines (JSON, as the functions write them: the decisions with who made
// them) go to stderr.
type shell struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	now            func() time.Time
}

// protocol is what idemctl runs under: the compiled defaults, which the
// CDK app deploys (a test holds them equal); a record's larger values win.
func protocol(acquirerID string) idem.Protocol {
	return idem.Protocol{InTransitBound: idem.DefaultInTransitBound, ClockSkew: idem.DefaultClockSkew, Downstream: acquirerID}
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
	f.acquirerURL = fs.String("acquirer-url", sh.getenv(deploy.EnvAcquirerURL), "reconcile/release/accept: the acquirer's URL")
	f.acquirerID = fs.String("acquirer-id", sh.getenv(deploy.EnvAcquirerID), "every acting command: the acquirer's logical id, which must be the record's")
	f.by = fs.String("by", "", "void-confirmed/accept: who decides (recorded)")
	f.yes = fs.Bool("yes", false, "acting commands: do not ask for confirmation")
	fs.Var(&f.charges, "charge", "republish: a charge id whose event to publish again (repeatable)")
	f.failuresQueue = fs.String("failures-queue", "", "republish: the URL of the publisher's failures queue, to drain")
	f.topicARN = fs.String("topic", sh.getenv(deploy.EnvOutcomeTopicARN), "republish: the outcome topic's ARN")
	f.region = fs.String("region", "", "the region whose table replica and queues to use (the SDK's AWS_REGION when empty); "+
		"in the multi-region mode any region's: the table is one, strongly consistent, so every command acts the same from each")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q: every value is a flag's", fs.Args())
	}
	awsCfg, err := awsConfig(ctx, *f.region)
	if err != nil {
		return err
	}
	ddb := dynamodb.NewFromConfig(awsCfg)
	store := dynamostore.New(ddb, *f.table)
	t := tool{
		sh: sh, flags: f, store: store, ledger: dynamoledger.New(ddb, *f.table), books: dynamoledger.NewPublication(ddb, *f.table),
		guard: idem.NewGuard(store, idem.Config{Now: sh.now, Protocol: protocol(*f.acquirerID)}),
		scope: idem.Scope{Operation: charge.Operation, Account: *f.account, Key: *f.key},
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
	case "reconcile", "release", "void-confirmed", "accept":
		return t.act(ctx, cmd)
	}
	return errors.New(usage)
}

// flags are the command line's values.
type flags struct {
	table, account, key, acquirerURL, acquirerID, by *string
	yes                                              *bool
	charges                                          chargeIDs
	failuresQueue, topicARN, region                  *string
}

// awsConfig is the SDK's configuration from the shell, in region when one
// is given.
func awsConfig(ctx context.Context, region string) (aws.Config, error) {
	cfg, err := setup.AWS(ctx)
	if region != "" {
		cfg.Region = region
	}
	return cfg, err
}

// tool is what every subcommand works with: the table's record store and
// ledger, the engine on them, the record the flags name, and stdout as
// indented JSON.
type tool struct {
	sh     shell
	flags  flags
	store  *dynamostore.Store
	ledger *dynamoledger.Ledger
	books  *dynamoledger.Publication
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
	return t.out.Encode(describe(ctx, t.ledger, rec, t.sh.now()))
}

// stale lists the records whose lease ended longer ago than the wait-out.
func (t tool) stale(ctx context.Context) error {
	now := t.sh.now()
	cutoff := now.Add(-protocol("").WaitOut(idem.Protocol{}))
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
			if err := t.out.Encode(describe(ctx, t.ledger, rec, t.sh.now())); err != nil {
				return err
			}
		}
	}
	return nil
}

// republish publishes events again: of the charges named, or of the
// failed batches on the publisher's failures queue.
func (t tool) republish(ctx context.Context) error {
	f := t.flags
	if (len(f.charges) > 0) == (*f.failuresQueue != "") {
		return errors.New("republish takes --charge ID (repeatable) or --failures-queue URL, one of the two")
	}
	r, err := newRepublisher(ctx, t.sh, *f.region, *f.topicARN, t.books)
	if err != nil {
		return err
	}
	if *f.failuresQueue != "" {
		return republishFailures(ctx, r, *f.failuresQueue)
	}
	return republishCharges(ctx, t.ledger, r, f.charges)
}

// act runs an acting command (reconcile, release, void-confirmed, accept)
// on the record the flags name, once the flags it needs are there.
func (t tool) act(ctx context.Context, cmd string) error {
	f := t.flags
	if err := t.needScope(); err != nil {
		return err
	}
	if *f.acquirerID == "" {
		return errors.New("--acquirer-id (or " + deploy.EnvAcquirerID + ") is required: a record is resolved only by a tool configured for the acquirer it was claimed with")
	}
	if *f.acquirerURL == "" && cmd != "void-confirmed" {
		return errors.New("--acquirer-url (or " + deploy.EnvAcquirerURL + ") is required: only the acquirer knows whether the card was charged")
	}
	if (cmd == "void-confirmed" || cmd == "accept") && !validBy(*f.by) {
		return errors.New("--by is required: 1 to 128 visible characters naming who decides (it is recorded)")
	}
	svc, err := service(ctx, t.sh, *f.region, *f.table, *f.acquirerURL, *f.acquirerID, t.guard)
	if err != nil {
		return err
	}
	op := operator{svc: svc, guard: t.guard, sh: t.sh, pk: t.scope.PK(), yes: *f.yes}
	switch cmd {
	case "void-confirmed", "accept":
		return op.settle(ctx, cmd, *f.by)
	}
	return op.reconcile(ctx, cmd == "release")
}

// service is the charge service an operator's command runs, built as the
// functions build theirs, but with the protocol's times compiled in: the
// shell gives only where things are (the table, the acquirer) and the
// acquirer's credential.
func service(ctx context.Context, sh shell, region, table, acquirerURL, acquirerID string, guard *idem.Guard) (*charge.Service, error) {
	if acquirerURL == "" {
		acquirerURL = "http://acquirer.invalid" // void-confirmed asks the acquirer nothing
	}
	awsCfg, err := awsConfig(ctx, region)
	if err != nil {
		return nil, err
	}
	cfg := setup.Config{
		TableName: table, AcquirerURL: acquirerURL, AcquirerID: acquirerID,
		AcquirerAPIKey: sh.getenv(deploy.EnvAcquirerAPIKey), AcquirerSecret: sh.getenv(deploy.EnvAcquirerSecret),
		AcquirerTimeout: charge.DefaultAcquirerTimeout, MaxAmount: charge.DefaultMaxAmount,
	}
	return setup.ChargeServiceWith(ctx, awsCfg, cfg, guard, obs.NewLogger(sh.stderrOrDiscard(), "INFO"), sh.now)
}

// stderrOrDiscard is where the service's log lines go.
func (sh shell) stderrOrDiscard() io.Writer {
	if sh.stderr == nil {
		return io.Discard
	}
	return sh.stderr
}

func validBy(by string) bool {
	if by == "" || len(by) > 128 {
		return false
	}
	for _, c := range by {
		if c <= ' ' || c > '~' {
			return false
		}
	}
	return true
}

// operator is one acting command on the record pk.
type operator struct {
	svc   *charge.Service
	guard *idem.Guard
	sh    shell
	pk    string
	yes   bool
}

// confirm asks the person, unless yes, before anything is taken: what the
// acquirer says is acted on only after the take-over fences out every
// other worker (accept shows an answer first, and writes only if the one
// after its take-over is the same).
func (o operator) confirm(question string) error {
	if o.yes {
		return nil
	}
	fmt.Fprint(o.sh.stdout, question+" Type yes: ")
	answer, _ := bufio.NewReader(o.sh.stdin).ReadString('\n')
	if strings.TrimSpace(answer) != "yes" {
		return errors.New("nothing done")
	}
	return nil
}

func (o operator) record(ctx context.Context) (*idem.Record, error) {
	rec, err := o.guard.Lookup(ctx, o.pk)
	if errors.Is(err, idem.ErrNotFound) {
		return nil, fmt.Errorf("no live record %s: nothing to do", idem.Ref(o.pk))
	}
	return rec, err
}

// reconcile resolves the stuck record through the reconciler's path.
// releaseOnly makes any outcome but a release an error, after saying what
// happened.
func (o operator) reconcile(ctx context.Context, releaseOnly bool) error {
	ref := idem.Ref(o.pk)
	rec, err := o.record(ctx)
	if err != nil {
		return err
	}
	switch {
	case rec.Held():
		return fmt.Errorf("record %s is held for an operator (%s): settle it with void-confirmed or accept", ref, rec.Hold.Reason)
	case rec.Status != idem.StatusInProgress:
		return fmt.Errorf("record %s is %s: nothing to do", ref, rec.Status)
	}
	if err := o.confirm(fmt.Sprintf("Record %s is in flight (attempt %d, %s). Take its lease over (only if it ended more than T + skew ago), "+
		"ask the acquirer, then store the acquirer's outcome or release the key so the client's next retry charges anew?",
		ref, rec.Attempt, leaseState(rec, o.sh.now()))); err != nil {
		return err
	}
	// As long as a consumer's invocation, so the lease it takes is no longer
	// than the consumer's (the redrive arithmetic counts on that).
	ctx, cancel := context.WithTimeout(ctx, deploy.Deployed().Function(deploy.FunctionConsumer).Timeout)
	defer cancel()
	did, err := o.svc.Reconcile(ctx, o.pk)
	if did == charge.ReconciledMismatch && err != nil {
		return fmt.Errorf("record %s: the acquirer's answer disagrees with the request, and holding the record failed; it stays in flight: %w", ref, err)
	}
	if errors.Is(err, idem.ErrOtherDownstream) {
		return fmt.Errorf("refused, nothing written: %w", err)
	}
	if err != nil {
		return fmt.Errorf("nothing is known yet; record %s stays in flight: %w", ref, err)
	}
	switch did {
	case charge.ReconciledReleased:
		fmt.Fprintf(o.sh.stdout, "record %s released: the acquirer has no charge under it; the client's next retry charges anew\n", ref)
		return nil
	case charge.ReconciledCompleted:
		auth := "?"
		if rec, err := o.guard.Lookup(ctx, o.pk); err == nil {
			if res := o.svc.Get(ctx, rec.Account, charge.ChargeID(rec.DownstreamKey)); res.Outcome == charge.Found {
				auth = res.Charge.AuthorizationID + " (" + res.Charge.Status + ")"
			}
		}
		fmt.Fprintf(o.sh.stdout, "record %s completed with the acquirer's outcome, authorization %s\n", ref, auth)
		if releaseOnly {
			return fmt.Errorf("not released: the acquirer has the charge, so record %s now holds it", ref)
		}
		return nil
	case charge.ReconciledMismatch:
		return fmt.Errorf("record %s is now held for an operator: the acquirer's answer disagrees with the request (idemctl held shows both sides)", ref)
	case charge.ReconciledHeld:
		return fmt.Errorf("record %s was held for an operator meanwhile: settle it with void-confirmed or accept", ref)
	}
	return fmt.Errorf("nothing changed: record %s is gone or completed, or its lease is live or ended less than T + skew ago; try again later", ref)
}

// settle carries out an operator's decision on a held record.
func (o operator) settle(ctx context.Context, cmd, by string) error {
	ref := idem.Ref(o.pk)
	rec, err := o.record(ctx)
	if err != nil {
		return err
	}
	if !rec.Held() {
		return fmt.Errorf("record %s is not held (%s): nothing to settle", ref, rec.Status)
	}
	d := charge.Decision{PK: o.pk, Instance: rec.DownstreamKey, Action: idem.SettleVoidConfirmed, By: by, ID: "dec-" + newDecisionID()}
	question := fmt.Sprintf("Record %s is held (%s). You voided its charge at the acquirer: release the key, so the client's next retry charges anew, as %s?", ref, rec.Hold.Reason, by)
	if cmd == "accept" {
		// What the acquirer says now, asked without taking anything over:
		// the person accepts these terms, and the accept writes only if
		// the lookup after its take-over states the same.
		terms, err := o.svc.Peek(ctx, o.pk)
		if err != nil {
			return fmt.Errorf("nothing done, record %s stays held: %w", ref, err)
		}
		d.Action, d.Terms = idem.SettleAccept, terms
		question = fmt.Sprintf("Record %s is held (%s). The acquirer now says: %s %d %s, authorization %s. Complete the record with these terms, as %s?",
			ref, rec.Hold.Reason, terms.Status, terms.Amount, terms.Currency, terms.ID, by)
	}
	if err := o.confirm(question); err != nil {
		return err
	}
	// As long as a consumer's invocation, from the person's yes.
	ctx, cancel := context.WithTimeout(ctx, deploy.Deployed().Function(deploy.FunctionConsumer).Timeout)
	defer cancel()
	st, err := o.svc.Settle(ctx, d)
	if err != nil {
		return fmt.Errorf("refused, record %s is %s: %w", ref, st.State, err)
	}
	ch := st.Charge
	action := d.Action
	if action == idem.SettleVoidConfirmed {
		fmt.Fprintf(o.sh.stdout, "record %s released on %s's word that the charge was voided; the client's next retry charges anew\n", ref, by)
		return nil
	}
	fmt.Fprintf(o.sh.stdout, "record %s completed with the acquirer's terms: %s %d %s, authorization %s (decided by %s)\n",
		ref, ch.Status, ch.Amount, ch.Currency, ch.AuthorizationID, by)
	return nil
}

// newDecisionID is a fresh random id for one decision.
func newDecisionID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b[:])
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
	Headers map[string]string `json:"headers"`
	Body    json.RawMessage   `json:"body"`
}

func describe(ctx context.Context, ledger charge.Ledger, rec *idem.Record, now time.Time) view {
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
		v.Response = &response{Status: rec.Response.StatusCode, Headers: httpapi.Headers(*rec.Response), Body: jsonOrString(rec.Response.Body)}
	}
	// The ledger row, whatever the record's state: an in-flight or held
	// record may have one already.
	if ch, err := ledger.Get(ctx, charge.ChargeID(rec.DownstreamKey)); err == nil {
		if json.Unmarshal(httpapi.Body(ch), &v.Ledger) == nil { // our own rendering: it parses
			v.Ledger["account"] = ch.Account
		}
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

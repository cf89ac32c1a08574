// Package chaos runs a bounded storm of retried charges, some authorized
// without their capture, and of the partial captures, voids and partial
// refunds raced on them, against the local stack while it injects faults,
// kills function instances, stalls the database and lets authorizations
// lapse, then checks the promise: at most one authorization, capture,
// void and refund per intent, never more captured than authorized nor
// refunded than captured, no capture after a void or an expiry, the same
// answer every time, nothing lost, nothing left in flight or reserved.
package chaos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/command"
	"github.com/idempotent-payments/idempay/internal/deploy"
	"github.com/idempotent-payments/idempay/internal/dynamo/conflictproxy"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/localapi"
	"github.com/idempotent-payments/idempay/internal/route"
	"github.com/idempotent-payments/idempay/internal/sandbox"
)

// Config is one chaos run. Zero fields take the defaults of DefaultConfig.
type Config struct {
	Intents   int     // distinct charges
	Clients   int     // concurrent clients per intent, each following the retry rule
	Parallel  int     // intents in flight at once
	Instances int     // charge function instances
	SQSShare  float64 // share of intents (charges and their actions) also sent as a queue command
	// RefundsPerCharge: each charge made gets 1 to RefundsPerCharge
	// partial refunds, at once, each raced by Clients clients under its
	// key; 0 refunds nothing. The sandbox's own bound is off.
	RefundsPerCharge int
	// AuthorizeShare of the intents are authorized without their capture
	// ("capture": false); each authorization gets 1 to
	// CapturesPerAuthorization partial captures (0: none), sometimes a
	// final one, sometimes a void, and sometimes a late capture, raced
	// with its refunds (newActions). Authorizations lapse after
	// AuthorizationWindow (the sandbox's), so that the sweeper expires
	// those left open during the run. The sandbox's own capture bound is
	// off.
	AuthorizeShare           float64
	CapturesPerAuthorization int
	AuthorizationWindow      time.Duration
	// KillEvery and StallEvery space the SIGKILLs of busy instances and the
	// 4-second stalls of DynamoDB (which push invocations past their 3 s
	// Lambda timeout); 0 disables.
	KillEvery, StallEvery time.Duration
	// OutageEvery spaces the acquirer-down phases, OutageFor is how long
	// each lasts: the sandbox's listener is closed, so connections are
	// refused and nothing is sent; 0 disables.
	OutageEvery, OutageFor time.Duration
	Faults                 sandbox.Faults
	Seed                   uint64
	// Drain bounds the wait, after the load, for nothing to be in flight.
	Drain time.Duration
	// RIE and BinDir: the emulator binary and the built functions.
	RIE, BinDir string
	// Output receives the functions' logs, which the checks read back: a
	// regular file (a temporary one when nil).
	Output *os.File
	// Regions is 1, or 2: two regions as two stacks, each with its own
	// gateway, functions, queues and sweeper, sharing one table (what a
	// strongly consistent global table gives) and one acquirer. Each
	// region's functions write through a proxy that refuses ConflictShare
	// of their writes with ReplicatedWriteConflictException. Each intent's
	// clients spread over both regions; once StopAfter of the intents have
	// been sent, the second region is stopped whole (gateway, functions,
	// sweeper) and its clients and producers fail over to the first with
	// the same keys.
	Regions       int
	ConflictShare float64
	StopAfter     float64
}

// DefaultConfig is `make chaos` without flags: about 3 minutes here.
func DefaultConfig() Config {
	return Config{
		Intents: 2000, Clients: 3, Parallel: 40, Instances: 3, SQSShare: 0.2, RefundsPerCharge: 4,
		AuthorizeShare: 0.3, CapturesPerAuthorization: 3, AuthorizationWindow: 6 * time.Second,
		KillEvery: 4 * time.Second, StallEvery: 30 * time.Second, OutageEvery: 20 * time.Second, OutageFor: 2 * time.Second,
		Faults: sandbox.Faults{LatencyMS: 5, HangRate: 0.02, HangMS: 1500, ErrorRate: 0.02, DropRate: 0.02, Seed: 1},
		Seed:   1, Drain: 90 * time.Second,
	}
}

// Summary is what a run did and found.
type Summary struct {
	Intents, Clients, Requests, ViaSQS     int
	Hangs, Errors500, Drops, Kills, Stalls int
	Outages                                int
	// Resent counts dropped requests sent again at once with the same key
	// (a transport's resend): drops that never reached the functions.
	Resent int
	// NotSent and Unknown count the acquirer calls the functions saw fail
	// with "nothing sent" and with "outcome unknown" (their log lines).
	NotSent, Unknown                 int
	Authorizations                   int
	Duplicates, Lost, Divergent      int
	Unanswered, Mismatched, InFlight int
	DeadLetters, DeadLettersNoReason int
	// DeadLettersInFlight counts dead letters of commands that every
	// receive found in flight: intents that did nothing wrong.
	DeadLettersInFlight int
	// Events counts the distinct captured, authorized and declined events
	// delivered, Rejections the distinct rejected ones. EventsMissing
	// counts ledger rows without their event, EventsExtra charges with
	// more than one distinct outcome event or with one but no ledger row,
	// EventsMisrouted outcome events, of a charge or an action, on another
	// subscriber's queue than their row's source's.
	Events, Rejections                          int
	EventsMissing, EventsExtra, EventsMisrouted int
	// EventDeliveries counts the charges' outcome messages received,
	// repeats included: at least once, and once per event in the normal
	// case. TakenOver counts the rows the regions' sweepers published for
	// a region that had stopped (backstop.Publisher).
	EventDeliveries, TakenOver int
	// Refunds, Captures and Voids are each kind of action's counts.
	Refunds, Captures, Voids Actions
	// Authorized counts the charges made without their capture, Expired
	// those the sweeper closed at the end of their window; ExpiredEvents
	// the distinct charge.expired events delivered, ExpiredEventsMissing
	// the expired ones without theirs, ExpiredEventsExtra charges with
	// more than one, or with one but not expired.
	Authorized, Expired                                     int
	ExpiredEvents, ExpiredEventsMissing, ExpiredEventsExtra int
	// Per charge: RefundsOverCapture counts those the acquirer refunded
	// beyond what it captured (a charge captured at creation: its amount),
	// CapturesOverAuthorization those it captured beyond the
	// authorization, CapturesAfterClose its captures after the
	// authorization closed (after a void or a final capture, or asked
	// under a record claimed after its window); CapturedDiffers and
	// RefundedDiffers those whose balance (amount_captured,
	// amount_refunded) is not the acquirer's total, ReservationsLeft those
	// still reserving, OpenAfterExpiry authorizations still open after
	// their window passed and the sweeper had time to close them.
	RefundsOverCapture, CapturesOverAuthorization, CapturesAfterClose   int
	CapturedDiffers, RefundedDiffers, ReservationsLeft, OpenAfterExpiry int
	// EventBodiesDiffer counts deliveries of an event id with another body
	// than its first: every telling of one event must be the same.
	EventBodiesDiffer int
	// MatchMovements and MatchRows are what the daily match read of the
	// run's days, once the drain ended; Unmatched the lines it kept:
	// movements without their row, rows without their movement, terms
	// that differ, charges beyond their bounds.
	MatchMovements, MatchRows, Unmatched int
	Drain, Total                         time.Duration
	// Regions is how many regions ran; Conflicts the writes their proxies
	// refused, of ConflictShare asked for; StoppedAfter the intents sent
	// when the second region was stopped, FailedOver the requests then sent
	// to the first one instead.
	Regions, Conflicts, StoppedAfter, FailedOver int
	ConflictShare                                float64
}

// Actions are what a run did and found of one kind of action.
type Actions struct {
	// Intents counts the actions asked, Acquirer those the acquirer made
	// or declined. WithoutRecord counts acquirer actions under a key no
	// intent's record of the kind names (a second action of one intent);
	// Mismatched 201 answers that are not the acquirer's action.
	Intents, Acquirer, WithoutRecord, Mismatched int
	// Events counts the distinct succeeded and declined events,
	// Rejections the stored refusals of queued actions (the bound's, or
	// the charge's state's) told as rejected events, EventsMissing rows without their event, EventsExtra actions
	// with more than one or without a row.
	Events, Rejections, EventsMissing, EventsExtra int
}

// counts are s's counts of kind k.
func (s *Summary) counts(k *kind) *Actions {
	switch k {
	case captures:
		return &s.Captures
	case voids:
		return &s.Voids
	}
	return &s.Refunds
}

// Violations lists every broken promise; empty means the run passed.
func (s Summary) Violations() []string {
	var v []string
	for name, n := range map[string]int{
		"duplicate authorizations": s.Duplicates, "lost charges": s.Lost, "divergent answers": s.Divergent,
		"unanswered clients": s.Unanswered, "answers not matching the record": s.Mismatched,
		"records left in flight": s.InFlight, "dead letters without a reason": s.DeadLettersNoReason,
		"dead letters of commands only ever in flight":                     s.DeadLettersInFlight,
		"dropped requests resent before the functions saw them":            s.Resent,
		"ledger rows without their outcome event":                          s.EventsMissing,
		"outcome events more than one per charge, or without a ledger row": s.EventsExtra,
		"outcome events to another subscriber":                             s.EventsMisrouted,
		"charges refunded beyond what was captured":                        s.RefundsOverCapture,
		"authorizations captured beyond their amount":                      s.CapturesOverAuthorization,
		"captures after a void, a final capture or the window":             s.CapturesAfterClose,
		"charges whose amount_captured is not the acquirer's":              s.CapturedDiffers,
		"charges whose amount_refunded is not the acquirer's":              s.RefundedDiffers,
		"reservations left after the drain":                                s.ReservationsLeft,
		"authorizations left open past their window":                       s.OpenAfterExpiry,
		"events delivered under one id with two bodies":                    s.EventBodiesDiffer,
		"expired authorizations without their charge.expired event":        s.ExpiredEventsMissing,
		"charge.expired events more than one per charge, or not expired":   s.ExpiredEventsExtra,
		"lines the daily match found unmatched":                            s.Unmatched,
	} {
		if n > 0 {
			v = append(v, fmt.Sprintf("%d %s", n, name))
		}
	}
	for _, k := range kinds {
		c := s.counts(k)
		for what, n := range map[string]int{
			"acquirer %ss without their intent's record":          c.WithoutRecord,
			"%s answers that are not the acquirer's":              c.Mismatched,
			"%s rows without their outcome event":                 c.EventsMissing,
			"%s events more than one per %[1]s, or without a row": c.EventsExtra,
		} {
			if n > 0 {
				v = append(v, fmt.Sprintf("%d %s", n, fmt.Sprintf(what, k.name)))
			}
		}
	}
	// The run exercised what it claims: refused connections reached the
	// functions as "nothing sent", and drops as "outcome unknown" (none
	// resent, above; and the functions saw at least half as many outcomes
	// unknown: an instance killed mid-call logs nothing).
	if s.Outages > 0 && s.NotSent == 0 {
		v = append(v, fmt.Sprintf("%d acquirer outages, but no function saw nothing sent", s.Outages))
	}
	if s.ConflictShare > 0 && s.Conflicts == 0 {
		v = append(v, fmt.Sprintf("a share of %.2f of the writes was to conflict, but none did: the functions bypassed the proxy", s.ConflictShare))
	}
	if s.Regions > 1 && (s.StoppedAfter == 0 || s.FailedOver == 0) {
		v = append(v, fmt.Sprintf("two regions, but the second was stopped after %d intents and %d requests failed over", s.StoppedAfter, s.FailedOver))
	}
	if s.MatchMovements == 0 || s.MatchRows == 0 {
		v = append(v, fmt.Sprintf("the daily match read %d movements and %d rows: it matched nothing", s.MatchMovements, s.MatchRows))
	}
	if s.Unknown < (s.Drops+1)/2 {
		v = append(v, fmt.Sprintf("%d drops injected, but the functions saw %d outcomes unknown", s.Drops, s.Unknown))
	}
	return v
}

// Table renders the summary as one header line and one value line.
func (s Summary) Table() string {
	type column struct {
		name string
		v    any
	}
	cols := []column{
		{"intents", s.Intents}, {"clients", s.Clients}, {"requests", s.Requests}, {"viaSQS", s.ViaSQS},
		{"hangs", s.Hangs}, {"500s", s.Errors500}, {"drops", s.Drops}, {"kills", s.Kills}, {"dbstalls", s.Stalls},
		{"resent", s.Resent}, {"outages", s.Outages}, {"notsent", s.NotSent}, {"unknown", s.Unknown},
		{"authorizations", s.Authorizations}, {"duplicates", s.Duplicates}, {"lost", s.Lost}, {"divergent", s.Divergent},
		{"unanswered", s.Unanswered}, {"mismatched", s.Mismatched}, {"inflight", s.InFlight}, {"deadletters", s.DeadLetters},
		{"dlqInFlight", s.DeadLettersInFlight}, {"events", s.Events}, {"rejections", s.Rejections},
		{"eventsMissing", s.EventsMissing}, {"eventsExtra", s.EventsExtra}, {"misrouted", s.EventsMisrouted},
		{"deliveries", s.EventDeliveries}, {"takenOver", s.TakenOver},
		{"authorized", s.Authorized}, {"expired", s.Expired}, {"expiredEvents", s.ExpiredEvents},
		{"expEvMissing", s.ExpiredEventsMissing}, {"expEvExtra", s.ExpiredEventsExtra},
	}
	for _, k := range kinds {
		c := s.counts(k)
		cols = append(cols, []column{{k.name + "s", c.Intents}, {k.name + "Acq", c.Acquirer}, {k.name + "NoRecord", c.WithoutRecord},
			{k.name + "Mismatch", c.Mismatched}, {k.name + "Events", c.Events}, {k.name + "Rejected", c.Rejections},
			{k.name + "EvMissing", c.EventsMissing}, {k.name + "EvExtra", c.EventsExtra}}...)
	}
	cols = append(cols, []column{
		{"overCapture", s.RefundsOverCapture}, {"overAuth", s.CapturesOverAuthorization}, {"afterClose", s.CapturesAfterClose},
		{"capturedDiffers", s.CapturedDiffers}, {"refundedDiffers", s.RefundedDiffers}, {"reserved", s.ReservationsLeft},
		{"openAfterExpiry", s.OpenAfterExpiry}, {"bodiesDiffer", s.EventBodiesDiffer},
		{"matchMovements", s.MatchMovements}, {"matchRows", s.MatchRows}, {"unmatched", s.Unmatched},
		{"regions", s.Regions}, {"conflicts", s.Conflicts}, {"stoppedAfter", s.StoppedAfter}, {"failedOver", s.FailedOver},
		{"drain", s.Drain.Round(100 * time.Millisecond)}, {"total", s.Total.Round(100 * time.Millisecond)},
	}...)
	var head, vals strings.Builder
	for _, c := range cols {
		v := fmt.Sprint(c.v)
		w := max(len(c.name), len(v))
		fmt.Fprintf(&head, " %*s", w, c.name)
		fmt.Fprintf(&vals, " %*s", w, v)
	}
	return head.String() + "\n" + vals.String() + "\n"
}

// chaosSweepInterval is how often each region's sweeper runs; a region
// has stopped when its heartbeat is three of them old.
const chaosSweepInterval = 2 * time.Second

// The daily match's grace is 1 s: the run matches once the drain has
// ended, when every movement it made has had its row written or never
// will.
var chaosEnv = []string{"LEASE_MARGIN=1s", "IN_TRANSIT_BOUND=2s", "CLOCK_SKEW=500ms", "ACQUIRER_TIMEOUT=1s", deploy.EnvMatchGrace + "=1s"}

// Run executes one chaos run and returns its summary. The error is for a
// run that could not be carried out; broken promises are in Violations.
func Run(ctx context.Context, cfg Config) (Summary, error) {
	start := time.Now()
	cfg = cfg.withDefaults()
	db, err := localapi.StartDynamoDBLocal(moduleRoot())
	if err != nil {
		return Summary{}, err
	}
	defer db.Stop()
	logs, closeLogs, err := logFile(cfg.Output)
	if err != nil {
		return Summary{}, err
	}
	defer closeLogs()
	logStart, _ := logs.Seek(0, io.SeekCurrent)
	regions, err := startRegions(ctx, cfg, db.Addr, logs)
	if err != nil {
		return Summary{}, err
	}
	defer regions.close()
	stack := regions.stacks[0] // the region that stays up: its checks see the shared table and acquirer
	stack.Sandbox.SetFaults(cfg.Faults)
	stack.Sandbox.SetRefundBound(false) // the service's bounds alone decide
	stack.Sandbox.SetCaptureBound(false)
	if cfg.AuthorizationWindow > 0 {
		stack.Sandbox.SetAuthorizationWindow(cfg.AuthorizationWindow)
	}

	sum := Summary{Intents: cfg.Intents, Clients: cfg.Clients, Regions: cfg.Regions, ConflictShare: cfg.ConflictShare}
	intents := newIntents(cfg)
	if err := storm(ctx, cfg, db, regions, intents, &sum); err != nil {
		return sum, err
	}
	sum.Conflicts = regions.conflicts()
	sum.Drain = drain(ctx, stack, cfg.Drain)
	seen, err := readLogs(logs.Name(), logStart)
	if err != nil {
		return sum, err
	}
	sum.NotSent, sum.Unknown, sum.TakenOver = seen.notSent, seen.unknown, seen.takenOver
	if err := check(ctx, stack, intents, seen, &sum); err != nil {
		return sum, err
	}
	if err := matchDays(ctx, stack, &sum); err != nil {
		return sum, err
	}
	sum.Total = time.Since(start)
	return sum, nil
}

// matchDays runs the daily match once, through the region's own function,
// over the run's days (today and the days before: a run that crossed
// midnight is matched whole), and counts what it read and kept.
func matchDays(ctx context.Context, stack *localapi.Stack, sum *Summary) error {
	days, err := stack.RunMatch(ctx)
	if err != nil {
		return fmt.Errorf("the daily match: %w", err)
	}
	for _, d := range days {
		sum.MatchMovements, sum.MatchRows, sum.Unmatched = sum.MatchMovements+d.Movements, sum.MatchRows+d.Rows, sum.Unmatched+d.Unmatched()
	}
	return nil
}

// withDefaults is cfg with DefaultConfig's Intents and Drain where unset,
// and at least one client, one intent in flight and one instance.
func (cfg Config) withDefaults() Config {
	def := DefaultConfig()
	if cfg.Intents <= 0 {
		cfg.Intents = def.Intents
	}
	cfg.Clients, cfg.Parallel, cfg.Instances = max(cfg.Clients, 1), max(cfg.Parallel, 1), max(cfg.Instances, 1)
	cfg.Regions = min(max(cfg.Regions, 1), 2)
	if cfg.Regions > 1 && cfg.StopAfter <= 0 {
		cfg.StopAfter = 0.5
	}
	if cfg.Drain <= 0 {
		cfg.Drain = def.Drain
	}
	return cfg
}

// logFile is where the functions' logs go, which the checks read back:
// out, or a temporary file when out is nil, which closeLogs closes and
// removes (for out, closeLogs does nothing).
func logFile(out *os.File) (logs *os.File, closeLogs func(), err error) {
	if out != nil {
		return out, func() {}, nil
	}
	if logs, err = os.CreateTemp("", "chaos-logs-"); err != nil {
		return nil, nil, err
	}
	return logs, func() {
		logs.Close()
		os.Remove(logs.Name())
	}, nil
}

// regions are the run's stacks: the first stays up; a second, when the
// run has two regions, shares its table and acquirer and is stopped midway.
type regions struct {
	stacks  []*localapi.Stack
	proxies []*conflictproxy.Proxy
	token   string // a bearer token for account, at every region's gateway
	stopped atomic.Bool
}

// startRegions starts cfg.Regions local stacks on the database at dbAddr,
// with the run's tuning, one producer that may charge account, and their
// functions' logs to logs. This process reaches the database directly, the
// functions through their region's conflict proxy when cfg.ConflictShare is
// set; all through the SDK's standard variables.
func startRegions(ctx context.Context, cfg Config, dbAddr string, logs *os.File) (_ *regions, err error) {
	os.Setenv("AWS_ENDPOINT_URL_DYNAMODB", "http://"+dbAddr)
	os.Setenv("AWS_ENDPOINT_URL_DYNAMODB_STREAMS", "http://"+dbAddr)
	secret := []byte("chaos-secret")
	r := &regions{}
	defer func() {
		if err != nil { // nothing of a run that could not start is left running
			r.close()
		}
	}()
	// The wall clock only makes the table's name unique to this run; no
	// logic reads it.
	table, mode, env := fmt.Sprintf("chaos-%d", time.Now().UnixNano()), deploy.Local().Table, chaosEnv
	if cfg.Regions > 1 {
		mode, env = deploy.MultiRegionStrong, append(slices.Clip(chaosEnv), deploy.EnvStaleRegion+"="+(3*chaosSweepInterval).String())
	}
	for i := range cfg.Regions {
		endpoint := "http://" + dbAddr
		if cfg.ConflictShare > 0 {
			p, err := conflictproxy.New(endpoint, conflictproxy.Share(cfg.ConflictShare, cfg.Seed+uint64(i)))
			if err != nil {
				return nil, err
			}
			r.proxies = append(r.proxies, p)
			endpoint = p.URL
		}
		sc := localapi.StackConfig{
			RIE: cfg.RIE, BinDir: cfg.BinDir, TableName: table, TableMode: mode,
			GatewayAddr: "127.0.0.1:0", SandboxAddr: "127.0.0.1:0", Trust: localapi.Trust{Secret: secret},
			Instances: cfg.Instances, Timeout: 3 * time.Second, Env: append(slices.Clip(env), "AWS_ENDPOINT_URL_DYNAMODB="+endpoint, "AWS_ENDPOINT_URL_DYNAMODB_STREAMS=http://"+dbAddr),
			SweepInterval: chaosSweepInterval, MatchInterval: -1, VisibilityTimeout: 2 * time.Second, Output: logs,
			Producers: []localapi.Producer{{Name: "chaos", Accounts: []string{account}}},
		}
		if cfg.Regions > 1 {
			sc.Region = fmt.Sprintf("region%d", i+1)
		}
		if i > 0 { // one acquirer for every region
			sc.AcquirerURL = r.stacks[0].SandboxURL
		}
		stack, err := localapi.StartStack(ctx, sc)
		if err != nil {
			return nil, err
		}
		r.stacks = append(r.stacks, stack)
	}
	for i, s := range r.stacks { // every region's outcome queues take every region's events
		for j, other := range r.stacks {
			if i != j {
				if err := s.SubscribeTo(ctx, other); err != nil {
					return nil, err
				}
			}
		}
	}
	r.token, _ = localapi.Trust{Secret: secret}.Token(account, time.Hour)
	return r, nil
}

// urls are the regions' gateways, in order.
func (r *regions) urls() []string {
	var out []string
	for _, s := range r.stacks {
		out = append(out, s.URL)
	}
	return out
}

// stopSecond stops the second region whole, if there is one: its gateway,
// functions and triggers (its sweeper among them) die mid-work.
func (r *regions) stopSecond() {
	if len(r.stacks) > 1 && r.stopped.CompareAndSwap(false, true) {
		r.stacks[1].Close()
	}
}

// conflicts is how many writes the regions' proxies refused.
func (r *regions) conflicts() int {
	n := 0
	for _, p := range r.proxies {
		n += p.Refused()
	}
	return n
}

func (r *regions) close() {
	for _, s := range r.stacks {
		s.Close()
	}
	for _, p := range r.proxies {
		_ = p.Close()
	}
}

// newIntents draws cfg.Intents charges from cfg.Seed: about one in ten with
// a card that is declined, about cfg.SQSShare of them also sent as a queue
// command, about cfg.AuthorizeShare made without their capture, each with
// its actions (newActions).
func newIntents(cfg Config) []intent {
	rng := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed+1))
	intents := make([]intent, cfg.Intents)
	for i := range intents {
		pm := "pm_card_visa"
		if rng.Float64() < 0.1 {
			pm = "pm_card_declined"
		}
		amount := int64(100 + rng.IntN(100000))
		authorize := rng.Float64() < cfg.AuthorizeShare
		capture := ""
		if authorize {
			capture = `, "capture": false`
		}
		intents[i] = intent{
			key:       fmt.Sprintf("chaos-%d-%05d", cfg.Seed, i),
			body:      fmt.Sprintf(`{"amount": %d, "currency": "BRL", "order_id": "o%d", "payment_method": "%s"%s}`, amount, i, pm, capture),
			viaSQS:    rng.Float64() < cfg.SQSShare,
			authorize: authorize,
			actions:   newActions(cfg, rng, i, amount, authorize),
		}
	}
	return intents
}

// storm sends every intent while the faults that need a clock run, stops
// those once the load is done and records in sum what was sent and
// injected; then it turns the sandbox's faults off. The error is that of
// an outage the sandbox did not come back from (sum then has no injected
// sandbox faults and the sandbox keeps its faults).
func storm(ctx context.Context, cfg Config, db *localapi.DynamoDBLocal, r *regions, intents []intent, sum *Summary) error {
	stack := r.stacks[0]
	f := startFaults(cfg, db, stack)
	load := sendLoad(ctx, cfg, r, intents)
	f.stop()
	sum.Requests, sum.ViaSQS, sum.Kills, sum.Stalls = load.requests, load.viaSQS, int(f.kills.Load()), int(f.stalls.Load())
	sum.StoppedAfter, sum.FailedOver = load.stoppedAfter, load.failedOver
	sum.Outages, sum.Resent = int(f.outages.Load()), stack.Sandbox.Resent()
	if err, _ := f.outageErr.Load().(error); err != nil {
		return err
	}
	sum.Hangs, sum.Errors500, sum.Drops = stack.Sandbox.Injected()
	stack.Sandbox.SetFaults(sandbox.Faults{})
	return nil
}

// faults are the faults that need a clock: kills of busy instances,
// database stalls and acquirer outages, each repeated until stop.
type faults struct {
	done                   chan struct{}
	kills, stalls, outages atomic.Int64
	outageErr              atomic.Value // the error of an outage the sandbox did not come back from
	bg                     sync.WaitGroup
}

// startFaults starts the kills, stalls and outages that cfg spaces (each
// that cfg disables is not started).
func startFaults(cfg Config, db *localapi.DynamoDBLocal, stack *localapi.Stack) *faults {
	f := &faults{done: make(chan struct{})}
	f.every(cfg.KillEvery, func() {
		f.kills.Add(int64(stack.Charge.KillBusy()))
		if rand.N(3) == 0 {
			f.kills.Add(int64(stack.Consumer.KillBusy()))
		}
	})
	f.every(cfg.StallEvery, func() { db.Stall(4 * time.Second); f.stalls.Add(1) })
	if cfg.OutageFor > 0 {
		f.every(cfg.OutageEvery, func() {
			if err := stack.SandboxOutage(cfg.OutageFor); err != nil {
				f.outageErr.Store(err)
				return
			}
			f.outages.Add(1)
		})
	}
	return f
}

// every runs fn with d between the end of one run and the start of the
// next, until stop (a ticker would queue a tick during a 4 s stall and
// stall again at once, freezing the database for good); d <= 0: never.
func (f *faults) every(d time.Duration, fn func()) {
	if d <= 0 {
		return
	}
	f.bg.Go(func() {
		for {
			select {
			case <-f.done:
				return
			case <-time.After(d):
				fn()
			}
		}
	})
}

// stop ends the faults and returns once none is under way.
func (f *faults) stop() {
	close(f.done)
	f.bg.Wait()
}

// load is what sendLoad sent: HTTP requests, queue commands, the intents
// sent before the second region stopped, and the requests that failed over.
type load struct{ requests, viaSQS, stoppedAfter, failedOver int }

// sendLoad charges the intents, cfg.Parallel at a time: an intent chosen
// for the queue is first sent as a queue command, to a region that is up,
// then cfg.Clients clients charge it at once over HTTP, spread over the
// regions, each following the retry rule and failing over to the next
// region when its own does not answer; their answers are kept in the
// intent. Once cfg.StopAfter of the intents have been handed out, the
// second region is stopped.
func sendLoad(ctx context.Context, cfg Config, r *regions, intents []intent) load {
	httpClient := &http.Client{Timeout: 4 * time.Second}
	var sent, queued, failedOver atomic.Int64
	urls := r.urls()
	work := make(chan int)
	var wg sync.WaitGroup
	for range cfg.Parallel {
		wg.Go(func() {
			for i := range work {
				in := &intents[i]
				if in.viaSQS {
					r.send(ctx, i, command.Charge(account, in.key, []byte(in.body)), &queued)
				}
				in.answers = make([]answer, cfg.Clients)
				var cw sync.WaitGroup
				for c := range cfg.Clients {
					cw.Go(func() {
						in.answers[c] = retryUntilFinal(ctx, httpClient, urls, (i+c)%len(urls), route.ChargesPath, r.token, in.key, in.body, &sent, &failedOver)
					})
				}
				cw.Wait()
				if in.chargeID = chargeIDOf(in); in.chargeID != "" && len(in.actions) > 0 {
					sendActions(ctx, cfg, r, httpClient, urls, i, in.chargeID, in, &sent, &queued, &failedOver)
				}
			}
		})
	}
	stopAt, stoppedAfter := int(cfg.StopAfter*float64(len(intents))), 0
	for i := range intents {
		if len(r.stacks) > 1 && i == stopAt {
			r.stopSecond()
			stoppedAfter = i
		}
		work <- i
	}
	close(work)
	wg.Wait()
	return load{requests: int(sent.Load()), viaSQS: int(queued.Load()), stoppedAfter: stoppedAfter, failedOver: int(failedOver.Load())}
}

// send puts cmd on the producer's queue of the n-th region that is up
// (the first, once the second stopped), counting it in queued.
func (r *regions) send(ctx context.Context, n int, cmd command.Command, queued *atomic.Int64) {
	stack := r.stacks[n%len(r.stacks)]
	if r.stopped.Load() {
		stack = r.stacks[0]
	}
	body, err := cmd.Encode()
	if err != nil {
		panic(err) // the run's own bodies are valid JSON
	}
	if _, err := stack.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(stack.QueueURL), MessageBody: aws.String(body)}); err == nil {
		queued.Add(1)
	}
}

// drain waits, up to limit and polling every 500 ms, until no record is
// in flight and the command queues are empty, and returns how long it
// waited.
func drain(ctx context.Context, stack *localapi.Stack, limit time.Duration) time.Duration {
	drainStart := time.Now()
	for time.Since(drainStart) < limit {
		n, err := inFlight(ctx, stack)
		if err == nil && n == 0 && queueEmpty(ctx, stack) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	return time.Since(drainStart)
}

// account is the one account the run charges.
const account = "acct_chaos"

type intent struct {
	key, body string
	viaSQS    bool
	answers   []answer
	// chargeID is the charge its 201 answers name (none declined);
	// authorize: the charge is made without its capture; actions are
	// what is asked of it once it is made.
	chargeID  string
	authorize bool
	actions   []action
}

// scope is the intent's idempotency scope, as the service builds it.
func (in intent) scope() idem.Scope {
	return idem.Scope{Operation: charge.Operation, Account: account, Key: in.key}
}

type answer struct {
	final  bool
	status int
	body   []byte
}

// retryUntilFinal is the documented client rule: on 409, 429 or 5xx (or no
// answer) wait Retry-After, or back off, and retry with the same key.
// A client POSTs body to path, starts at urls[first] and, when a region
// does not answer at all (a connection refused: the region is down), fails
// over to the next one with the same key, counting the request in
// failedOver.
func retryUntilFinal(ctx context.Context, c *http.Client, urls []string, first int, path, token, key, body string, requests, failedOver *atomic.Int64) answer {
	backoff := 100 * time.Millisecond
	region := first
	for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, urls[region]+path, bytes.NewReader([]byte(body)))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Idempotency-Key", key)
		req.Header.Set("Content-Type", "application/json")
		requests.Add(1)
		resp, err := c.Do(req)
		wait := backoff
		if errors.Is(err, syscall.ECONNREFUSED) && len(urls) > 1 {
			region = (region + 1) % len(urls)
			failedOver.Add(1)
		}
		if err == nil {
			b, readErr := io.ReadAll(resp.Body)
			resp.Body.Close()
			if readErr == nil && resp.StatusCode != 409 && resp.StatusCode != 429 && resp.StatusCode < 500 {
				return answer{final: true, status: resp.StatusCode, body: b}
			}
			if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
				wait = time.Duration(s) * time.Second
			}
		}
		backoff = min(2*backoff, 2*time.Second)
		time.Sleep(wait/2 + rand.N(wait/2+1))
	}
	return answer{}
}

func inFlight(ctx context.Context, s *localapi.Stack) (int, error) {
	n := 0
	p := dynamodb.NewScanPaginator(s.DynamoDB, &dynamodb.ScanInput{
		TableName: aws.String(s.TableName), ConsistentRead: aws.Bool(true), Select: types.SelectCount,
		FilterExpression: aws.String("#s = :p"), ExpressionAttributeNames: map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: string(idem.StatusInProgress)}},
	})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return 0, err
		}
		n += int(out.Count)
	}
	return n, nil
}

// queueEmpty: the producer's queue and the reconcile queue hold nothing.
func queueEmpty(ctx context.Context, s *localapi.Stack) bool {
	for _, url := range []string{s.QueueURL, s.ReconcileURL} {
		out, err := s.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll}})
		if err != nil || out.Attributes["ApproximateNumberOfMessages"] != "0" || out.Attributes["ApproximateNumberOfMessagesNotVisible"] != "0" {
			return false
		}
	}
	return true
}

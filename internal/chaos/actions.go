package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/capture"
	"github.com/idempotent-payments/idempay/internal/command"
	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/event"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/localapi"
	"github.com/idempotent-payments/idempay/internal/refund"
	"github.com/idempotent-payments/idempay/internal/route"
	"github.com/idempotent-payments/idempay/internal/strictjson"
)

// kind is one kind of action the run asks of a charge: a refund, a
// capture or a void, each with its operation, its route, its queue
// command, its row id and its events.
type kind struct {
	name      string // its column prefix in the summary
	operation string
	route     string
	command   func(account, chargeID, idempotencyKey string, request []byte) command.Command
	rowID     func(downstreamKey string) string
	events    event.Kind
	// row reads the row id names on table: whether it exists.
	row func(ctx context.Context, table *dynamo.Table, id string) (bool, error)
}

var (
	refunds = &kind{name: "refund", operation: refund.Operation, route: route.Refund, command: command.Refund, rowID: refund.ID, events: event.Refunds,
		row: func(ctx context.Context, t *dynamo.Table, id string) (bool, error) {
			return found(t.Refunds().Get(ctx, id))
		}}
	captures = &kind{name: "capture", operation: capture.OperationCapture, route: route.Capture, command: command.Capture, rowID: capture.CaptureID,
		events: event.Captures,
		row: func(ctx context.Context, t *dynamo.Table, id string) (bool, error) {
			return found(t.CaptureRows().Get(ctx, id))
		}}
	voids = &kind{name: "void", operation: capture.OperationVoid, route: route.Void, command: command.Void, rowID: capture.VoidID, events: event.Voids,
		row: func(ctx context.Context, t *dynamo.Table, id string) (bool, error) {
			return found(t.VoidRows().Get(ctx, id))
		}}
	// kinds are every kind, in the summary's order.
	kinds = []*kind{refunds, captures, voids}
)

// found is whether a row read found its row: a row that is not there is
// no error.
func found[R any](_ R, err error) (bool, error) {
	if errors.Is(err, refund.ErrNoRefund) || errors.Is(err, capture.ErrNoRow) {
		return false, nil
	}
	return err == nil, err
}

// action is one action a charge intent asks once its charge is made: its
// kind, key and body, the amount it asks (0 for a void), whether it is
// also sent as a queue command, and how long after the charge it is
// sent; answers are its clients'.
type action struct {
	kind      *kind
	key, body string
	amount    int64
	viaSQS    bool
	after     time.Duration
	answers   []answer
}

// scope is the action's idempotency scope, as the service builds it.
func (a action) scope() idem.Scope {
	return idem.Scope{Operation: a.kind.operation, Account: account, Key: a.key}
}

// newActions draws the actions of charge intent i of amount. Every charge
// gets 1 to cfg.RefundsPerCharge partial refunds, each of 20 to 45 % of
// the charge, so four may ask more than the charge and the bound refuses
// some. An authorization (authorized) also gets 1 to
// cfg.CapturesPerAuthorization captures of 15 to 40 % each, the last one
// final three times in ten, a void three times in ten, all raced with the
// refunds (which can only return what was captured), or, about one time
// in seven, a void alone; and three times in twenty a late capture, sent
// once its window (cfg.AuthorizationWindow) has passed, which must be
// refused.
func newActions(cfg Config, rng *rand.Rand, i int, amount int64, authorized bool) []action {
	var out []action
	add := func(k *kind, body string, a int64) {
		out = append(out, action{kind: k, key: fmt.Sprintf("chaos-%d-%05d-%s-%d", cfg.Seed, i, k.name, len(out)), body: body, amount: a,
			viaSQS: rng.Float64() < cfg.SQSShare})
	}
	if cfg.RefundsPerCharge > 0 {
		for range 1 + rng.IntN(cfg.RefundsPerCharge) {
			a := max(1, amount*int64(20+rng.IntN(26))/100)
			add(refunds, fmt.Sprintf(`{"amount": %d}`, a), a)
		}
	}
	if !authorized || cfg.CapturesPerAuthorization <= 0 {
		return out
	}
	n := 1 + rng.IntN(cfg.CapturesPerAuthorization)
	finalLast := rng.Float64() < 0.3
	for c := range n {
		a := max(1, amount*int64(15+rng.IntN(26))/100)
		add(captures, fmt.Sprintf(`{"amount": %d, "final": %t}`, a, finalLast && c == n-1), a)
	}
	switch r := rng.Float64(); {
	case r < 0.15: // voided untouched: the void alone, then the refunds' refusals
		out = slices.DeleteFunc(out, func(a action) bool { return a.kind == captures })
		add(voids, `{}`, 0)
	case r < 0.45:
		add(voids, `{}`, 0)
	}
	if rng.Float64() < 0.15 {
		add(captures, `{"amount": 1, "final": false}`, 1)
		out[len(out)-1].after = cfg.AuthorizationWindow + time.Second
	}
	return out
}

// sendActions sends every action of a made charge at once (a late one
// once its delay has passed), each first as a queue command when chosen
// for the queue, then by cfg.Clients clients over HTTP under its key, as
// sendLoad charges.
func sendActions(ctx context.Context, cfg Config, r *regions, c *http.Client, urls []string, i int, chargeID string, in *intent, sent, queued, failedOver *atomic.Int64) {
	var wg sync.WaitGroup
	for j := range in.actions {
		a := &in.actions[j]
		wg.Go(func() {
			time.Sleep(a.after)
			if a.viaSQS {
				r.send(ctx, i+j, a.kind.command(account, chargeID, a.key, []byte(a.body)), queued)
			}
			a.answers = make([]answer, cfg.Clients)
			var cw sync.WaitGroup
			for k := range cfg.Clients {
				cw.Go(func() {
					a.answers[k] = retryUntilFinal(ctx, c, urls, (i+j+k)%len(urls), route.Path(a.kind.route, chargeID), r.token, a.key, a.body, sent, failedOver)
				})
			}
			cw.Wait()
		})
	}
	wg.Wait()
}

// chargeIDOf is the charge id a final 201 answer of the intent names.
func chargeIDOf(in *intent) string {
	for _, a := range in.answers {
		if a.final && a.status == http.StatusCreated {
			var body struct {
				ID string `json:"id"`
			}
			if strictjson.UnmarshalResponse(a.body, &body) == nil { // the API's answer, read as strictly as its clients should
				return body.ID
			}
		}
	}
	return ""
}

// moved is one action as the acquirer made or declined it, whatever its
// kind.
type moved struct {
	kind            *kind
	key             string
	id              string
	authorizationID string
	succeeded       bool
	amount          int64
	final           bool // a capture that closed the authorization
	at              time.Time
}

// acquirerActions are every refund, capture and void the sandbox made or
// declined.
func acquirerActions(s *localapi.Stack) []moved {
	var out []moved
	for _, r := range s.Sandbox.Refunds() {
		out = append(out, moved{kind: refunds, key: r.IdempotencyKey, id: r.ID, authorizationID: r.AuthorizationID,
			succeeded: r.Status == acquirer.RefundSucceeded, amount: r.Amount, at: r.CreatedAt})
	}
	for _, c := range s.Sandbox.Captures() {
		out = append(out, moved{kind: captures, key: c.IdempotencyKey, id: c.ID, authorizationID: c.AuthorizationID,
			succeeded: c.Status == acquirer.CaptureSucceeded, amount: c.Amount, final: c.Final, at: c.CreatedAt})
	}
	for _, v := range s.Sandbox.Voids() {
		out = append(out, moved{kind: voids, key: v.IdempotencyKey, id: v.ID, authorizationID: v.AuthorizationID,
			succeeded: v.Status == acquirer.VoidSucceeded, amount: v.Amount, at: v.CreatedAt})
	}
	return out
}

// charged is what checkActions reads of one charge intent with actions:
// its charge's row, its figures and each action's record.
type charged struct {
	intent                    int
	chargeID, authorizationID string
	amount                    int64
	authorization             bool
	expiresAt                 time.Time
	balance                   capture.Balance // an authorization's both sides; a captured charge's refunds only
	readAt                    time.Time       // when balance was read, by the sandbox's clock (which set expiresAt)
	reserved                  int64           // what refunds and captures in flight reserve
	records                   []*idem.Record
}

// closeWait bounds checkActions' wait for the sweeper to close every
// authorization whose window has passed. The sweeper closes them last in
// its run, after the sweep and the backstop, within its 3-second budget
// here (55 s deployed): in two regions most of its runs stop short of the
// expiry's end (20 of 32 in one run), so the last lapsed authorization
// can wait for tens of seconds.
const closeWait = 90 * time.Second

// checkActions checks the refunds, captures and voids against the
// acquirer, the table and the clients' answers. Per charge: the acquirer
// captured at most the authorization and refunded at most what was
// captured (a charge captured at creation: its amount), exactly what its
// balance says (what amount_captured and amount_refunded read), nothing
// left reserved, and no capture after the authorization closed (a void or
// a final capture before it, or an intent claimed after its window); an
// authorization is closed once its window has passed. Per action: at most
// one acquirer action under its record's key, every client the same
// answer, and a 201 that is the acquirer's action. It returns, per kind
// and by row id, the subscriber each row's event must reach, and the
// charges whose authorization closed at its expiry (each owes a
// charge.expired event), for checkEvents.
func checkActions(ctx context.Context, s *localapi.Stack, intents []intent, sum *Summary) (map[*kind]map[string]string, map[string]bool, error) {
	table := dynamo.Open(s.DynamoDB, s.TableName)
	guard := idem.NewGuard(table.Store(), idem.Config{})
	byDownstream := map[string]*idem.Record{} // the downstream keys of the action records
	want := map[*kind]map[string]string{}     // per kind: row id → the subscriber of its source
	for _, k := range kinds {
		want[k] = map[string]string{}
	}
	var all []charged
	for i := range intents {
		in := &intents[i]
		if in.chargeID == "" {
			continue
		}
		row, err := table.Ledger().Get(ctx, in.chargeID)
		if err != nil {
			return nil, nil, fmt.Errorf("the charge %s: %w", idem.Ref(in.chargeID), err)
		}
		c := charged{intent: i, chargeID: in.chargeID, authorizationID: row.AuthorizationID, amount: row.Amount, authorization: in.authorize}
		c.expiresAt = row.AuthorizationExpiresAt
		if in.authorize {
			sum.Authorized++
		}
		for _, a := range in.actions {
			sum.counts(a.kind).Intents++
			rec, err := guard.Lookup(ctx, a.scope().PK())
			if errors.Is(err, idem.ErrNotFound) {
				rec, err = nil, nil
			}
			if err != nil {
				return nil, nil, err
			}
			c.records = append(c.records, rec)
			if rec == nil {
				continue
			}
			byDownstream[rec.DownstreamKey] = rec
			if rec.Status == idem.StatusInProgress {
				sum.InFlight++
			}
			id := a.kind.rowID(rec.DownstreamKey)
			if ok, err := a.kind.row(ctx, table, id); err != nil {
				return nil, nil, err
			} else if ok {
				want[a.kind][id] = subscriberOf(rec.Source)
			}
		}
		all = append(all, c)
	}
	if err := awaitClosed(ctx, table, all, s.Sandbox.Now); err != nil {
		return nil, nil, err
	}
	for i := range all {
		c := &all[i]
		b, err := table.Balances().Get(ctx, c.chargeID) // the refund side
		if err != nil {
			return nil, nil, err
		}
		c.balance, c.readAt = capture.Balance{Refunded: b.Refunded}, s.Sandbox.Now()
		if c.authorization {
			if c.balance, err = table.Captures().Get(ctx, c.chargeID); err != nil {
				return nil, nil, err
			}
		}
		c.reserved = c.balance.Reserved + b.Reserved
	}

	byKey := map[string]moved{}
	byAuthorization := map[string][]moved{}
	for _, m := range acquirerActions(s) {
		sum.counts(m.kind).Acquirer++
		if rec := byDownstream[m.key]; rec == nil || rec.Operation != m.kind.operation {
			sum.counts(m.kind).WithoutRecord++ // moved under a key no intent's record names
		}
		byKey[m.key] = m
		byAuthorization[m.authorizationID] = append(byAuthorization[m.authorizationID], m)
	}
	expired := map[string]bool{}
	for _, c := range all {
		checkCharge(c, byAuthorization[c.authorizationID], byDownstream, sum)
		if c.balance.Closed == capture.ClosedExpired {
			expired[c.chargeID] = true
		}
		for j, a := range intents[c.intent].actions {
			rec := c.records[j]
			for _, ans := range finalAnswers(a.answers, sum) {
				if ans.status == http.StatusCreated && (rec == nil || !actionMatches(ans.body, a, byKey[rec.DownstreamKey], rec.DownstreamKey)) {
					sum.counts(a.kind).Mismatched++
				}
			}
		}
	}
	return want, expired, nil
}

// checkCharge checks one charge's figures against what the acquirer moved
// for its authorization.
func checkCharge(c charged, moves []moved, records map[string]*idem.Record, sum *Summary) {
	var captured, refunded int64
	var closedAt time.Time // the first void or final capture that succeeded
	for _, m := range moves {
		if !m.succeeded {
			continue
		}
		switch m.kind {
		case refunds:
			refunded += m.amount
		case captures:
			captured += m.amount
		}
		if (m.kind == voids || m.final) && (closedAt.IsZero() || m.at.Before(closedAt)) {
			closedAt = m.at
		}
	}
	for _, m := range moves {
		if m.kind != captures || !m.succeeded {
			continue
		}
		rec := records[m.key]
		afterClose := !closedAt.IsZero() && m.at.After(closedAt)
		afterWindow := rec != nil && !c.expiresAt.IsZero() && rec.CreatedAt.After(c.expiresAt)
		if afterClose || afterWindow {
			sum.CapturesAfterClose++
		}
	}
	bound := c.amount
	if c.authorization {
		bound = captured
		if captured > c.amount {
			sum.CapturesOverAuthorization++
		}
		if captured != c.balance.Captured {
			sum.CapturedDiffers++
		}
		switch {
		case c.balance.Closed == "" && c.readAt.After(c.expiresAt):
			sum.OpenAfterExpiry++
		case c.balance.Closed == capture.ClosedExpired:
			sum.Expired++
		}
	}
	if refunded > bound {
		sum.RefundsOverCapture++
	}
	if refunded != c.balance.Refunded {
		sum.RefundedDiffers++
	}
	if c.reserved != 0 {
		sum.ReservationsLeft++
	}
}

// awaitClosed waits, up to closeWait, until every authorization of all
// is past its window by now (the sandbox's clock, which set the windows)
// and closed: the sweeper closes the lapsed ones.
func awaitClosed(ctx context.Context, table *dynamo.Table, all []charged, now func() time.Time) error {
	deadline := time.Now().Add(closeWait)
	for {
		open := 0
		for _, c := range all {
			if !c.authorization {
				continue
			}
			if now().Before(c.expiresAt) {
				open++
				continue
			}
			b, err := table.Captures().Get(ctx, c.chargeID)
			if err != nil {
				return err
			}
			if b.Closed == "" {
				open++
			}
		}
		if open == 0 || time.Now().After(deadline) {
			return nil
		}
		time.Sleep(time.Second)
	}
}

// actionMatches reports whether a 201 answer of a is the acquirer's
// action m under downstreamKey: the same id, succeeded, of its amount,
// which is the amount asked (a void's: what it released).
func actionMatches(body []byte, a action, m moved, downstreamKey string) bool {
	var got struct {
		ID     string `json:"id"`
		Amount int64  `json:"amount"`
		Status string `json:"status"`
	}
	return strictjson.UnmarshalResponse(body, &got) == nil && got.ID == a.kind.rowID(downstreamKey) && m.key == downstreamKey &&
		m.kind == a.kind && m.succeeded && got.Status == "succeeded" && got.Amount == m.amount && (a.kind == voids || got.Amount == a.amount)
}

// subscriberOf is the subscriber whose queue a record's events reach: its
// source's producer, or the HTTP subscriber.
func subscriberOf(source string) string {
	if p, ok := strings.CutPrefix(source, "queue:"); ok {
		return p
	}
	return event.ProducerHTTP
}

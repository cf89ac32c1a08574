package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/command"
	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/event"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/localapi"
	"github.com/idempotent-payments/idempay/internal/refund"
	"github.com/idempotent-payments/idempay/internal/route"
	"github.com/idempotent-payments/idempay/internal/strictjson"
)

// refundIntent is one refund of a charge intent: its key, its body, and
// whether it is also sent as a queue command; answers are its clients'.
type refundIntent struct {
	key, body string
	amount    int64
	viaSQS    bool
	answers   []answer
}

// scope is the refund intent's idempotency scope, as the service builds it.
func (r refundIntent) scope() idem.Scope {
	return idem.Scope{Operation: refund.Operation, Account: account, Key: r.key}
}

// newRefunds gives the charge intent i of amount 1 to cfg.RefundsPerCharge
// partial refunds, each of 20 to 45 % of the charge: four may ask more than
// the charge, so the bound refuses some.
func newRefunds(cfg Config, rng *rand.Rand, i int, amount int64) []refundIntent {
	if cfg.RefundsPerCharge <= 0 {
		return nil
	}
	out := make([]refundIntent, 1+rng.IntN(cfg.RefundsPerCharge))
	for j := range out {
		a := max(1, amount*int64(20+rng.IntN(26))/100)
		out[j] = refundIntent{
			key: fmt.Sprintf("chaos-%d-%05d-refund-%d", cfg.Seed, i, j), body: fmt.Sprintf(`{"amount": %d}`, a), amount: a,
			viaSQS: rng.Float64() < cfg.SQSShare,
		}
	}
	return out
}

// sendRefunds refunds a captured charge: every refund intent at once, each
// first sent as a queue command when chosen for the queue, then by
// cfg.Clients clients over HTTP under its key, as sendLoad charges.
func sendRefunds(ctx context.Context, cfg Config, r *regions, c *http.Client, urls []string, i int, chargeID string, in *intent, sent, queued, failedOver *atomic.Int64) {
	var wg sync.WaitGroup
	for j := range in.refunds {
		ref := &in.refunds[j]
		wg.Go(func() {
			if ref.viaSQS {
				r.send(ctx, i+j, command.Refund(account, chargeID, ref.key, []byte(ref.body)), queued)
			}
			ref.answers = make([]answer, cfg.Clients)
			var cw sync.WaitGroup
			for k := range cfg.Clients {
				cw.Go(func() {
					ref.answers[k] = retryUntilFinal(ctx, c, urls, (i+j+k)%len(urls), route.ChargesPath+"/"+chargeID+"/refunds", r.token, ref.key, ref.body, sent, failedOver)
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

// refundRecords are what checkRefunds reads of one charge intent: its
// charge's row and balance, and each refund intent's record.
type refundRecords struct {
	intent                    int
	chargeID, authorizationID string
	chargeAmount              int64
	balance                   refund.Balance
	records                   []*idem.Record
}

// checkRefunds checks the refunds against the acquirer, the table and the
// clients' answers: per charge, the acquirer refunded at most the charge,
// exactly what its balance says refunded (what amount_refunded reads),
// with nothing left reserved; per refund intent, at most one acquirer
// refund, every client the same answer, and a 201 that is the acquirer's
// refund. It returns, by refund id, the subscriber each refund row's
// event must reach, for checkEvents.
func checkRefunds(ctx context.Context, s *localapi.Stack, intents []intent, sum *Summary) (map[string]string, error) {
	table := dynamo.Open(s.DynamoDB, s.TableName)
	guard := idem.NewGuard(table.Store(), idem.Config{})
	byDownstream := map[string]bool{} // the downstream keys of the refund records
	want := map[string]string{}       // refund id → the subscriber of its source
	var all []refundRecords
	for i := range intents {
		in := &intents[i]
		if len(in.refunds) == 0 || in.chargeID == "" {
			continue
		}
		sum.RefundIntents += len(in.refunds)
		row, err := table.Ledger().Get(ctx, in.chargeID)
		if err != nil {
			return nil, fmt.Errorf("the refunded charge %s: %w", idem.Ref(in.chargeID), err)
		}
		rr := refundRecords{intent: i, chargeID: in.chargeID, authorizationID: row.AuthorizationID, chargeAmount: row.Amount}
		if rr.balance, err = table.Balances().Get(ctx, in.chargeID); err != nil {
			return nil, err
		}
		for _, ref := range in.refunds {
			rec, err := guard.Lookup(ctx, ref.scope().PK())
			if errors.Is(err, idem.ErrNotFound) {
				rec, err = nil, nil
			}
			if err != nil {
				return nil, err
			}
			rr.records = append(rr.records, rec)
			if rec == nil {
				continue
			}
			byDownstream[rec.DownstreamKey] = true
			if rec.Status == idem.StatusInProgress {
				sum.InFlight++
			}
			if _, err := table.Refunds().Get(ctx, refund.ID(rec.DownstreamKey)); err == nil {
				want[refund.ID(rec.DownstreamKey)] = subscriberOf(rec.Source)
			}
		}
		all = append(all, rr)
	}

	byKey := map[string]acquirer.Refund{}
	for _, r := range s.Sandbox.Refunds() {
		sum.AcquirerRefunds++
		if !byDownstream[r.IdempotencyKey] {
			sum.RefundsWithoutRecord++ // money returned under a key no refund intent's record names
		}
		byKey[r.IdempotencyKey] = r
	}
	for _, rr := range all {
		refunded := s.Sandbox.Refunded(rr.authorizationID)
		if refunded > rr.chargeAmount {
			sum.RefundsOverCharge++
		}
		if refunded != rr.balance.Refunded {
			sum.RefundedDiffers++
		}
		if rr.balance.Reserved != 0 {
			sum.ReservationsLeft++
		}
		for j, ref := range intents[rr.intent].refunds {
			rec := rr.records[j]
			for _, a := range finalAnswers(ref.answers, sum) {
				if a.status == http.StatusCreated && (rec == nil || !refundMatches(a.body, byKey[rec.DownstreamKey], rec.DownstreamKey, ref.amount)) {
					sum.RefundsMismatched++
				}
			}
		}
	}
	return want, nil
}

// refundMatches reports whether a 201 refund answer is the acquirer's
// refund under downstreamKey: the same refund, succeeded, of its amount,
// which is the amount asked.
func refundMatches(body []byte, r acquirer.Refund, downstreamKey string, asked int64) bool {
	var got struct {
		ID     string `json:"id"`
		Amount int64  `json:"amount"`
		Status string `json:"status"`
	}
	return strictjson.UnmarshalResponse(body, &got) == nil && got.ID == refund.ID(downstreamKey) && r.IdempotencyKey == downstreamKey &&
		r.Status == acquirer.RefundSucceeded && got.Status == r.Status && got.Amount == r.Amount && got.Amount == asked
}

// subscriberOf is the subscriber whose queue a record's events reach: its
// source's producer, or the HTTP subscriber.
func subscriberOf(source string) string {
	if p, ok := strings.CutPrefix(source, "queue:"); ok {
		return p
	}
	return event.ProducerHTTP
}

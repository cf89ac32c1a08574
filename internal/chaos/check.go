package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/deploy"
	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/event"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/localapi"
)

// check compares the acquirer's authorizations, each intent's record and
// ledger row (read through the store and the ledger, as the service reads
// them) and every client's answers, and fills in the violation counts of
// sum.
func check(ctx context.Context, s *localapi.Stack, intents []intent, logs seen, sum *Summary) error {
	records, charged, err := lookUp(ctx, s, intents)
	if err != nil {
		return err
	}
	byDownstream := map[string]int{} // downstream key → intent
	for i, rec := range records {
		if rec == nil {
			continue
		}
		byDownstream[rec.DownstreamKey] = i
		if rec.Status == idem.StatusInProgress {
			sum.InFlight++
		}
	}

	auths := s.Sandbox.ByKey()
	sum.Authorizations = len(auths)
	perIntent := map[string]int{}
	for key, auth := range auths {
		i, ok := byDownstream[key]
		if !ok {
			sum.Lost++ // money taken, no record left to find it
			continue
		}
		rec := records[i]
		perIntent[rec.Key]++
		if rec.Status != idem.StatusCompleted {
			continue // counted as in flight
		}
		if !matches(rec.Response, auth) || !charged[i] {
			sum.Mismatched++
		}
	}
	for _, n := range perIntent {
		if n > 1 {
			sum.Duplicates += n - 1
		}
	}

	for i, in := range intents {
		rec := records[i]
		for _, a := range finalAnswers(in.answers, sum) {
			if a.status == 201 || a.status == 402 {
				if rec == nil || rec.Response == nil || !bytes.Equal(rec.Response.Body, a.body) || rec.Response.StatusCode != a.status {
					sum.Mismatched++
				}
			}
		}
	}

	rows, expired, err := checkActions(ctx, s, intents, sum)
	if err != nil {
		return err
	}
	if err := checkEvents(ctx, s, records, charged, rows, expired, sum); err != nil {
		return err
	}

	// Dead letters: the consumers' refusals (each with its reject_code) and
	// what ran out of receives (the DLQ proper).
	for _, url := range []string{s.RejectedURL, s.DLQURL} {
		for {
			out, err := s.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
				QueueUrl: aws.String(url), MaxNumberOfMessages: 10, MessageAttributeNames: []string{"All"},
				MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameApproximateReceiveCount},
			})
			if err != nil {
				return err
			}
			if len(out.Messages) == 0 {
				break
			}
			for _, m := range out.Messages {
				sum.DeadLetters++
				_, rejected := m.MessageAttributes["reject_code"]
				receives, _ := strconv.Atoi(m.Attributes[string(sqstypes.MessageSystemAttributeNameApproximateReceiveCount)])
				if !rejected && receives < deploy.MaxReceiveCount {
					sum.DeadLettersNoReason++
				}
				if !rejected && logs.onlyInFlight(aws.ToString(m.MessageId)) {
					sum.DeadLettersInFlight++
				}
				_, _ = s.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle})
			}
		}
	}
	return nil
}

// finalAnswers are an intent's clients' final answers; it counts in sum
// the clients left without one, and the answers that differ from the
// first.
func finalAnswers(answers []answer, sum *Summary) []answer {
	var final []answer
	for _, a := range answers {
		switch {
		case !a.final:
			sum.Unanswered++
			continue
		case len(final) > 0 && !bytes.Equal(final[0].body, a.body):
			sum.Divergent++
		}
		final = append(final, a)
	}
	return final
}

// tally is the distinct events of one kind received, by what they are
// about (a charge id, a refund id), against want: what each must reach,
// the subscriber of its source.
type tally struct {
	want     map[string]string
	received map[string]map[string]bool // about → distinct event ids
}

func newTally(want map[string]string) tally {
	return tally{want: want, received: map[string]map[string]bool{}}
}

// add counts event id about about, delivered to subscriber, and reports
// whether it is misrouted: new, and on another queue than want says.
func (t tally) add(about, id, subscriber string) (misrouted bool) {
	if t.received[about] == nil {
		t.received[about] = map[string]bool{}
	}
	misrouted = !t.received[about][id] && t.want[about] != "" && t.want[about] != subscriber
	t.received[about][id] = true
	return misrouted
}

// complete reports whether every wanted one has an event.
func (t tally) complete() bool {
	for about := range t.want {
		if len(t.received[about]) == 0 {
			return false
		}
	}
	return true
}

// count returns the distinct events, the wanted ones without an event,
// and those with more than one or none wanted.
func (t tally) count() (events, missing, extra int) {
	for about := range t.want {
		if len(t.received[about]) == 0 {
			missing++
		}
	}
	for about, ids := range t.received {
		events += len(ids)
		if _, ok := t.want[about]; !ok || len(ids) > 1 {
			extra++
		}
	}
	return events, missing, extra
}

// checkEvents drains the outcome queues: every ledger row must have
// exactly one distinct captured, authorized or declined event, and every
// refund, capture and void row (rows, per kind, by row id: the subscriber
// of its source) one succeeded or declined event of its kind, on the
// queue of the subscriber its intent came from, and no such event may
// exist without its row; every authorization closed at its expiry
// (expired) one charge.expired, and no other charge any. Rejections are counted apart. It waits up to a
// minute for the events of every row.
func checkEvents(ctx context.Context, s *localapi.Stack, records []*idem.Record, charged []bool, rows map[*kind]map[string]string,
	expired map[string]bool, sum *Summary) error {
	want := map[string]string{} // charge id → the subscriber of its source
	for i, rec := range records {
		if rec != nil && charged[i] {
			want[charge.ID(rec.DownstreamKey)] = subscriberOf(rec.Source)
		}
	}
	charges := newTally(want)
	lapsed := map[string]string{}
	for id := range expired {
		lapsed[id] = want[id]
	}
	expiries := newTally(lapsed)
	actions := map[*kind]tally{}
	rejections := map[event.Type]map[string]bool{}
	for _, k := range kinds {
		actions[k] = newTally(rows[k])
		rejections[k.events.Rejected] = map[string]bool{}
	}
	rejections[event.Rejected] = map[string]bool{}
	complete := func() bool {
		for _, t := range actions {
			if !t.complete() {
				return false
			}
		}
		return charges.complete() && expiries.complete()
	}
	bodies := map[string]string{} // event id → its first body: one id, one body
	// Events arrive within the publisher's latency; a minute bounds the wait.
	wait, stop := context.WithTimeout(ctx, time.Minute)
	defer stop()
	for quiet := 0; wait.Err() == nil && (!complete() || quiet < 2); {
		got := 0
		for subscriber, url := range s.OutcomeQueues {
			// Each queue is read until it has nothing, ten at a time: a long
			// poll on an empty queue would slow the others' reading to ten
			// events a second.
			for n := 1; n > 0 && wait.Err() == nil; {
				out, err := s.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10})
				if err != nil {
					return err
				}
				n = len(out.Messages)
				got += n
				for _, m := range out.Messages {
					e, err := event.Decode([]byte(aws.ToString(m.Body)))
					if err != nil {
						return fmt.Errorf("an outcome queue holds %q: %w", aws.ToString(m.Body), err)
					}
					if first, seen := bodies[e.ID]; seen && first != aws.ToString(m.Body) {
						sum.EventBodiesDiffer++
					} else if !seen {
						bodies[e.ID] = aws.ToString(m.Body)
					}
					if rejected, ok := rejections[e.Type]; ok {
						rejected[e.ID] = true
					}
					ofCharge, misrouted := tell(e, subscriber, charges, expiries, actions)
					if ofCharge {
						sum.EventDeliveries++
					}
					if misrouted {
						sum.EventsMisrouted++
					}
					_, _ = s.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle})
				}
			}
		}
		if quiet++; got > 0 {
			quiet = 0
		} else {
			time.Sleep(time.Second) // nothing anywhere: wait for the publisher
		}
	}
	sum.Events, sum.EventsMissing, sum.EventsExtra = charges.count()
	sum.ExpiredEvents, sum.ExpiredEventsMissing, sum.ExpiredEventsExtra = expiries.count()
	sum.Rejections = len(rejections[event.Rejected])
	for k, t := range actions {
		c := sum.counts(k)
		c.Events, c.EventsMissing, c.EventsExtra = t.count()
		c.Rejections = len(rejections[k.events.Rejected])
	}
	return nil
}

// tell counts e, delivered to subscriber, in its tally if it is a row's
// outcome event or an expiry's, and reports whether it is a charge's
// outcome and whether it is misrouted.
func tell(e event.Event, subscriber string, charges, expiries tally, actions map[*kind]tally) (ofCharge, misrouted bool) {
	switch e.Type {
	case event.Captured, event.Authorized, event.Declined:
		return true, charges.add(e.Charge.ID, e.ID, subscriber)
	case event.Expired:
		return false, expiries.add(e.Charge.ID, e.ID, subscriber)
	}
	for k, t := range actions {
		if e.Type == k.events.Succeeded || e.Type == k.events.Declined {
			return false, t.add(k.events.ActionOf(&e).ID, e.ID, subscriber)
		}
	}
	return false, false
}

// lookUp reads each intent's live record (nil when none) through the store
// and whether its ledger row exists through the ledger, 16 at a time.
func lookUp(ctx context.Context, s *localapi.Stack, intents []intent) ([]*idem.Record, []bool, error) {
	table := dynamo.Open(s.DynamoDB, s.TableName)
	guard := idem.NewGuard(table.Store(), idem.Config{})
	ledger := table.Ledger()
	records := make([]*idem.Record, len(intents)) // nil: no live record
	charged := make([]bool, len(intents))         // the record's ledger row exists
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		errs  []error
		slots = make(chan struct{}, 16)
	)
	for i, in := range intents {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			rec, err := guard.Lookup(ctx, in.scope().PK())
			if errors.Is(err, idem.ErrNotFound) {
				return
			}
			if err == nil {
				records[i] = rec
				_, err = ledger.Get(ctx, charge.ID(rec.DownstreamKey))
				charged[i] = err == nil
				if errors.Is(err, charge.ErrNoCharge) {
					err = nil
				}
			}
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return records, charged, errors.Join(errs...)
}

// matches reports whether a stored response is the acquirer's outcome.
func matches(resp *idem.Response, auth acquirer.Authorization) bool {
	var body struct {
		AuthorizationID string `json:"authorization_id"`
		Code            string `json:"code"`
		DeclineCode     string `json:"decline_code"`
	}
	if err := json.Unmarshal(resp.Body, &body); err != nil {
		return false
	}
	switch auth.Status {
	case acquirer.StatusCaptured, acquirer.StatusAuthorized:
		return resp.StatusCode == 201 && body.AuthorizationID == auth.ID
	case acquirer.StatusDeclined:
		return resp.StatusCode == 402 && body.Code == "CHARGE_DECLINED" && body.DeclineCode == auth.DeclineCode
	}
	return false
}

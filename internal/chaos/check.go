package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
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
		var first []byte
		for _, a := range in.answers {
			if !a.final {
				sum.Unanswered++
				continue
			}
			if first == nil {
				first = a.body
			} else if !bytes.Equal(first, a.body) {
				sum.Divergent++
			}
			if a.status == 201 || a.status == 402 {
				if rec == nil || rec.Response == nil || !bytes.Equal(rec.Response.Body, a.body) || rec.Response.StatusCode != a.status {
					sum.Mismatched++
				}
			}
		}
	}

	if err := checkEvents(ctx, s, records, charged, sum); err != nil {
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

// checkEvents drains the outcome queues: every ledger row must have
// exactly one distinct captured-or-declined event, on the queue of the
// subscriber its charge came from, and no such event may exist without a
// row. Rejections are counted apart. It waits up to a minute for the
// events of every row.
func checkEvents(ctx context.Context, s *localapi.Stack, records []*idem.Record, charged []bool, sum *Summary) error {
	want := map[string]string{} // charge id → the subscriber of its source
	for i, rec := range records {
		if rec != nil && charged[i] {
			subscriber := event.ProducerHTTP
			if p, ok := strings.CutPrefix(rec.Source, "queue:"); ok {
				subscriber = p
			}
			want[charge.ID(rec.DownstreamKey)] = subscriber
		}
	}
	outcomes := map[string]map[string]bool{} // charge id → distinct event ids
	rejections := map[string]bool{}
	// Events arrive within the publisher's latency; a minute bounds the wait.
	wait, stop := context.WithTimeout(ctx, time.Minute)
	defer stop()
	for quiet := 0; wait.Err() == nil && (len(outcomes) < len(want) || quiet < 2); {
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
				if err := takeEvents(ctx, s, url, subscriber, out.Messages, want, outcomes, rejections, sum); err != nil {
					return err
				}
			}
		}
		if quiet++; got > 0 {
			quiet = 0
		} else {
			time.Sleep(time.Second) // nothing anywhere: wait for the publisher
		}
	}
	for id := range want {
		if len(outcomes[id]) == 0 {
			sum.EventsMissing++
		}
	}
	for id, ids := range outcomes {
		sum.Events += len(ids)
		if _, ok := want[id]; !ok || len(ids) > 1 {
			sum.EventsExtra++
		}
	}
	sum.Rejections = len(rejections)
	return nil
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
	case acquirer.StatusCaptured:
		return resp.StatusCode == 201 && body.AuthorizationID == auth.ID
	case acquirer.StatusDeclined:
		return resp.StatusCode == 402 && body.Code == "CHARGE_DECLINED" && body.DeclineCode == auth.DeclineCode
	}
	return false
}

// takeEvents counts the events msgs bring from subscriber's outcome queue
// at url, and deletes them: each captured or declined event under its
// charge (an event on another subscriber's queue than its charge's source's
// is misrouted), each rejection by its id.
func takeEvents(ctx context.Context, s *localapi.Stack, url, subscriber string, msgs []sqstypes.Message,
	want map[string]string, outcomes map[string]map[string]bool, rejections map[string]bool, sum *Summary) error {
	for _, m := range msgs {
		e, err := event.Decode([]byte(aws.ToString(m.Body)))
		if err != nil {
			return fmt.Errorf("an outcome queue holds %q: %w", aws.ToString(m.Body), err)
		}
		switch {
		case e.Type == event.Rejected:
			rejections[e.ID] = true
		case e.Type == event.Captured || e.Type == event.Declined:
			sum.EventDeliveries++
			if outcomes[e.Charge.ID] == nil {
				outcomes[e.Charge.ID] = map[string]bool{}
			}
			if !outcomes[e.Charge.ID][e.ID] && want[e.Charge.ID] != "" && want[e.Charge.ID] != subscriber {
				sum.EventsMisrouted++
			}
			outcomes[e.Charge.ID][e.ID] = true
		}
		_, _ = s.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle})
	}
	return nil
}

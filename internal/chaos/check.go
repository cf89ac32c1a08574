package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/localapi"
	"github.com/idempotent-payments/idempay/internal/queue"
)

// row is what the checks read of an item: records and ledger rows alike.
type row struct {
	PK             string `dynamodbav:"pk"`
	Status         string `dynamodbav:"status"`
	Key            string `dynamodbav:"idempotency_key"`
	DownstreamKey  string `dynamodbav:"downstream_key"`
	ResponseStatus int    `dynamodbav:"response_status"`
	ResponseBody   []byte `dynamodbav:"response_body"`
}

// check compares the acquirer's authorizations, the table and every
// client's answers, and fills in the violation counts of sum.
func check(ctx context.Context, s *localapi.Stack, intents []intent, logs seen, sum *Summary) error {
	records := map[string]row{} // by pk
	byDownstream := map[string]row{}
	ledger := map[string]bool{}
	p := dynamodb.NewScanPaginator(s.DynamoDB, &dynamodb.ScanInput{TableName: aws.String(s.TableName), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return err
		}
		for _, av := range out.Items {
			var r row
			if err := attributevalue.UnmarshalMap(av, &r); err != nil {
				return err
			}
			switch {
			case strings.HasPrefix(r.PK, charge.LedgerPrefix):
				ledger[r.PK] = true
			default:
				records[r.PK] = r
				byDownstream[r.DownstreamKey] = r
				if r.Status == string(idem.StatusInProgress) {
					sum.InFlight++
				}
			}
		}
	}

	auths := s.Sandbox.ByKey()
	sum.Authorizations = len(auths)
	perIntent := map[string]int{}
	for key, auth := range auths {
		rec, ok := byDownstream[key]
		if !ok {
			sum.Lost++ // money taken, no record left to find it
			continue
		}
		perIntent[rec.Key]++
		if rec.Status != string(idem.StatusCompleted) {
			continue // counted as in flight
		}
		if !matches(rec, auth) || !ledger[charge.LedgerPK(charge.ChargeID(key))] {
			sum.Mismatched++
		}
	}
	for _, n := range perIntent {
		if n > 1 {
			sum.Duplicates += n - 1
		}
	}

	for _, in := range intents {
		rec, hasRecord := records[idem.Scope{Operation: "charge", Account: "acct_chaos", Key: in.key}.PK()]
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
				if !hasRecord || !bytes.Equal(rec.ResponseBody, a.body) || rec.ResponseStatus != a.status {
					sum.Mismatched++
				}
			}
		}
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
				if !rejected && receives < queue.MaxReceiveCount {
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

// matches reports whether a stored response is the acquirer's outcome.
func matches(rec row, auth acquirer.Authorization) bool {
	var body struct {
		AuthorizationID string `json:"authorization_id"`
		Code            string `json:"code"`
		DeclineCode     string `json:"decline_code"`
	}
	if err := json.Unmarshal(rec.ResponseBody, &body); err != nil {
		return false
	}
	switch auth.Status {
	case acquirer.StatusCaptured:
		return rec.ResponseStatus == 201 && body.AuthorizationID == auth.ID
	case acquirer.StatusDeclined:
		return rec.ResponseStatus == 402 && body.Code == "CHARGE_DECLINED" && body.DeclineCode == auth.DeclineCode
	}
	return false
}

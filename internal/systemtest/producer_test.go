package systemtest_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/idempotent-payments/idempay/internal/command"
	"github.com/idempotent-payments/idempay/internal/localapi"
)

// TestProducersChargeOnlyTheirAccounts runs the binding over the real
// queues: two producers, each with its own queue.
// A command for an account its producer may not charge, a charge command
// put on the reconcile queue (the one queue the sweeper can reach), and a
// message from a queue the consumer does not read are all refused with
// PRODUCER_NOT_ALLOWED: no record, no authorization. The permitted command
// charges, and its key is the HTTP route's: the same key over HTTP is a
// replay.
func TestProducersChargeOnlyTheirAccounts(t *testing.T) {
	t.Parallel()
	s := newStackWith(t, localapi.StackConfig{Producers: []localapi.Producer{
		{Name: "orders", Accounts: []string{"acct_orders"}},
		{Name: "billing", Accounts: []string{"acct_billing"}},
	}})
	ctx := context.Background()
	sendTo := func(url, body string) {
		t.Helper()
		if _, err := s.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)}); err != nil {
			t.Fatal(err)
		}
	}
	sendTo(s.Queues["billing"].URL, chargeCommand("acct_orders", "forged-by-billing", visa))
	sendTo(s.Queues["orders"].URL, chargeCommand("acct_victim", "forged-for-victim", visa))
	sendTo(s.ReconcileURL, chargeCommand("acct_orders", "charge-on-reconcile", visa))
	// A queue no consumer reads for any producer, delivered as a mis-wired
	// mapping would.
	stray, err := s.SQS.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(s.TableName + "-stray")})
	if err != nil {
		t.Fatal(err)
	}
	sendTo(*stray.QueueUrl, chargeCommand("acct_orders", "from-a-stray-queue", visa))
	msgs := receiveAll(t, s, *stray.QueueUrl, 1, 5*time.Second)
	if resp := deliver(t, s.Consumer, "arn:aws:sqs:us-east-1:000000000000:"+s.TableName+"-stray", msgs); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("stray message: %+v", resp)
	}

	dead := receiveAll(t, s, s.RejectedURL, 4, 20*time.Second)
	if len(dead) != 4 {
		t.Fatalf("%d of 4 forged commands dead-lettered", len(dead))
	}
	for _, m := range dead {
		code := aws.ToString(m.MessageAttributes["reject_code"].StringValue)
		if code != command.RejectProducerNotAllowed || aws.ToString(m.MessageAttributes["reject_reason"].StringValue) == "" {
			t.Errorf("%s: reject %q, reason %q; want PRODUCER_NOT_ALLOWED with a reason", aws.ToString(m.Body), code,
				aws.ToString(m.MessageAttributes["reject_reason"].StringValue))
		}
	}
	if n := items(t, s); n != 0 {
		t.Fatalf("%d items after forged commands", n)
	}
	if n := authorizations(s); n != 0 {
		t.Fatalf("%d authorizations after forged commands", n)
	}

	sendTo(s.Queues["orders"].URL, chargeCommand("acct_orders", "permitted-order-1", visa))
	waitForRecord(t, s, "acct_orders", "permitted-order-1", "COMPLETED", "the permitted command to charge")
	if r := postCharge(t, s, "acct_orders", "permitted-order-1", visa); r.status != 201 || r.header.Get("Idempotent-Replay") != "true" {
		t.Fatalf("HTTP with the command's key: %d replay %q", r.status, r.header.Get("Idempotent-Replay"))
	}
	if n := authorizations(s); n != 1 {
		t.Fatalf("%d authorizations, want 1", n)
	}
}

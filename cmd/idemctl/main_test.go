package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/httpapi"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/idem/dynamostore"
	"github.com/idempotent-payments/idempay/internal/idem/dynamostore/dynamotest"
	"github.com/idempotent-payments/idempay/internal/sandbox"
)

// TestOperatorCommands drives every command end to end against DynamoDB
// Local, the SQS emulator and the sandbox acquirer.
func TestOperatorCommands(t *testing.T) {
	ctx := context.Background()
	if os.Getenv("AWS_ENDPOINT_URL_SQS") == "" && os.Getenv("AWS_ENDPOINT_URL") == "" {
		t.Fatal("AWS_ENDPOINT_URL_SQS is not set: run `make test`")
	}
	ddb := dynamotest.Client(t)
	table := dynamotest.NewTable(t, ddb)
	cfg, _ := config.LoadDefaultConfig(ctx)
	sqsClient := sqs.NewFromConfig(cfg)
	q, err := sqsClient.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(table + "-commands")})
	if err != nil {
		t.Fatal(err)
	}
	sb := sandbox.New("")
	acqSrv := httptest.NewServer(sb)
	defer acqSrv.Close()
	env := map[string]string{"TABLE_NAME": table, "QUEUE_URL": *q.QueueUrl, "ACQUIRER_URL": acqSrv.URL}
	idemctl := func(stdin string, args ...string) (string, error) {
		var out bytes.Buffer
		err := run(ctx, args, strings.NewReader(stdin), &out, func(k string) string { return env[k] })
		return out.String(), err
	}

	// A completed charge and a stale one, made by the real service.
	store := dynamostore.New(ddb, table)
	guard := idem.NewGuard(store, idem.Config{DefaultLease: 200 * time.Millisecond}) // workers that die young
	acq, _ := acquirer.NewClient(acqSrv.URL, "", nil)
	svc := charge.NewService(idem.NewGuard(store, idem.Config{}), acq, httpapi.Answer, charge.Config{})
	body := []byte(`{"amount": 100, "currency": "BRL", "order_id": "1", "payment_method": "pm_card_visa"}`)
	if r := svc.Charge(ctx, charge.Input{Account: "acct_ops", Keys: []string{"ops-done-key"}, Body: body}); r.Outcome != charge.Executed || r.Response.StatusCode != 201 {
		t.Fatalf("setup: %s %d %s", r.Outcome, r.Response.StatusCode, r.Response.Body)
	}
	stale := idem.Scope{Operation: charge.Operation, Account: "acct_ops", Key: "ops-stuck-key"}
	req, _ := charge.ParseRequest(body, 0)
	if _, err := guard.Begin(ctx, stale, req.Canonical()); err != nil { // a worker that died after its claim
		t.Fatal(err)
	}

	out, err := idemctl("", "inspect", "--account", "acct_ops", "--key", "ops-done-key")
	var v view
	if err != nil || json.Unmarshal([]byte(out), &v) != nil || v.Status != idem.StatusCompleted || v.Response.Status != 201 || v.Ledger["status"] != "captured" {
		t.Fatalf("inspect completed: %v\n%s", err, out)
	}
	if _, err := idemctl("", "inspect", "--account", "acct_ops", "--key", "no-such-key-1"); err == nil {
		t.Fatal("inspect of an absent record succeeded")
	}
	if _, err := idemctl("", "inspect", "--account", "acct_ops", "--key", "short"); err == nil {
		t.Fatal("inspect with a bad key succeeded")
	}

	if _, err := idemctl("yes\n", "release", "--account", "acct_ops", "--key", "ops-stuck-key", "--older-than", "1s"); err == nil {
		t.Fatal("released a lease that ended less than --older-than ago")
	}
	time.Sleep(1300 * time.Millisecond)
	out, err = idemctl("", "stale", "--older-than", "1s")
	if err != nil || !strings.Contains(out, idem.Ref(stale.PK())) || strings.Contains(out, "ops-done-key") {
		t.Fatalf("stale: %v\n%s", err, out)
	}
	if out, err := idemctl("", "reconcile", "--account", "acct_ops", "--key", "ops-stuck-key"); err != nil || !strings.Contains(out, "enqueued") {
		t.Fatalf("reconcile: %v %s", err, out)
	}
	msgs, _ := sqsClient.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, WaitTimeSeconds: 1})
	if len(msgs.Messages) != 1 || !strings.Contains(*msgs.Messages[0].Body, `"type":"reconcile"`) {
		t.Fatalf("queue: %+v", msgs.Messages)
	}
	if _, err := idemctl("no\n", "release", "--account", "acct_ops", "--key", "ops-stuck-key", "--older-than", "1s"); err == nil {
		t.Fatal("released without confirmation")
	}
	if rec, _ := guard.Lookup(ctx, stale.PK()); rec == nil || rec.Status != idem.StatusInProgress {
		t.Fatal("the record changed without confirmation")
	}
	if out, err := idemctl("yes\n", "release", "--account", "acct_ops", "--key", "ops-stuck-key", "--older-than", "1s"); err != nil || !strings.Contains(out, "released") {
		t.Fatalf("release: %v %s", err, out)
	}
	if _, err := guard.Lookup(ctx, stale.PK()); err == nil {
		t.Fatal("record still there after release")
	}

	// A stuck record whose charge the acquirer has: release refuses.
	stuck := idem.Scope{Operation: charge.Operation, Account: "acct_ops", Key: "ops-charged-key"}
	c, err := guard.Begin(ctx, stuck, req.Canonical())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := acq.Authorize(ctx, c.Lease.DownstreamKey(), acquirer.Request{Amount: 100, Currency: "BRL", PaymentMethod: "pm_card_visa", OrderID: "1"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1300 * time.Millisecond)
	if _, err := idemctl("yes\n", "release", "--account", "acct_ops", "--key", "ops-charged-key", "--older-than", "1s", "--yes"); err == nil || !strings.Contains(err.Error(), "use reconcile") {
		t.Fatalf("release of a charged record: %v", err)
	}
}

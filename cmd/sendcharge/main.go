// Command sendcharge is `make send-charge`: it puts one charge command on
// a producer's charge-commands queue (the stack `make run` serves), waits until
// the consumer has processed it, and prints the GET that reads the charge.
//
// Environment: ACCOUNT (acct_demo), KEY (a new one each run), PRODUCER
// (local: the producer whose queue it sends on), TABLE_NAME (idempay-local), LOCAL_API_ADDR, LOCAL_JWT_SECRET, LOCAL_JWT_ISSUER and LOCAL_JWT_AUDIENCE as for `make run`.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/command"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/idem/dynamostore"
	"github.com/idempotent-payments/idempay/internal/localapi"
	"github.com/idempotent-payments/idempay/internal/setup"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "send-charge:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	account, key := cmp.Or(os.Getenv("ACCOUNT"), "acct_demo"), cmp.Or(os.Getenv("KEY"), fmt.Sprintf("sqs-demo-%d", time.Now().Unix()))
	table := cmp.Or(os.Getenv(setup.EnvTableName), "idempay-local")
	awsCfg, err := setup.AWS(ctx)
	if err != nil {
		return err
	}
	client := sqs.NewFromConfig(awsCfg)
	producer := cmp.Or(os.Getenv("PRODUCER"), localapi.DefaultProducers[0].Name)
	q, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(localapi.QueueName(table, producer))})
	if err != nil {
		return fmt.Errorf("the queue of `make run` (is it running?): %w", err)
	}
	request := charge.Request{Amount: 4200, Currency: "BRL", OrderID: "sqs-1", PaymentMethod: "pm_card_visa"}
	body, err := command.Charge(account, key, request.JSON()).Encode()
	if err != nil {
		return err
	}
	if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String(body)}); err != nil {
		return err
	}
	fmt.Printf("sent a charge command as producer %s: account %s, Idempotency-Key %s\n", producer, account, key)

	guard := idem.NewGuard(dynamostore.New(dynamodb.NewFromConfig(awsCfg), table), idem.Config{})
	pk := idem.Scope{Operation: charge.Operation, Account: account, Key: key}.PK()
	for {
		rec, err := guard.Lookup(ctx, pk)
		if err == nil && rec.Status == idem.StatusCompleted {
			var ch struct {
				ID string `json:"id"`
			}
			_ = json.Unmarshal(rec.Response.Body, &ch)
			token, err := localapi.TrustFromEnv(os.Getenv).Token(account, time.Hour)
			if err != nil {
				return err
			}
			fmt.Printf("processed: %d %s\nread it back:\n\ncurl -i http://%s/v1/charges/%s -H 'Authorization: Bearer %s'\n",
				rec.Response.StatusCode, rec.Response.Body, cmp.Or(os.Getenv("LOCAL_API_ADDR"), "127.0.0.1:8080"), ch.ID, token)
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not processed within 30 s (a refused command is in the DLQ with its reject_code, e.g. PRODUCER_NOT_ALLOWED for an account producer %s may not charge)", producer)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Command sendcharge is `make send-charge`: it puts one charge command on
// a producer's charge-commands queue (the stack `make run` serves), waits
// for the command's outcome event on that producer's outcome queue, as a
// producer in AWS does, prints it, and prints the lookup by key that reads
// the charge over HTTP. A refused command's event is charge.rejected: it
// is printed and the command exits 1.
//
// Environment: ACCOUNT (acct_demo), KEY (a new one each run), PRODUCER
// (local: the producer whose queue it sends on), TABLE_NAME (idempay-local), LOCAL_API_ADDR, LOCAL_JWT_SECRET, LOCAL_JWT_ISSUER and LOCAL_JWT_AUDIENCE as for `make run`.
package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/command"
	"github.com/idempotent-payments/idempay/internal/deploy"
	"github.com/idempotent-payments/idempay/internal/event"
	"github.com/idempotent-payments/idempay/internal/localapi"
	"github.com/idempotent-payments/idempay/internal/route"
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
	names := deploy.Names{Prefix: cmp.Or(os.Getenv(deploy.EnvTableName), "idempay-local")}
	awsCfg, err := setup.AWS(ctx)
	if err != nil {
		return err
	}
	client := sqs.NewFromConfig(awsCfg)
	producer := cmp.Or(os.Getenv("PRODUCER"), localapi.DefaultProducers[0].Name)
	commands, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(names.Charges(producer))})
	if err != nil {
		return fmt.Errorf("the queue of `make run` (is it running?): %w", err)
	}
	outcomes, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(names.Outcome(producer))})
	if err != nil {
		return fmt.Errorf("producer %s's outcome queue: %w", producer, err)
	}
	request := charge.Request{Amount: 4200, Currency: "BRL", OrderID: "sqs-1", PaymentMethod: "pm_card_visa"}
	body, err := command.Charge(account, key, request.JSON()).Encode()
	if err != nil {
		return err
	}
	if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: commands.QueueUrl, MessageBody: aws.String(body)}); err != nil {
		return err
	}
	fmt.Printf("sent a charge command as producer %s: account %s, Idempotency-Key %s\nwaiting for its event on %s\n", producer, account, key, names.Outcome(producer))

	e, raw, err := awaitEvent(ctx, client, aws.ToString(outcomes.QueueUrl), account, key)
	if err != nil {
		return err
	}
	fmt.Printf("received %s:\n%s\n", e.Type, raw)
	if e.Type == event.Rejected {
		return fmt.Errorf("the command was refused: %s", e.Reason)
	}
	token, err := localapi.TrustFromEnv(os.Getenv).Token(account, time.Hour)
	if err != nil {
		return err
	}
	fmt.Printf("\nlook the charge up by its key:\n\ncurl -i 'http://%s%s?%s=%s' -H 'Authorization: Bearer %s'\n",
		cmp.Or(os.Getenv("LOCAL_API_ADDR"), "127.0.0.1:8080"), route.ChargesPath, route.LookupParameter, url.QueryEscape(key), token)
	return nil
}

// awaitEvent receives from the outcome queue until the event of (account,
// key) arrives, deletes it and returns it with its message body. Other
// events are left on the queue, visible again at once.
func awaitEvent(ctx context.Context, client *sqs.Client, queueURL, account, key string) (event.Event, string, error) {
	for {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queueURL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return event.Event{}, "", fmt.Errorf("no event within 30 s: is `make run` running? (a command it cannot decode is in the DLQ)")
		}
		if err != nil {
			return event.Event{}, "", err
		}
		for _, m := range out.Messages {
			if e, err := event.Decode([]byte(aws.ToString(m.Body))); err == nil && e.Account == account && e.IdempotencyKey == key &&
				(e.Charge != nil || e.Type == event.Rejected) { // a charge's event: a refund's may share the key
				_, _ = client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(queueURL), ReceiptHandle: m.ReceiptHandle})
				return e, aws.ToString(m.Body), nil
			}
			_, _ = client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(queueURL), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0})
		}
	}
}

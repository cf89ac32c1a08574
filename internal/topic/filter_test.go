package topic_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/idempotent-payments/idempay/internal/event"
	"github.com/idempotent-payments/idempay/internal/setup"
)

// TestEmulatorFilterPolicies pins which of SNS's attribute filter-policy
// operators the local SNS (fauxqs) honours, so docs/events.md can say: a
// policy per case, each on its own subscribed queue, and messages whose
// attributes should and should not pass. The outcome queues use only the
// first, an exact string per subscriber (event.FilterPolicy).
func TestEmulatorFilterPolicies(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	awsCfg, err := setup.AWS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	snsc, sqsc := sns.NewFromConfig(awsCfg), sqs.NewFromConfig(awsCfg)
	name := fmt.Sprintf("filters-%d", time.Now().UnixNano())
	tp, err := snsc.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	type message map[string]string // attribute → value ("n:" prefix: a Number)
	cases := []struct {
		name, policy  string
		pass, blocked []message
		honoured      bool // as SNS does
	}{
		{"exact string (the outcome queues')", event.FilterPolicy("orders"),
			[]message{{"producer": "orders"}}, []message{{"producer": "billing"}, {"producer": "Orders"}, {"type": "x"}}, true},
		{"one of several strings", `{"producer":["orders","billing"]}`,
			[]message{{"producer": "orders"}, {"producer": "billing"}}, []message{{"producer": "http"}}, true},
		{"two attributes, both required", `{"producer":["orders"],"type":["charge.captured"]}`,
			[]message{{"producer": "orders", "type": "charge.captured"}}, []message{{"producer": "orders", "type": "charge.declined"}, {"producer": "orders"}}, true},
		{"prefix", `{"type":[{"prefix":"charge."}]}`,
			[]message{{"type": "charge.held"}}, []message{{"type": "refund.created"}}, true},
		{"anything-but", `{"producer":[{"anything-but":["http"]}]}`,
			[]message{{"producer": "orders"}}, []message{{"producer": "http"}}, true},
		{"exists", `{"producer":[{"exists":false}]}`,
			[]message{{"type": "x"}}, []message{{"producer": "orders"}}, true},
		{"numeric range", `{"amount":[{"numeric":[">=",100,"<",200]}]}`,
			[]message{{"amount": "n:150"}}, []message{{"amount": "n:250"}}, true},
	}
	queues := make([]string, len(cases))
	for i, c := range cases {
		q, err := sqsc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(fmt.Sprintf("%s-%d", name, i))})
		if err != nil {
			t.Fatal(err)
		}
		queues[i] = aws.ToString(q.QueueUrl)
		a, err := sqsc.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := snsc.Subscribe(ctx, &sns.SubscribeInput{TopicArn: tp.TopicArn, Protocol: aws.String("sqs"), Endpoint: aws.String(a.Attributes["QueueArn"]),
			Attributes: map[string]string{"FilterPolicy": c.policy, "RawMessageDelivery": "true"}}); err != nil {
			t.Fatalf("%s: subscribe: %v", c.name, err)
		}
	}
	publish := func(body string, m message) {
		attrs := map[string]snstypes.MessageAttributeValue{}
		for k, v := range m {
			if n, ok := strings.CutPrefix(v, "n:"); ok {
				attrs[k] = snstypes.MessageAttributeValue{DataType: aws.String("Number"), StringValue: aws.String(n)}
			} else {
				attrs[k] = snstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
			}
		}
		if _, err := snsc.Publish(ctx, &sns.PublishInput{TopicArn: tp.TopicArn, Message: aws.String(body), MessageAttributes: attrs}); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range cases {
		for j, m := range c.pass {
			publish(fmt.Sprintf("case %d pass %d", i, j), m)
		}
		for j, m := range c.blocked {
			publish(fmt.Sprintf("case %d blocked %d", i, j), m)
		}
	}
	time.Sleep(time.Second)
	for i, c := range cases {
		got := map[string]bool{}
		for {
			out, err := sqsc.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queues[i]), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Messages) == 0 {
				break
			}
			for _, m := range out.Messages {
				got[aws.ToString(m.Body)] = true
				_, _ = sqsc.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(queues[i]), ReceiptHandle: m.ReceiptHandle})
			}
		}
		honoured := true
		for j := range c.pass {
			honoured = honoured && got[fmt.Sprintf("case %d pass %d", i, j)]
		}
		for j := range c.blocked {
			honoured = honoured && !got[fmt.Sprintf("case %d blocked %d", i, j)]
		}
		t.Logf("%s: honoured %v (received %v)", c.name, honoured, got)
		if honoured != c.honoured {
			t.Errorf("%s: honoured %v, docs/events.md says %v", c.name, honoured, c.honoured)
		}
	}
}

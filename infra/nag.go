package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/customresources"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/idempotent-payments/idempay/internal/deploy"
	"github.com/idempotent-payments/idempay/internal/route"
)

// The cdk-nag findings this design answers otherwise, each with its reason;
// TestNag fails on any other.

// suppressFunction: what every function's role and invocation need.
func suppressFunction(name string, fn awslambda.Function, policy awsiam.Policy) {
	suppress(policy, "AwsSolutions-IAM5", "X-Ray's PutTraceSegments and PutTelemetryRecords support no resource-level permissions; every other statement names its resources", "Resource::*")
	reason := map[string]string{
		"Charge": "invoked synchronously by API Gateway: a dead-letter queue applies only to asynchronous invocations, and every failure is an HTTP answer",
		"SqsConsumer": "invoked by the SQS event source mapping: a message that keeps failing goes to the queue's DLQ by its redrive policy " +
			"(" + strconv.Itoa(deploy.MaxReceiveCount) + " receives); a Lambda DLQ applies only to asynchronous invocations",
		"Reconciler": "invoked by the SQS event source mapping of the reconcile queue: a command that keeps failing goes to the DLQ by its redrive policy",
		"Sweeper": "invoked every minute by the schedule: a failed sweep is neither retried nor kept (the next run redoes it), " +
			"and the SweeperErrors and SweeperHeartbeat alarms report failures",
		"Publisher": "invoked by the DynamoDB stream's event source mapping, which retries a failing batch while its records are in the stream " +
			"and then sends the batch's metadata to the publisher-failures queue, its on-failure destination",
		"Operator": "invoked synchronously through its function URL by the operator's tool, which is told every failure and sends the decision again " +
			"under the same id: a dead-letter queue applies only to asynchronous invocations",
		"Match": "invoked daily by its schedule: a failed run is not kept, since the next day's run matches the days before it too, skipping those done, " +
			"and the MatchErrors alarm reports failures",
	}[name]
	suppress(fn, "Serverless-LambdaDLQ", reason)
}

// suppressStack: the stack's other answered findings.
func suppressStack(mappings []awslambda.EventSourceMapping, dlq, rejected, secret, schedule, topic, sweeperInvokeConfig constructs.IConstruct) {
	suppress(rejected, "Serverless-SQSRedrivePolicy", "the end of the line for refused commands, which are final: an operator reads them and tells the producer")
	suppress(rejected, "AwsSolutions-SQS3", "a dead-letter queue in all but the redrive: the consumers write each refused command to it with its reason")
	suppress(sweeperInvokeConfig, "Serverless-LambdaAsyncFailureDestination", "a failed sweep is not kept: the next run, a minute later, redoes it; the alarms report failures")
	for _, m := range mappings {
		suppress(m, "Serverless-LambdaEventSourceMappingDestination", "an SQS event source mapping supports no on-failure destination: failing messages go to the queue's DLQ by its redrive policy")
	}
	suppress(dlq, "Serverless-SQSRedrivePolicy", "this is the dead-letter queue: its messages are read by an operator, never redriven automatically")
	suppress(secret, "AwsSolutions-SMG4", "the acquirer issues and rotates its API key; put each new value in the secret first, and the functions re-read it "+
		"every 5 minutes and on the acquirer's first refusal (acquirerhttp.Credential)")
	suppress(schedule, "Serverless-EventBusDLQ", "a missed scheduled event needs no replay: the next one a minute later sweeps the same records; the heartbeat alarm fires after 5 minutes without a sweep")
	suppress(topic, "Serverless-SNSRedrivePolicy", "alarm e-mails SNS cannot deliver are retried by SNS; a queue of undelivered alarms would itself need an alarm, and the alarm states stay in CloudWatch")
}

// suppressMatch: the daily match's schedule and its invocations are not
// replayed; the next day's run takes a day a failed run left undone.
func suppressMatch(schedule, invokeConfig constructs.IConstruct) {
	reason := fmt.Sprintf("a missed or failed match needs no replay: each day's run matches the %d days before, skipping those done; "+
		"the function's errors alarm reports the failure", deploy.MatchLookback)
	suppress(schedule, "Serverless-EventBusDLQ", reason)
	suppress(invokeConfig, "Serverless-LambdaAsyncFailureDestination", reason)
}

// suppressOutcomes: the outcome queues are the subscribers' inboxes, and
// the other two are dead letters.
func suppressOutcomes(o outcomeTopic, publisherFailures constructs.IConstruct) {
	for _, q := range o.queues {
		reason := fmt.Sprintf("a subscriber's inbox: an event stays until the subscriber deletes it, for %d days; a redrive would move the events it fails on out of its sight, "+
			"and the OutcomesUnread alarm fires when one has waited %d days", int(*outcomeRetention.ToDays(nil)), outcomeUnreadAlarm/86400)
		suppress(q, "Serverless-SQSRedrivePolicy", reason)
		suppress(q, "AwsSolutions-SQS3", reason)
	}
	suppress(o.undelivered, "Serverless-SQSRedrivePolicy", "the dead-letter queue of the outcome subscriptions: an operator moves its events back once their queue is fixed")
	suppress(o.undelivered, "AwsSolutions-SQS3", "the dead-letter queue of the outcome subscriptions (their redrive policy names it), which cdk-nag does not recognize as one")
	suppress(publisherFailures, "Serverless-SQSRedrivePolicy", "the on-failure destination of the publisher's trigger: an operator republishes the charges it names")
	suppress(publisherFailures, "AwsSolutions-SQS3", "a dead-letter queue in all but the redrive: the stream trigger writes the metadata of each batch it gave up on to it")
}

func suppress(c constructs.IConstruct, id, reason string, appliesTo ...string) {
	s := &cdknag.NagPackSuppression{Id: jsii.String(id), Reason: jsii.String(reason)}
	if len(appliesTo) > 0 {
		var list []interface{}
		for _, a := range appliesTo {
			list = append(list, a)
		}
		s.AppliesTo = &list
	}
	cdknag.NagSuppressions_AddResourceSuppressions(c, &[]*cdknag.NagPackSuppression{s}, jsii.Bool(true))
}

// publicRouteReasons say why each route of route.Public has no
// authorizer; a public route without a reason here is a bug.
var publicRouteReasons = map[string]string{
	route.Health: "the health route, for people and monitors that carry no token (Route 53's checks read the sweeper's table probe instead): it makes one strongly consistent read of the table " +
		"and answers 200 or 503 with no body, so it reveals nothing and changes nothing; every other route has the JWT authorizer and its scope",
}

// suppressPublicRoute: key, a route of route.Public, has no authorizer.
func suppressPublicRoute(key string, r constructs.IConstruct) {
	reason, ok := publicRouteReasons[key]
	if !ok {
		panic("route " + key + " is public without a reason in publicRouteReasons")
	}
	suppress(r, "AwsSolutions-APIG4", reason)
}

// suppressReplicaLookup: the handler of CDK's AwsCustomResource, which
// reads a replica's stream ARN (replicaTable), is CDK's, one per stack.
func suppressReplicaLookup(stack awscdk.Stack) {
	id := "AWS" + strings.ReplaceAll(*customresources.AwsCustomResource_PROVIDER_FUNCTION_UUID(), "-", "")
	handler := stack.Node().TryFindChild(jsii.String(id))
	if handler == nil {
		panic("the AwsCustomResource handler is not " + id + " in stack " + *stack.StackName())
	}
	runtime := "the runtime of CDK's AwsCustomResource handler, which CDK chooses and upgrades with the library; " +
		"it runs once per deploy, to read this region's replica's stream ARN"
	suppress(handler, "AwsSolutions-L1", runtime)
	suppress(handler, "Serverless-LambdaLatestVersion", runtime)
	suppress(handler, "Serverless-LambdaDLQ", "invoked by CloudFormation alone, synchronously, once per deploy: a failure fails the deploy, "+
		"which CloudFormation rolls back; a dead-letter queue applies only to asynchronous invocations")
	suppress(handler, "Serverless-LambdaTracing", "a deploy-time lookup that CloudFormation invokes once per deploy, one DescribeTable; "+
		"its log group keeps what it did, and it serves no request to trace")
}

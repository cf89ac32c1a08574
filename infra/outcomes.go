package main

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssnssubscriptions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-payments/idempay/internal/deploy"
	"github.com/idempotent-payments/idempay/internal/event"
	"github.com/idempotent-payments/idempay/internal/streamfilter"
)

// outcomeRetention of the outcome queues and the publisher's failures.
var outcomeRetention = awscdk.Duration_Days(jsii.Number(14))

// outcomeTopic is the topic of the charge outcome events and what it
// delivers to.
type outcomeTopic struct {
	topic       awssns.Topic
	queues      map[string]awssqs.Queue // by subscriber
	undelivered awssqs.Queue            // the subscriptions' dead-letter queue
}

// outcomesTopic makes the topic, encrypted with SNS's AWS-managed key
// (whose key policy lets the account's principals use it through SNS, so
// the publishers need no KMS permission), TLS only. Each subscriber (a producer, or event.ProducerHTTP for a merchant
// backend) gets an outcome queue subscribed with its filter policy
// (event.FilterPolicy: the producer attribute is its name) and raw
// delivery, so a message is the event. The queue policy CDK writes for the
// subscription admits only the topic. What SNS cannot deliver to a queue
// (its policy or the queue broken) goes to the undelivered queue.
func outcomesTopic(stack awscdk.Stack, names deploy.Names, removal awscdk.RemovalPolicy, subscribers []string) outcomeTopic {
	o := outcomeTopic{queues: map[string]awssqs.Queue{}}
	o.undelivered = awssqs.NewQueue(stack, jsii.String("UndeliveredOutcomes"), &awssqs.QueueProps{
		QueueName: jsii.String(names.UndeliveredOutcomes()), Encryption: awssqs.QueueEncryption_SQS_MANAGED, EnforceSSL: jsii.Bool(true),
		RetentionPeriod: outcomeRetention, RemovalPolicy: removal,
	})
	o.topic = awssns.NewTopic(stack, jsii.String("Outcomes"), &awssns.TopicProps{
		TopicName: jsii.String(names.Outcomes()), EnforceSSL: jsii.Bool(true),
		MasterKey: awskms.Alias_FromAliasName(stack, jsii.String("OutcomesKey"), jsii.String("alias/aws/sns")),
	})
	for _, s := range subscribers {
		q := awssqs.NewQueue(stack, jsii.String("Outcomes-"+s), &awssqs.QueueProps{
			QueueName: jsii.String(names.Outcome(s)), Encryption: awssqs.QueueEncryption_SQS_MANAGED, EnforceSSL: jsii.Bool(true),
			RetentionPeriod: outcomeRetention, RemovalPolicy: removal,
		})
		o.topic.AddSubscription(awssnssubscriptions.NewSqsSubscription(q, &awssnssubscriptions.SqsSubscriptionProps{
			RawMessageDelivery: jsii.Bool(true), DeadLetterQueue: o.undelivered,
			FilterPolicy: &map[string]awssns.SubscriptionFilter{
				event.AttrProducer: awssns.SubscriptionFilter_StringFilter(&awssns.StringConditions{Allowlist: jsii.Strings(s)}),
			},
		}))
		o.queues[s] = q
	}
	return o
}

// publisherMaxRecordAge: the trigger gives a failing batch up when its
// records are this old and sends its place in the stream to the failures
// queue, while the stream still holds the records for 18 hours more (it
// keeps them 24): time to republish them from the stream.
var publisherMaxRecordAge = awscdk.Duration_Hours(jsii.Number(6))

// streamRetentionHours is how long DynamoDB Streams keeps a record.
const streamRetentionHours = 24

// publisherTrigger is the publisher's event source mapping on the stream
// of the table in the stack's region (streamArn): filtered as the region's
// publisher is (streamfilter.For: in the multi-region mode its own rows),
// in order, from the stream's start, bisecting a failing batch and
// retrying it without a retry limit until its records are
// publisherMaxRecordAge old, then the batch's metadata to failures.
func publisherTrigger(stack awscdk.Stack, cfg Config, streamArn *string, publisher function, failures awssqs.Queue) awslambda.EventSourceMapping {
	var filters []*map[string]interface{}
	for _, f := range publisherFilters(cfg).Patterns() {
		var pattern map[string]interface{}
		if err := json.Unmarshal([]byte(f), &pattern); err != nil {
			panic(err) // the filters are the code's own: a bug
		}
		filters = append(filters, awslambda.FilterCriteria_Filter(&pattern))
	}
	m := awslambda.NewEventSourceMapping(stack, jsii.String("PublisherMapping"), &awslambda.EventSourceMappingProps{
		Target: publisher.fn, EventSourceArn: streamArn, StartingPosition: awslambda.StartingPosition_TRIM_HORIZON,
		BatchSize: jsii.Number(float64(deployed.StreamBatchSize)), BisectBatchOnError: jsii.Bool(true), ReportBatchItemFailures: jsii.Bool(true),
		ParallelizationFactor: jsii.Number(1), Filters: &filters, MaxRecordAge: publisherMaxRecordAge,
	})
	// The destination is set on the resource, not as OnFailure, whose
	// grant would add sqs:GetQueueAttributes and sqs:GetQueueUrl, which
	// nothing calls: the publisher's policy has sqs:SendMessage on it.
	m.Node().DefaultChild().(awslambda.CfnEventSourceMapping).SetDestinationConfig(&awslambda.CfnEventSourceMapping_DestinationConfigProperty{
		OnFailure: &awslambda.CfnEventSourceMapping_OnFailureProperty{Destination: failures.QueueArn()},
	})
	m.Node().AddDependency(publisher.policy)
	return m
}

// publisherFilters are the filters of cfg's publisher: its region's in the
// multi-region mode, the one region's otherwise.
func publisherFilters(cfg Config) streamfilter.Set {
	if cfg.multiRegion() {
		return streamfilter.For(cfg.Region)
	}
	return streamfilter.For("")
}

// streamActions are what the publisher's trigger reads the stream with.
var streamActions = []string{"dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator", "dynamodb:ListStreams"}

// outcomeReadActions are what a producer's role may do on its outcome queue.
var outcomeReadActions = []string{"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility", "sqs:GetQueueAttributes"}

// grantOutcomes lets each producer's role read its own outcome queue.
func grantOutcomes(stack awscdk.Stack, producers []producerQueue, outcomes map[string]awssqs.Queue) {
	for _, p := range producers {
		awsiam.NewPolicy(stack, jsii.String("Producer-"+p.Name+"-Outcomes"), &awsiam.PolicyProps{
			Roles: &[]awsiam.IRole{p.role},
			Statements: &[]awsiam.PolicyStatement{awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Actions: jsii.Strings(outcomeReadActions...), Resources: &[]*string{outcomes[p.Name].QueueArn()},
			})},
		})
	}
}

// subscribersOf are the outcome topic's subscribers in cfg
// (event.Subscribers).
func subscribersOf(cfg Config) []string {
	var producers []string
	for _, p := range cfg.Producers {
		producers = append(producers, p.Name)
	}
	return event.Subscribers(producers...)
}

// crossRegionOutcomes subscribes, in the multi-region mode, every region's
// outcome queues to every other region's topic: each row's event is
// published once, by one region, and reaches each subscriber's queue in
// every region, so a producer reads its home region's queue and, after
// failing over, the queue of the region it fails over to.
//
// A subscription is made once, by the later of its two regions' stacks
// (cfg.Regions' order, the order they deploy in): that stack subscribes
// its own queues to each earlier region's topic (the subscription lives in
// the topic's region, CloudFormation's Region), and each earlier region's
// queues to its own topic; both ends exist by then. Names are fixed
// (deploy.Names of each region's stack), so no stack refers to another's
// resources. Each queue's policy admits every other region's topic, those
// deployed later included, as the SNS principal of that pair of regions
// (snsPrincipal); what SNS cannot deliver goes to the undelivered queue of
// the topic's region. If an earlier region's topic is ever replaced, the
// later stacks' subscriptions to it go with it: deploy those stacks again.
func crossRegionOutcomes(stack awscdk.Stack, cfg Config, o outcomeTopic) {
	own := slices.Index(cfg.Regions, cfg.Region)
	for _, s := range slices.Sorted(maps.Keys(o.queues)) {
		for _, r := range cfg.Regions {
			if r == cfg.Region {
				continue
			}
			o.queues[s].AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Sid:        jsii.String("TopicOf-" + r),
				Principals: &[]awsiam.IPrincipal{awsiam.NewServicePrincipal(jsii.String(snsPrincipal(r, cfg.Region)), nil)},
				Actions:    jsii.Strings("sqs:SendMessage"), Resources: &[]*string{o.queues[s].QueueArn()},
				Conditions: &map[string]interface{}{"ArnEquals": map[string]interface{}{"aws:SourceArn": regionalArn("sns", r, regionNames(cfg, r).Outcomes())}},
			}))
		}
		var policy map[string]any
		if err := json.Unmarshal([]byte(event.FilterPolicy(s)), &policy); err != nil {
			panic(err) // the code's own policy: a bug
		}
		for _, r := range cfg.Regions[:own] {
			theirs := regionNames(cfg, r)
			awssns.NewCfnSubscription(stack, jsii.String("OutcomesTo-"+r+"-"+s), &awssns.CfnSubscriptionProps{
				TopicArn: o.topic.TopicArn(), Protocol: jsii.String("sqs"), Endpoint: regionalArn("sqs", r, theirs.Outcome(s)),
				RawMessageDelivery: jsii.Bool(true), FilterPolicy: policy,
				RedrivePolicy: map[string]any{"deadLetterTargetArn": o.undelivered.QueueArn()},
			})
			awssns.NewCfnSubscription(stack, jsii.String("OutcomesFrom-"+r+"-"+s), &awssns.CfnSubscriptionProps{
				TopicArn: regionalArn("sns", r, theirs.Outcomes()), Region: jsii.String(r), Protocol: jsii.String("sqs"), Endpoint: o.queues[s].QueueArn(),
				RawMessageDelivery: jsii.Bool(true), FilterPolicy: policy,
				RedrivePolicy: map[string]any{"deadLetterTargetArn": regionalArn("sqs", r, theirs.UndeliveredOutcomes())},
			})
		}
	}
}

// snsOptIn are the regions SNS's cross-region delivery treats as opt-in
// (Amazon SNS Developer Guide, "Sending Amazon SNS messages to an Amazon
// SQS queue or AWS Lambda function in a different Region", its table of
// opt-in Regions): ap-northeast-3 among them, though it is in a region set
// of multi-region strong consistency.
var snsOptIn = map[string]bool{
	"af-south-1": true, "ap-east-1": true, "ap-south-2": true, "ap-southeast-3": true, "ap-southeast-4": true, "ap-northeast-3": true,
	"eu-south-1": true, "eu-south-2": true, "eu-central-2": true, "il-central-1": true, "me-south-1": true, "me-central-1": true,
}

// snsPrincipal is the principal a queue in queueRegion admits for a topic
// in topicRegion (the same guide): the global one between regions enabled
// by default, and where an opt-in region takes part, the regional one of
// the queue's region if it is opt-in, else of the topic's.
func snsPrincipal(topicRegion, queueRegion string) string {
	switch {
	case snsOptIn[queueRegion]:
		return "sns." + queueRegion + ".amazonaws.com"
	case snsOptIn[topicRegion]:
		return "sns." + topicRegion + ".amazonaws.com"
	}
	return "sns.amazonaws.com"
}

// regionNames are the queue and topic names of region's stack.
func regionNames(cfg Config, region string) deploy.Names {
	return deploy.Names{Prefix: cfg.StackName(region)}
}

// regionalArn is the ARN of the named resource of service in region, in
// the stack's account and partition.
func regionalArn(service, region, name string) *string {
	return awscdk.Fn_Sub(jsii.String("arn:${AWS::Partition}:"+service+":"+region+":${AWS::AccountId}:"+name), nil)
}

package main

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2authorizers"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2integrations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-payments/idempay/internal/command"
	"github.com/idempotent-payments/idempay/internal/deploy"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/route"
	"github.com/idempotent-payments/idempay/internal/tabledef"
)

// producerQueue is a producer with its charge-commands queue and its role.
type producerQueue struct {
	Producer
	queue awssqs.Queue
	role  awsiam.Role
}

// StackAssets says where the built bootstraps are: Dir/<function>/bootstrap.
type StackAssets struct{ Dir string }

// NewStack defines everything one environment needs in cfg.Region: in the
// multi-region mode, one of its stacks (NewStacks).
func NewStack(scope constructs.Construct, id string, cfg Config, assets StackAssets) awscdk.Stack {
	stack := awscdk.NewStack(scope, jsii.String(id), &awscdk.StackProps{
		Description: jsii.String("idempay " + cfg.where(" ") + ": idempotent charges on API Gateway, Lambda, SQS and DynamoDB"),
		Env:         &awscdk.Environment{Account: jsii.String(cfg.Account), Region: jsii.String(cfg.Region)},
	})
	removal := awscdk.RemovalPolicy_DESTROY
	if cfg.Retain {
		removal = awscdk.RemovalPolicy_RETAIN
	}

	table := stackTable(stack, cfg, removal)
	names := deploy.Names{Prefix: id}
	q := newCommandQueues(stack, cfg, names, removal)
	dlq, rejected, producers, reconcileQueue := q.dlq, q.rejected, q.producers, q.reconcile
	outcomes := outcomesTopic(stack, names, removal, subscribersOf(cfg))
	grantOutcomes(stack, producers, outcomes.queues)
	if cfg.multiRegion() {
		crossRegionOutcomes(stack, cfg, outcomes)
	}
	publisherFailures := awssqs.NewQueue(stack, jsii.String("PublisherFailures"), &awssqs.QueueProps{
		QueueName: jsii.String(names.PublisherFailures()), Encryption: awssqs.QueueEncryption_SQS_MANAGED, EnforceSSL: jsii.Bool(true),
		RetentionPeriod: outcomeRetention, RemovalPolicy: removal,
	})
	secret := awssecretsmanager.NewSecret(stack, jsii.String("AcquirerCredential"), &awssecretsmanager.SecretProps{
		Description:   jsii.String("The acquirer API credential of idempay " + cfg.Name + ". Put the real value after the first deploy."),
		RemovalPolicy: removal,
	})
	fns := newFunctions(stack, cfg, assets, removal, dependencies{
		table: table, queues: q, outcomes: outcomes, publisherFailures: publisherFailures, secret: secret,
	})
	charge, consumer, reconciler, sweeper, publisher := fns.charge, fns.consumer, fns.reconciler, fns.sweeper, fns.publisher
	mappings, schedule := newTriggers(stack, cfg, fns, q)
	daily := matchSchedule(stack, cfg, fns.match)

	api, stage := newAPI(stack, cfg, removal, charge.fn)
	probe := tableProbeAlarm(stack, cfg)
	if cfg.multiRegion() {
		newDomain(stack, cfg, api, stage, probe)
	}
	queues := map[string]awssqs.Queue{"reconcile": reconcileQueue}
	for _, p := range producers {
		queues[p.Name] = p.queue
	}
	topic := watch(stack, cfg, watched{
		dlq: dlq, rejected: rejected, queues: queues, api: api, table: table,
		functions: []watchedFunction{
			{deploy.FunctionCharge, charge, timeoutOf(deploy.FunctionCharge)}, {deploy.FunctionConsumer, consumer, timeoutOf(deploy.FunctionConsumer)},
			{deploy.FunctionReconciler, reconciler, timeoutOf(deploy.FunctionReconciler)}, {deploy.FunctionSweeper, sweeper, timeoutOf(deploy.FunctionSweeper)},
			{deploy.FunctionPublisher, publisher, timeoutOf(deploy.FunctionPublisher)}, {deploy.FunctionOperator, fns.operator.fn, timeoutOf(deploy.FunctionOperator)},
			{deploy.FunctionMatch, fns.match, timeoutOf(deploy.FunctionMatch)},
		},
		outcomes: outcomes, publisher: publisher, publisherFailures: publisherFailures, tableProbe: probe,
	})
	suppressStack(mappings, dlq, rejected, secret, schedule, topic, sweeper.fn.Node().FindChild(jsii.String("EventInvokeConfig")))
	suppressMatch(daily, fns.match.fn.Node().FindChild(jsii.String("EventInvokeConfig")))
	suppressOutcomes(outcomes, publisherFailures)

	awscdk.NewCfnOutput(stack, jsii.String("ApiUrl"), &awscdk.CfnOutputProps{Value: api.ApiEndpoint(), Description: jsii.String("Base URL of the charges API")})
	for _, p := range producers {
		awscdk.NewCfnOutput(stack, jsii.String("ChargeCommandsQueueUrl-"+p.Name), &awscdk.CfnOutputProps{Value: p.queue.QueueUrl(), Description: jsii.String("Producer " + p.Name + " sends charge commands here")})
		awscdk.NewCfnOutput(stack, jsii.String("ProducerRoleArn-"+p.Name), &awscdk.CfnOutputProps{Value: p.role.RoleArn(), Description: jsii.String("The only role that may send to producer " + p.Name + "'s queue")})
	}
	awscdk.NewCfnOutput(stack, jsii.String("AcquirerSecretArn"), &awscdk.CfnOutputProps{Value: secret.SecretArn()})
	awscdk.NewCfnOutput(stack, jsii.String("OutcomeTopicArn"), &awscdk.CfnOutputProps{Value: outcomes.topic.TopicArn(), Description: jsii.String("The charge outcome events")})
	for _, s := range slices.Sorted(maps.Keys(outcomes.queues)) { // in order, so the template is the same at every synthesis
		awscdk.NewCfnOutput(stack, jsii.String("OutcomeQueueUrl-"+s), &awscdk.CfnOutputProps{Value: outcomes.queues[s].QueueUrl(), Description: jsii.String("Subscriber " + s + " receives its outcome events here")})
	}
	awscdk.NewCfnOutput(stack, jsii.String("TableName"), &awscdk.CfnOutputProps{Value: table.name})
	return stack
}

// commandQueues are the queues of commands: one per producer, the
// reconcile queue, and the two dead ends (the DLQ, the rejected commands).
type commandQueues struct {
	dlq, rejected, reconcile awssqs.Queue
	producers                []producerQueue
}

// newCommandQueues makes the command queues, each producer's with the role
// that alone may send to it.
func newCommandQueues(stack awscdk.Stack, cfg Config, names deploy.Names, removal awscdk.RemovalPolicy) commandQueues {
	// The queues are named (deploy.Names, as the local stack's), so the DLQ
	// can name the queues it takes dead letters from without a cycle.
	arnOf := func(name string) *string {
		return awscdk.Fn_Sub(jsii.String("arn:${AWS::Partition}:sqs:${AWS::Region}:${AWS::AccountId}:"+name), nil)
	}
	var sourceNames []string
	for _, p := range cfg.Producers {
		sourceNames = append(sourceNames, names.Charges(p.Name))
	}
	sourceNames = append(sourceNames, names.Reconcile())
	var sourceARNs []*string
	for _, n := range sourceNames {
		sourceARNs = append(sourceARNs, arnOf(n))
	}
	dlq := awssqs.NewQueue(stack, jsii.String("ChargeCommandsDLQ"), &awssqs.QueueProps{
		QueueName:  jsii.String(names.DLQ()),
		Encryption: awssqs.QueueEncryption_SQS_MANAGED, EnforceSSL: jsii.Bool(true),
		RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)), RemovalPolicy: removal,
	})
	// Only the command queues may use it as their DLQ. CDK's
	// RedriveAllowPolicy takes queue constructs, which would be a cycle
	// (each refers to the DLQ): the named ARNs go in by an override.
	dlq.Node().DefaultChild().(awssqs.CfnQueue).AddPropertyOverride(jsii.String("RedriveAllowPolicy"), map[string]any{
		"redrivePermission": "byQueue", "sourceQueueArns": sourceARNs,
	})
	// The consumers' refusals, each with reject_code and reject_reason: kept
	// apart from the DLQ so a refusal (tell the producer) and a command that
	// ran out of receives (a real failure) alarm apart.
	rejected := awssqs.NewQueue(stack, jsii.String("RejectedCommands"), &awssqs.QueueProps{
		QueueName:  jsii.String(names.Rejected()),
		Encryption: awssqs.QueueEncryption_SQS_MANAGED, EnforceSSL: jsii.Bool(true),
		RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)), RemovalPolicy: removal,
	})
	commandQueue := func(id, name string) awssqs.Queue {
		return awssqs.NewQueue(stack, jsii.String(id), &awssqs.QueueProps{
			QueueName:  jsii.String(name),
			Encryption: awssqs.QueueEncryption_SQS_MANAGED, EnforceSSL: jsii.Bool(true),
			VisibilityTimeout: awscdk.Duration_Seconds(jsii.Number(deployed.Queues.Visibility.Seconds())),
			DeadLetterQueue:   &awssqs.DeadLetterQueue{Queue: dlq, MaxReceiveCount: jsii.Number(float64(deployed.Queues.MaxReceives))},
			RemovalPolicy:     removal,
		})
	}
	// One queue per producer, which only its role may send to: the queue a
	// command arrives on is its producer (command.Inbox).
	var producers []producerQueue
	for _, p := range cfg.Producers {
		q := commandQueue("ChargeCommands-"+p.Name, names.Charges(p.Name))
		var assumedBy awsiam.IPrincipal = awsiam.NewAccountRootPrincipal()
		if p.AssumedBy != "" {
			assumedBy = awsiam.NewArnPrincipal(jsii.String(p.AssumedBy))
		} else { // dev only: ConfigFor requires a principal elsewhere
			awscdk.Annotations_Of(stack).AddWarningV2(jsii.String("idempay:producer-trusts-account"), jsii.String(
				"producer "+p.Name+"'s role trusts the whole account "+cfg.Account+": any principal allowed sts:AssumeRole on it can charge its accounts. "+
					"Name its principal with -c "+InputProducerPrincipal+p.Name+"=arn:aws:iam::...:role/... (required in staging and prod)"), nil)
		}
		role := awsiam.NewRole(stack, jsii.String("Producer-"+p.Name+"-Role"), &awsiam.RoleProps{
			AssumedBy:   assumedBy,
			Description: jsii.String("Sends charge commands for producer " + p.Name + " of idempay " + cfg.Name),
		})
		awsiam.NewPolicy(stack, jsii.String("Producer-"+p.Name+"-Policy"), &awsiam.PolicyProps{
			Roles: &[]awsiam.IRole{role},
			Statements: &[]awsiam.PolicyStatement{awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Actions: jsii.Strings("sqs:SendMessage"), Resources: &[]*string{q.QueueArn()},
			})},
		})
		onlySender(q, role)
		producers = append(producers, producerQueue{Producer: p, queue: q, role: role})
	}
	reconcileQueue := commandQueue("ReconcileCommands", names.Reconcile())
	return commandQueues{dlq: dlq, rejected: rejected, reconcile: reconcileQueue, producers: producers}
}

// dependencies are what the functions are wired to.
type dependencies struct {
	table             tableRef
	queues            commandQueues
	outcomes          outcomeTopic
	publisherFailures awssqs.Queue
	secret            awssecretsmanager.Secret
}

// stackFunctions are the stack's functions (deploy.Deployed's).
type stackFunctions struct {
	charge, consumer, reconciler, sweeper, publisher, match function
	operator                                                operatorChannel
}

// newFunctions makes the functions, each with its environment and the
// least its role needs, and the publisher's stream trigger.
func newFunctions(stack awscdk.Stack, cfg Config, assets StackAssets, removal awscdk.RemovalPolicy, d dependencies) stackFunctions {
	table, secret, outcomes, publisherFailures := d.table, d.secret, d.outcomes, d.publisherFailures
	rejected, producers, reconcileQueue := d.queues.rejected, d.queues.producers, d.queues.reconcile
	common := map[string]*string{
		deploy.EnvTableName: table.name, deploy.EnvAcquirerURL: jsii.String(cfg.AcquirerURL), deploy.EnvAcquirerID: jsii.String(cfg.AcquirerID),
		deploy.EnvAcquirerSecret: secret.SecretArn(), deploy.EnvAccountClaim: jsii.String(cfg.AccountClaim),
		deploy.EnvRetentionDays: jsii.String(strconv.Itoa(cfg.RetentionDays)), deploy.EnvLeaseMargin: jsii.String(deployed.Protocol.LeaseMargin.String()),
		deploy.EnvInTransitBound: jsii.String(deployed.Protocol.InTransitBound.String()), deploy.EnvAcquirerTimeout: jsii.String(deployed.Protocol.AcquirerTimeout.String()),
		deploy.EnvClockSkew: jsii.String(deployed.Protocol.ClockSkew.String()), deploy.EnvEnvironment: jsii.String(cfg.Name),
	}
	if cfg.multiRegion() { // the charging functions write their region on each ledger row
		common[deploy.EnvTableMode] = jsii.String(string(cfg.Table))
	}
	with := func(extra map[string]*string) *map[string]*string {
		env := map[string]*string{}
		for k, v := range common {
			env[k] = v
		}
		for k, v := range extra {
			env[k] = v
		}
		return &env
	}
	tableArn := table.arn
	indexArn := jsii.String(*tableArn + "/index/" + tabledef.InflightIndex)
	// Rows by prefix: a role may touch only the rows it owns. Claims and
	// completions put (and read) records and ledger rows, and nothing else;
	// take-overs, completions and releases update and delete records;
	// nothing updates a ledger row once written. A hold puts a held marker
	// at a ledger row's key and the row's write deletes it, so a role that
	// writes ledger rows may delete under their prefix too. IAM cannot
	// require a condition on the item: a role that may put or delete
	// ledger rows could overwrite or delete one, and the code's conditional
	// writes (a put if absent, a delete of a held marker only) are what
	// prevent it.
	onlyRecords := leadingKeys(idem.RecordPrefix)
	onlyLedger := leadingKeys(tabledef.LedgerPrefix)
	recordsAndLedger := leadingKeys(idem.RecordPrefix, tabledef.LedgerPrefix)
	recordStatements := []statement{
		{actions: []string{"dynamodb:PutItem", "dynamodb:GetItem"}, resources: []*string{tableArn}, conditions: recordsAndLedger},
		{actions: []string{"dynamodb:UpdateItem"}, resources: []*string{tableArn}, conditions: onlyRecords},
		{actions: []string{"dynamodb:DeleteItem"}, resources: []*string{tableArn}, conditions: recordsAndLedger},
	}
	refundStatements := refundGrants(tableArn)
	consumeActions := []string{"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ChangeMessageVisibility"}

	charge := newFunction(stack, "Charge", cfg, assets, removal, timeoutOf(deploy.FunctionCharge), with(nil), slices.Concat(recordStatements, refundStatements, []statement{
		{actions: []string{"secretsmanager:GetSecretValue"}, resources: []*string{secret.SecretArn()}},
	}))
	lineMetricFilters(stack, cfg, charge.logs)
	if cfg.ChargeReservedConcurrency > 0 {
		charge.fn.Node().DefaultChild().(awslambda.CfnFunction).SetReservedConcurrentExecutions(jsii.Number(float64(cfg.ChargeReservedConcurrency)))
	}
	var sources []command.Inbox
	var producerARNs []*string
	for _, p := range producers {
		sources = append(sources, command.Inbox{ARN: *p.queue.QueueArn(), URL: *p.queue.QueueUrl(), Producer: p.Name, Accounts: p.Accounts})
		producerARNs = append(producerARNs, p.queue.QueueArn())
	}
	consumer := newFunction(stack, "SqsConsumer", cfg, assets, removal, timeoutOf(deploy.FunctionConsumer),
		with(map[string]*string{deploy.EnvCommandSources: encodeSources(sources), deploy.EnvRejectedQueueURL: rejected.QueueUrl(), deploy.EnvOutcomeTopicARN: outcomes.topic.TopicArn()}),
		slices.Concat(recordStatements, refundStatements, []statement{
			{actions: []string{"secretsmanager:GetSecretValue"}, resources: []*string{secret.SecretArn()}},
			{actions: consumeActions, resources: producerARNs},
			{actions: []string{"sqs:SendMessage"}, resources: []*string{rejected.QueueArn()}},
			{actions: []string{"sns:Publish"}, resources: []*string{outcomes.topic.TopicArn()}}, // its rejections
		}))
	// The reconciler is the same code reading only the reconcile queue, so
	// it takes reconcile commands only. Its role backs that up: it may put
	// the ledger rows a completion writes first, but no idempotency record, so the
	// claim path (a conditional PutItem) fails for it. It still updates and
	// deletes records (take-over, completion, release), so the role alone
	// does not prove it never starts a charge; the code's refusal does.
	reconciler := newFunction(stack, "Reconciler", cfg, assets, removal, timeoutOf(deploy.FunctionReconciler),
		with(map[string]*string{
			deploy.EnvCommandSources:   encodeSources([]command.Inbox{{ARN: *reconcileQueue.QueueArn(), URL: *reconcileQueue.QueueUrl(), Reconcile: true}}),
			deploy.EnvRejectedQueueURL: rejected.QueueUrl(),
		}), slices.Concat([]statement{
			{actions: []string{"dynamodb:GetItem", "dynamodb:DeleteItem"}, resources: []*string{tableArn}, conditions: recordsAndLedger},
			{actions: []string{"dynamodb:UpdateItem"}, resources: []*string{tableArn}, conditions: onlyRecords},
			{actions: []string{"dynamodb:PutItem"}, resources: []*string{tableArn}, conditions: onlyLedger},
			{actions: []string{"secretsmanager:GetSecretValue"}, resources: []*string{secret.SecretArn()}},
			{actions: consumeActions, resources: []*string{reconcileQueue.QueueArn()}},
			{actions: []string{"sqs:SendMessage"}, resources: []*string{rejected.QueueArn()}},
		}, refundStatements))
	sweeperEnv := map[string]*string{
		deploy.EnvTableName: table.name, deploy.EnvReconcileQueueURL: reconcileQueue.QueueUrl(), deploy.EnvEnvironment: jsii.String(cfg.Name),
		deploy.EnvInTransitBound: jsii.String(deployed.Protocol.InTransitBound.String()), deploy.EnvClockSkew: jsii.String(deployed.Protocol.ClockSkew.String()),
	}
	query := statement{actions: []string{"dynamodb:Query"}, resources: []*string{indexArn, jsii.String(*tableArn + "/index/" + tabledef.AuthorizationIndex)}}
	var purge []statement
	if !cfg.tableTTL() {
		query.resources = append(query.resources, jsii.String(*tableArn+"/index/"+tabledef.ExpiryIndex))
		purge = purgeAccess(cfg, sweeperEnv, tableArn)
	}
	publisherEnv := map[string]*string{deploy.EnvOutcomeTopicARN: outcomes.topic.TopicArn(), deploy.EnvEnvironment: jsii.String(cfg.Name)}
	var takeOver, mark []statement
	if cfg.multiRegion() {
		query.resources = append(query.resources, jsii.String(*tableArn+"/index/"+tabledef.UnpublishedIndex))
		takeOver = takeOverAccess(cfg, sweeperEnv, tableArn, outcomes.topic.TopicArn())
		mark = markAccess(cfg, publisherEnv, table.name, tableArn)
	}
	sweeper := newFunction(stack, "Sweeper", cfg, assets, removal, timeoutOf(deploy.FunctionSweeper), &sweeperEnv, slices.Concat([]statement{
		query,
		{actions: []string{"dynamodb:UpdateItem"}, resources: []*string{tableArn}, conditions: onlyRecords},
		// The expiry (capture.Expiry): a lapsed authorization's balance
		// closed, then its row unlisted (unlistStatement). The balance's
		// write is limited to balances, not to the capture side's
		// attributes: its refusal returns the item (ALL_OLD), which an
		// attribute-limited grant was not shown to allow, so the code's
		// one conditional write is what keeps it to the capture side.
		{actions: []string{"dynamodb:UpdateItem"}, resources: []*string{tableArn}, conditions: leadingKeys(tabledef.BalancePrefix)},
		unlistStatement(tableArn),
		// The table probe's read (sweep.Sweeper.Probe): the one key no
		// record has, and no other.
		{actions: []string{"dynamodb:GetItem"}, resources: []*string{tableArn}, conditions: map[string]any{
			"ForAllValues:StringEquals": map[string]any{"dynamodb:LeadingKeys": []string{idem.SentinelPK}},
		}},
		{actions: []string{"sqs:SendMessage"}, resources: []*string{reconcileQueue.QueueArn()}},
	}, purge, takeOver))
	onlySender(reconcileQueue, sweeper.role)
	publisher := newFunction(stack, "Publisher", cfg, assets, removal, timeoutOf(deploy.FunctionPublisher), &publisherEnv, append([]statement{
		{actions: streamActions, resources: []*string{table.streamArn}},
		{actions: []string{"sns:Publish"}, resources: []*string{outcomes.topic.TopicArn()}},
		{actions: []string{"sqs:SendMessage"}, resources: []*string{publisherFailures.QueueArn()}}, // the trigger's on-failure destination
	}, mark...))
	publisherTrigger(stack, cfg, table.streamArn, publisher, publisherFailures)
	operator := newOperatorChannel(stack, cfg, assets, removal, with(nil), table, outcomes.topic.TopicArn(), publisherFailures, secret.SecretArn())
	// The daily match (package match): a day's rows from the day index, a
	// row or a charge's balance by its key, the acquirer's report; it
	// writes only its own items, the days' claims and the lines it keeps.
	match := newFunction(stack, "Match", cfg, assets, removal, timeoutOf(deploy.FunctionMatch),
		with(map[string]*string{deploy.EnvMatchGrace: jsii.String(deployed.Match.Grace.String())}), []statement{
			{actions: []string{"dynamodb:Query"}, resources: []*string{jsii.String(*tableArn + "/index/" + tabledef.DayIndex)}},
			{actions: []string{"dynamodb:GetItem"}, resources: []*string{tableArn},
				conditions: leadingKeys(slices.Concat([]string{tabledef.BalancePrefix, tabledef.MatchPrefix}, tabledef.RowPrefixes())...)},
			{actions: []string{"dynamodb:PutItem", "dynamodb:UpdateItem"}, resources: []*string{tableArn}, conditions: leadingKeys(tabledef.MatchPrefix)},
			{actions: []string{"secretsmanager:GetSecretValue"}, resources: []*string{secret.SecretArn()}},
		})

	return stackFunctions{charge: charge, consumer: consumer, reconciler: reconciler, sweeper: sweeper, publisher: publisher, operator: operator, match: match}
}

// newTriggers makes the consumers' event source mappings and the sweeper's
// schedule.
func newTriggers(stack awscdk.Stack, cfg Config, fns stackFunctions, q commandQueues) ([]awslambda.EventSourceMapping, awsevents.Rule) {
	consumer, reconciler, sweeper := fns.consumer, fns.reconciler, fns.sweeper
	producers, reconcileQueue := q.producers, q.reconcile
	// The consumers' triggers; plain mappings, since SqsEventSource's grant
	// would add sqs:GetQueueUrl, which nothing calls.
	var mappings []awslambda.EventSourceMapping
	for _, p := range producers {
		mapping := awslambda.NewEventSourceMapping(stack, jsii.String("ChargeCommandsMapping-"+p.Name), &awslambda.EventSourceMappingProps{
			Target: consumer.fn, EventSourceArn: p.queue.QueueArn(), BatchSize: jsii.Number(float64(deployed.Queues.BatchSize)),
			ReportBatchItemFailures: jsii.Bool(true), MaxConcurrency: jsii.Number(float64(cfg.ConsumerMaxConcurrency)),
		})
		mapping.Node().AddDependency(consumer.policy)
		mappings = append(mappings, mapping)
	}
	mapping := awslambda.NewEventSourceMapping(stack, jsii.String("ReconcileCommandsMapping"), &awslambda.EventSourceMappingProps{
		Target: reconciler.fn, EventSourceArn: reconcileQueue.QueueArn(), BatchSize: jsii.Number(float64(deployed.Queues.BatchSize)),
		ReportBatchItemFailures: jsii.Bool(true), MaxConcurrency: jsii.Number(float64(cfg.ConsumerMaxConcurrency)),
	})
	mapping.Node().AddDependency(reconciler.policy)
	mappings = append(mappings, mapping)

	// A failed or late sweep is not retried: the next one, a minute later,
	// does its work, and two never overlap on Lambda's retries.
	sweeper.fn.ConfigureAsyncInvoke(&awslambda.EventInvokeConfigOptions{
		RetryAttempts: jsii.Number(0), MaxEventAge: awscdk.Duration_Seconds(jsii.Number(60)),
	})
	schedule := awsevents.NewRule(stack, jsii.String("SweeperSchedule"), &awsevents.RuleProps{
		Description: jsii.String("Sweep stale in-flight records every minute"),
		Schedule:    awsevents.Schedule_Rate(awscdk.Duration_Seconds(jsii.Number(deployed.SweepInterval.Seconds()))),
		Targets:     &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(sweeper.fn, &awseventstargets.LambdaFunctionProps{RetryAttempts: jsii.Number(0)})},
	})
	return mappings, schedule
}

// matchSchedule is the daily match's schedule: every day at cfg.MatchAt
// after midnight UTC. A failed run is not retried by Lambda: the next
// day's run takes the day again (deploy.MatchLookback).
func matchSchedule(stack awscdk.Stack, cfg Config, match function) awsevents.Rule {
	match.fn.ConfigureAsyncInvoke(&awslambda.EventInvokeConfigOptions{RetryAttempts: jsii.Number(0)})
	at := cfg.MatchAt
	return awsevents.NewRule(stack, jsii.String("MatchSchedule"), &awsevents.RuleProps{
		Description: jsii.String("Match the acquirer's report of the day before with the books"),
		Schedule: awsevents.Schedule_Cron(&awsevents.CronOptions{
			Hour: jsii.String(strconv.Itoa(int(at.Hours()))), Minute: jsii.String(strconv.Itoa(int(at.Minutes()) % 60)),
		}),
		Targets: &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(match.fn, &awseventstargets.LambdaFunctionProps{RetryAttempts: jsii.Number(0)})},
	})
}

// tableRef is the table as a stack's functions, triggers and alarms use
// it, in the stack's own region: its name, its ARN and its stream's ARN.
type tableRef struct{ name, arn, streamArn *string }

// stackTable is the stack's table: the single-region table, or in the
// multi-region mode the global table (in the first region's stack) or its
// replica in the stack's region.
func stackTable(stack awscdk.Stack, cfg Config, removal awscdk.RemovalPolicy) tableRef {
	switch {
	case !cfg.multiRegion():
		t := newTable(stack, cfg, removal)
		return tableRef{name: t.Ref(), arn: t.AttrArn(), streamArn: t.AttrStreamArn()}
	case cfg.Region == cfg.Regions[0]:
		t := newGlobalTable(stack, cfg, removal)
		return tableRef{name: t.TableName(), arn: t.TableArn(), streamArn: t.TableStreamArn()}
	default:
		return replicaTable(stack, cfg, removal)
	}
}

// newTable builds the single-region table from tabledef.Table, the
// definition the store's CreateTable uses too, so the two cannot drift.
func newTable(stack awscdk.Stack, cfg Config, removal awscdk.RemovalPolicy) awsdynamodb.CfnTable {
	def := tabledef.Table()
	var attrs []interface{}
	for _, a := range def.Attributes() {
		attrs = append(attrs, &awsdynamodb.CfnTable_AttributeDefinitionProperty{AttributeName: jsii.String(a.Name), AttributeType: jsii.String(string(a.Type))})
	}
	keys := func(partition, sort tabledef.Attribute) *[]interface{} {
		out := []interface{}{&awsdynamodb.CfnTable_KeySchemaProperty{AttributeName: jsii.String(partition.Name), KeyType: jsii.String("HASH")}}
		if sort.Name != "" {
			out = append(out, &awsdynamodb.CfnTable_KeySchemaProperty{AttributeName: jsii.String(sort.Name), KeyType: jsii.String("RANGE")})
		}
		return &out
	}
	var gsis []interface{}
	for _, ix := range def.Indexes {
		gsis = append(gsis, &awsdynamodb.CfnTable_GlobalSecondaryIndexProperty{
			IndexName: jsii.String(ix.Name), KeySchema: keys(ix.Partition, ix.Sort),
			Projection: &awsdynamodb.CfnTable_ProjectionProperty{
				ProjectionType: jsii.String(ix.Projection()), NonKeyAttributes: jsii.Strings(ix.Projected...),
			},
			WarmThroughput: warm(cfg.IndexWarmWrites),
		})
	}
	// TTL is a property of the table's mode (deploy.TableMode.TTL).
	var ttl *awsdynamodb.CfnTable_TimeToLiveSpecificationProperty
	if deployed.Table.TTL() {
		ttl = &awsdynamodb.CfnTable_TimeToLiveSpecificationProperty{AttributeName: jsii.String(tabledef.TTLAttribute), Enabled: jsii.Bool(true)}
	}
	table := awsdynamodb.NewCfnTable(stack, jsii.String("Table"), &awsdynamodb.CfnTableProps{
		BillingMode:                      jsii.String(def.BillingMode),
		AttributeDefinitions:             &attrs,
		KeySchema:                        keys(def.Partition, tabledef.Attribute{}),
		GlobalSecondaryIndexes:           &gsis,
		WarmThroughput:                   warm(cfg.TableWarmWrites),
		TimeToLiveSpecification:          ttl,
		StreamSpecification:              &awsdynamodb.CfnTable_StreamSpecificationProperty{StreamViewType: jsii.String(def.StreamView)},
		PointInTimeRecoverySpecification: &awsdynamodb.CfnTable_PointInTimeRecoverySpecificationProperty{PointInTimeRecoveryEnabled: jsii.Bool(true)},
		SseSpecification:                 &awsdynamodb.CfnTable_SSESpecificationProperty{SseEnabled: jsii.Bool(true)},
		DeletionProtectionEnabled:        jsii.Bool(cfg.Retain),
	})
	table.ApplyRemovalPolicy(removal, nil)
	return table
}

// purgeAccess is what the sweeper needs, beyond a Query of the expiry
// index, to purge a table without TTL: the mode and the purge window in
// env, and a DeleteItem of records, never of a ledger row (each delete is
// conditioned on the record's listed expires_at, idem.Store.Purge).
func purgeAccess(cfg Config, env map[string]*string, tableArn *string) []statement {
	env[deploy.EnvTableMode] = jsii.String(string(cfg.Table))
	env[deploy.EnvPurgeWindow] = jsii.String(deployed.PurgeWindow.String())
	return []statement{{actions: []string{"dynamodb:DeleteItem"}, resources: []*string{tableArn}, conditions: leadingKeys(idem.RecordPrefix)}}
}

// takeOverAccess is what the sweeper needs in the multi-region mode,
// beyond a Query of the unpublished index, to beat its region's heartbeat
// and take over the events of regions that stopped (backstop.Publisher):
// the topic and the stale age in env; a put of its own region's heartbeat
// item only, with its attributes only; reads of the heartbeats, the
// ledger rows and the refund rows; the mark on a ledger or refund row
// (markStatement); and a publish to its region's topic.
func takeOverAccess(cfg Config, env map[string]*string, tableArn, topicArn *string) []statement {
	env[deploy.EnvOutcomeTopicARN] = topicArn
	env[deploy.EnvStaleRegion] = jsii.String(deployed.StaleRegion.String())
	return []statement{
		{actions: []string{"dynamodb:PutItem"}, resources: []*string{tableArn}, conditions: map[string]any{
			"ForAllValues:StringEquals": map[string]any{
				"dynamodb:LeadingKeys": []string{tabledef.HeartbeatPrefix + cfg.Region},
				"dynamodb:Attributes":  []string{tabledef.KeyAttribute, tabledef.RegionAttribute, tabledef.BeatAttribute},
			},
			"StringEqualsIfExists": map[string]any{"dynamodb:ReturnValues": "NONE"},
		}},
		{actions: []string{"dynamodb:GetItem"}, resources: []*string{tableArn}, conditions: leadingKeys(append([]string{tabledef.HeartbeatPrefix}, tabledef.RowPrefixes()...)...)},
		markStatement(tableArn),
		{actions: []string{"sns:Publish"}, resources: []*string{topicArn}},
	}
}

// markAccess is what the publisher needs in the multi-region mode to mark
// each ledger row published once its event is: the table and its mode in
// env, and the mark (markStatement).
func markAccess(cfg Config, env map[string]*string, tableName, tableArn *string) []statement {
	env[deploy.EnvTableName], env[deploy.EnvTableMode] = tableName, jsii.String(string(cfg.Table))
	return []statement{markStatement(tableArn)}
}

// markStatement is the mark on any operation's row (dynamo.Books'
// MarkPublished): an update of those rows that touches the row's key and
// its unpublished listing only and returns nothing, so a role that marks
// can neither change what a row says nor write a row that reads as a
// charge, a refund, a capture or a void.
func markStatement(tableArn *string) statement {
	return statement{actions: []string{"dynamodb:UpdateItem"}, resources: []*string{tableArn}, conditions: map[string]any{
		"ForAllValues:StringLike": map[string]any{"dynamodb:LeadingKeys": wildcards(tabledef.RowPrefixes()...)},
		"ForAllValues:StringEquals": map[string]any{
			"dynamodb:Attributes": []string{tabledef.KeyAttribute, tabledef.UnpublishedShardAttribute, tabledef.UnpublishedSinceAttribute},
		},
		"StringEqualsIfExists": map[string]any{"dynamodb:ReturnValues": "NONE"},
	}}
}

// unlistStatement is the sweeper's unlisting of an authorization whose
// balance is closed (dynamo.Authorizations' Unlist): an update of a
// ledger row that touches the row's key, its listing and its expired mark
// only, and returns nothing, so the sweeper can neither change what a row
// says nor write a row that reads as a charge.
func unlistStatement(tableArn *string) statement {
	return statement{actions: []string{"dynamodb:UpdateItem"}, resources: []*string{tableArn}, conditions: map[string]any{
		"ForAllValues:StringLike":   map[string]any{"dynamodb:LeadingKeys": []string{tabledef.LedgerPrefix + "*"}},
		"ForAllValues:StringEquals": map[string]any{"dynamodb:Attributes": []string{tabledef.KeyAttribute, tabledef.AuthorizationShardAttribute, tabledef.ExpiredAttribute}},
		"StringEqualsIfExists":      map[string]any{"dynamodb:ReturnValues": "NONE"},
	}}
}

// xrayActions are what active tracing and the collector's X-Ray exporter
// need.
var xrayActions = []string{"xray:PutTraceSegments", "xray:PutTelemetryRecords"}

// The OTLP/HTTP endpoint the collector layer (config.go) listens on inside
// the execution environment.
const (
	collectorEndpoint = "http://localhost:4318"
)

// warm is a pre-warmed write throughput, or none for 0.
func warm(writesPerSecond int) *awsdynamodb.CfnTable_WarmThroughputProperty {
	if writesPerSecond == 0 {
		return nil
	}
	return &awsdynamodb.CfnTable_WarmThroughputProperty{WriteUnitsPerSecond: jsii.Number(float64(writesPerSecond))}
}

type statement struct {
	actions    []string
	resources  []*string
	conditions map[string]any
}

// function is a Lambda function with its own role and policy.
type function struct {
	fn     awslambda.Function
	role   awsiam.Role
	policy awsiam.Policy
	logs   awslogs.LogGroup
}

// onlySender makes sender the one principal that may send to q: the
// queue's policy denies sqs:SendMessage to every other principal, even one
// whose own policy allows it.
func onlySender(q awssqs.Queue, sender awsiam.Role) {
	q.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid: jsii.String("OnlyItsSenderSends"), Effect: awsiam.Effect_DENY,
		Principals: &[]awsiam.IPrincipal{awsiam.NewAnyPrincipal()},
		Actions:    jsii.Strings("sqs:SendMessage"), Resources: &[]*string{q.QueueArn()},
		Conditions: &map[string]interface{}{"ArnNotEquals": map[string]interface{}{"aws:PrincipalArn": sender.RoleArn()}},
	}))
	q.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid: jsii.String("ItsSenderSends"), Principals: &[]awsiam.IPrincipal{awsiam.NewArnPrincipal(sender.RoleArn())},
		Actions: jsii.Strings("sqs:SendMessage"), Resources: &[]*string{q.QueueArn()},
	}))
}

// leadingKeys confines a statement to the items whose partition key
// begins with one of prefixes.
func leadingKeys(prefixes ...string) map[string]any {
	return map[string]any{"ForAllValues:StringLike": map[string]any{"dynamodb:LeadingKeys": wildcards(prefixes...)}}
}

// wildcards are the StringLike patterns of the keys that begin with
// prefixes.
func wildcards(prefixes ...string) []string {
	var like []string
	for _, p := range prefixes {
		like = append(like, p+"*")
	}
	return like
}

// encodeSources writes a consumer's COMMAND_SOURCES; the ARNs and URLs are
// tokens CloudFormation resolves.
func encodeSources(sources []command.Inbox) *string {
	v, err := command.EncodeInboxes(sources)
	if err != nil {
		panic(err) // the stack's own sources: a bug in this file
	}
	return jsii.String(v)
}

// newFunction makes one function (provided.al2023, arm64) with a role that
// may do exactly the statements given, plus write its own log group.
func newFunction(stack awscdk.Stack, name string, cfg Config, assets StackAssets, removal awscdk.RemovalPolicy, timeout float64, env *map[string]*string, statements []statement) function {
	described := map[string]string{"Charge": deploy.FunctionCharge, "SqsConsumer": deploy.FunctionConsumer, "Reconciler": deploy.FunctionReconciler,
		"Sweeper": deploy.FunctionSweeper, "Publisher": deploy.FunctionPublisher, "Operator": deploy.FunctionOperator, "Match": deploy.FunctionMatch}[name]
	dir := deployed.Function(described).Binary
	logs := awslogs.NewLogGroup(stack, jsii.String(name+"Logs"), &awslogs.LogGroupProps{
		Retention: retention(cfg.LogRetentionDays), RemovalPolicy: removal,
	})
	role := awsiam.NewRole(stack, jsii.String(name+"Role"), &awsiam.RoleProps{
		AssumedBy: awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
	})
	statements = append(statements,
		statement{actions: []string{"logs:CreateLogStream", "logs:PutLogEvents"}, resources: []*string{logs.LogGroupArn()}},
		// Active tracing: Lambda's own segments. X-Ray's write actions take
		// no resource-level permissions, hence "*" (and a nag suppression).
		statement{actions: xrayActions, resources: []*string{jsii.String("*")}})
	var docs []awsiam.PolicyStatement
	for _, s := range statements {
		st := &awsiam.PolicyStatementProps{Actions: jsii.Strings(s.actions...), Resources: &s.resources}
		if s.conditions != nil {
			c := map[string]interface{}(s.conditions)
			st.Conditions = &c
		}
		docs = append(docs, awsiam.NewPolicyStatement(st))
	}
	policy := awsiam.NewPolicy(stack, jsii.String(name+"Policy"), &awsiam.PolicyProps{Statements: &docs, Roles: &[]awsiam.IRole{role}})
	var layers []awslambda.ILayerVersion
	if cfg.Tracing {
		// The collector runs as an extension and forwards OTLP to X-Ray with
		// the role's X-Ray permissions; the functions export to it.
		layers = append(layers, awslambda.LayerVersion_FromLayerVersionArn(stack, jsii.String(name+"Collector"), jsii.String(cfg.CollectorLayerARN)))
		(*env)[deploy.EnvOTLPEndpoint] = jsii.String(collectorEndpoint)
	}
	fn := awslambda.NewFunction(stack, jsii.String(name), &awslambda.FunctionProps{
		Layers:       &layers,
		Runtime:      awslambda.Runtime_PROVIDED_AL2023(),
		Architecture: awslambda.Architecture_ARM_64(),
		Handler:      jsii.String("bootstrap"),
		Code:         awslambda.Code_FromAsset(jsii.String(filepath.Join(assets.Dir, dir)), nil),
		Timeout:      awscdk.Duration_Seconds(jsii.Number(timeout)),
		MemorySize:   jsii.Number(float64(deployed.Function(described).MemoryMB)),
		Environment:  env,
		Role:         role,
		LogGroup:     logs,
		// Lambda's JSON log format: its own lines are JSON too, and the
		// application level reaches the functions as AWS_LAMBDA_LOG_LEVEL
		// (setup.LogLevel). The system level WARN drops Lambda's START,
		// END and REPORT lines, about 400 bytes an invocation: the billed
		// duration is the function's Duration metric rounded up to the
		// millisecond; the memory used, and a timeout's or an out-of-memory
		// end's report, come back with the level set back to INFO.
		LoggingFormat:         awslambda.LoggingFormat_JSON,
		ApplicationLogLevelV2: awslambda.ApplicationLogLevel_INFO,
		SystemLogLevelV2:      awslambda.SystemLogLevel_WARN,
	})
	fn.Node().DefaultChild().(awslambda.CfnFunction).SetTracingConfig(&awslambda.CfnFunction_TracingConfigProperty{Mode: jsii.String("Active")})
	fn.Node().AddDependency(policy)
	suppressFunction(name, fn, policy)
	return function{fn: fn, role: role, policy: policy, logs: logs}
}

// The throttle of each route without the authorizer (route.Public), in
// requests per second and burst.
const publicRate, publicBurst = 10, 20

// newAPI is the HTTP API and its default stage: the JWT authorizer on
// every route of route.All with its scope, none on those of route.Public,
// all through the one integration with the charge function; throttling and
// access logs on the stage.
func newAPI(stack awscdk.Stack, cfg Config, removal awscdk.RemovalPolicy, charge awslambda.Function) (awsapigatewayv2.HttpApi, awsapigatewayv2.HttpStage) {
	api := awsapigatewayv2.NewHttpApi(stack, jsii.String("Api"), &awsapigatewayv2.HttpApiProps{
		ApiName: jsii.String("idempay-" + cfg.Name), CreateDefaultStage: jsii.Bool(false),
	})
	authorizer := awsapigatewayv2authorizers.NewHttpJwtAuthorizer(jsii.String("Jwt"), jsii.String(cfg.JWTIssuer), &awsapigatewayv2authorizers.HttpJwtAuthorizerProps{
		JwtAudience: jsii.Strings(cfg.JWTAudience),
	})
	integration := awsapigatewayv2integrations.NewHttpLambdaIntegration(jsii.String("ChargeIntegration"), charge, nil)
	for _, r := range route.All { // "METHOD /path", as the function routes them
		method, path, _ := strings.Cut(r, " ")
		api.AddRoutes(&awsapigatewayv2.AddRoutesOptions{
			Path: jsii.String(path), Methods: &[]awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod(method)},
			Integration: integration, Authorizer: authorizer, AuthorizationScopes: jsii.Strings(route.Scopes[r]),
		})
	}
	for _, r := range route.Public {
		method, path, _ := strings.Cut(r, " ")
		for _, public := range *api.AddRoutes(&awsapigatewayv2.AddRoutesOptions{
			Path: jsii.String(path), Methods: &[]awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod(method)}, Integration: integration,
		}) {
			suppressPublicRoute(r, public)
		}
	}
	accessLogs := awslogs.NewLogGroup(stack, jsii.String("ApiAccessLogs"), &awslogs.LogGroupProps{
		Retention: retention(cfg.LogRetentionDays), RemovalPolicy: removal,
	})
	stage := api.AddStage(jsii.String("DefaultStage"), &awsapigatewayv2.HttpStageOptions{
		StageName: jsii.String("$default"), AutoDeploy: jsii.Bool(true),
		Throttle: &awsapigatewayv2.ThrottleSettings{RateLimit: jsii.Number(cfg.ThrottleRate), BurstLimit: jsii.Number(float64(cfg.ThrottleBurst))},
	})
	// The routes without the authorizer reach the charge function with no
	// token at all: their own small throttle keeps them from taking the
	// stage's rate (and the function's reserved concurrency) from charges.
	// Every anonymous caller shares it, so nothing that decides a region's
	// health calls them: Route 53's checks read the sweeper's table probe
	// (newDomain).
	public := map[string]interface{}{}
	for _, r := range route.Public {
		// RouteSettings is a JSON map: CloudFormation's own names, as written.
		public[r] = map[string]interface{}{"ThrottlingRateLimit": publicRate, "ThrottlingBurstLimit": publicBurst}
	}
	stage.Node().DefaultChild().(awsapigatewayv2.CfnStage).SetRouteSettings(public)
	stage.Node().DefaultChild().(awsapigatewayv2.CfnStage).SetAccessLogSettings(&awsapigatewayv2.CfnStage_AccessLogSettingsProperty{
		DestinationArn: accessLogs.LogGroupArn(),
		Format:         jsii.String(accessLogFormat),
	})
	return api, stage
}

// accessLogFormat is the API's access log line, one per request, apart
// from the charge function's lines (TestAccessLogLine gives its size).
const accessLogFormat = `{"requestId":"$context.requestId","ip":"$context.identity.sourceIp","requestTime":"$context.requestTime",` +
	`"routeKey":"$context.routeKey","status":"$context.status","latency":"$context.responseLatency",` +
	`"integrationError":"$context.integrationErrorMessage","authorizerError":"$context.authorizer.error",` +
	`"integrationLatency":"$context.integrationLatency","integrationStatus":"$context.integrationStatus","error":"$context.error.message"}`

// retention maps a number of days to CloudWatch's enumeration.
func retention(days int) awslogs.RetentionDays {
	r, ok := map[int]awslogs.RetentionDays{
		7: awslogs.RetentionDays_ONE_WEEK, 14: awslogs.RetentionDays_TWO_WEEKS, 30: awslogs.RetentionDays_ONE_MONTH,
		90: awslogs.RetentionDays_THREE_MONTHS, 365: awslogs.RetentionDays_ONE_YEAR,
	}[days]
	if !ok {
		panic(fmt.Sprintf("log retention %d days: use 7, 14, 30, 90 or 365", days))
	}
	return r
}

// refundGrants are the grants of a role that refunds (DESIGN §7), and
// captures and voids (§8): their rows are put and read like ledger rows,
// written once by a conditional put (as is a void's marker at a row's
// key); the balances are read and moved only by conditional updates,
// never put or deleted. The charge function refunds, captures and voids
// over HTTP, the queue consumer takes refund commands; the reconciler
// resolves stale ones, and the operator's channel settles held ones.
func refundGrants(tableArn *string) []statement {
	return []statement{
		{actions: []string{"dynamodb:PutItem", "dynamodb:GetItem"}, resources: []*string{tableArn},
			conditions: leadingKeys(tabledef.RefundPrefix, tabledef.CapturePrefix, tabledef.VoidPrefix)},
		{actions: []string{"dynamodb:UpdateItem", "dynamodb:GetItem"}, resources: []*string{tableArn}, conditions: leadingKeys(tabledef.BalancePrefix)},
	}
}

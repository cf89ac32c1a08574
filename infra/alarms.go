package main

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssnssubscriptions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-payments/idempay/internal/obs"
	"github.com/idempotent-payments/idempay/internal/tabledef"
)

// watched is what the alarms and the dashboard look at.
type watched struct {
	dlq       awssqs.Queue            // what ran out of receives
	rejected  awssqs.Queue            // the consumers' refusals
	queues    map[string]awssqs.Queue // the command queues, by producer ("reconcile" for the sweeper's)
	api       awsapigatewayv2.HttpApi
	table     tableRef
	functions []watchedFunction
	// outcomes, publisher and publisherFailures: the outcome events' topic,
	// their publisher and its trigger's on-failure destination.
	outcomes          outcomeTopic
	publisher         function
	publisherFailures awssqs.Queue
	// tableProbe is the table-probe alarm (tableProbeAlarm), made before
	// the domain's health check that reads it; watch makes it page.
	tableProbe awscloudwatch.Alarm
}

type watchedFunction struct {
	name    string // names its alarms and dashboard lines
	fn      function
	timeout float64 // seconds
}

// Alarm thresholds the runbook (docs/operating.md) names.
const (
	// queueAgeAlarm: older than the redrive's worst path (17 min 4 s), a
	// command is stuck, not waiting.
	queueAgeAlarm = 20 * 60
	// staleHorizon: a record in flight this long after its lease ended has
	// outlived T + skew, a sweep and three reconcile back-offs (1, 2, 4 min).
	staleHorizon = 10 * 60
	// api5xxPercent of the API's answers over 5 minutes, once there are at
	// least api5xxMinRequests: deliberate 503s (acquirer down, outcome
	// pending) stay under it; a broken deploy does not.
	api5xxPercent     = 5
	api5xxMinRequests = 20
	// publisherLagAlarm, in seconds: an hour behind the stream pages, 23
	// hours before its records age out.
	publisherLagAlarm = 60 * 60
	// outcomeUnreadAlarm, in seconds: an event has waited a week on its
	// outcome queue, half the queue's retention.
	outcomeUnreadAlarm = 7 * 24 * 60 * 60
	// tableProbePeriods: the table probe's alarm fires after this many
	// 1-minute periods in a row without a probe that the table answered:
	// one late schedule or one slow read is not a region down.
	tableProbePeriods = 3
)

// watch makes the alarms, all to the environment's topic, and the
// dashboard. Each alarm's description says what to do; the runbook
// (docs/operating.md) has a line for each. It returns the alarms' topic.
func watch(stack awscdk.Stack, cfg Config, w watched) awssns.Topic {
	topic := awssns.NewTopic(stack, jsii.String("Alarms"), &awssns.TopicProps{
		DisplayName: jsii.String("idempay " + cfg.where(" ") + " alarms"), EnforceSSL: jsii.Bool(true),
	})
	// EnforceSSL writes a topic policy, which replaces the default one:
	// CloudWatch must be allowed to publish, from this account's alarms.
	topic.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid: jsii.String("AlarmsPublish"), Principals: &[]awsiam.IPrincipal{awsiam.NewServicePrincipal(jsii.String("cloudwatch.amazonaws.com"), nil)},
		Actions: jsii.Strings("sns:Publish"), Resources: &[]*string{topic.TopicArn()},
		Conditions: &map[string]interface{}{
			"StringEquals": map[string]interface{}{"aws:SourceAccount": stack.Account()},
			"ArnLike":      map[string]interface{}{"aws:SourceArn": awscdk.Fn_Sub(jsii.String("arn:${AWS::Partition}:cloudwatch:${AWS::Region}:${AWS::AccountId}:alarm:*"), nil)},
		},
	}))
	for _, email := range cfg.AlarmEmails {
		topic.AddSubscription(awssnssubscriptions.NewEmailSubscription(jsii.String(email), nil))
	}
	a := alarms{stack: stack, cfg: cfg, topic: topic, table: w.table.name, five: awscdk.Duration_Minutes(jsii.Number(5))}
	a.deadEnds(w)
	a.api(w)
	a.queues(w)
	a.functions(w)
	a.sweeper(w)
	a.match()
	a.events(w)
	a.tableAlarms()
	newDashboard(stack, cfg, w, a.emf, a.ddb)
	return topic
}

// alarms makes the stack's alarms, each to topic, each over one 5-minute
// period (five).
type alarms struct {
	stack awscdk.Stack
	cfg   Config
	topic awssns.Topic
	table *string // the table's name
	five  awscdk.Duration
}

// add makes an alarm that fires when metric reaches threshold in one
// period, compared by op, with missing data treated as missing says.
func (a alarms) add(id, description string, metric awscloudwatch.IMetric, threshold float64, op awscloudwatch.ComparisonOperator, missing awscloudwatch.TreatMissingData) {
	al := awscloudwatch.NewAlarm(a.stack, jsii.String(id), &awscloudwatch.AlarmProps{
		AlarmDescription: jsii.String(description), Metric: metric, Threshold: jsii.Number(threshold),
		EvaluationPeriods: jsii.Number(1), ComparisonOperator: op, TreatMissingData: missing,
	})
	al.AddAlarmAction(awscloudwatchactions.NewSnsAction(a.topic))
}

// alarm fires when metric reaches threshold (no data: not breaching). Its
// description is its runbook row's (runbook), naming subject for a
// family's member.
func (a alarms) alarm(id, row, subject string, metric awscloudwatch.IMetric, threshold float64) {
	a.add(id, specOf(a.cfg, row).description(subject), metric, threshold, awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD, awscloudwatch.TreatMissingData_NOT_BREACHING)
}

// emf is a metric the functions write: function is the EMF Function
// dimension (obs.Function*). A function of fromLines writes no EMF: its
// metric is the one its request lines make, in its obs.LogNamespace,
// with dims alone.
func (a alarms) emf(function, name, statistic string, dims map[string]string) awscloudwatch.Metric {
	namespace := obs.Namespace
	d := map[string]*string{obs.DimensionFunction: jsii.String(function), obs.DimensionEnvironment: jsii.String(a.cfg.Name)}
	if fromLines[function] {
		namespace, d = obs.LogNamespace(a.cfg.Name, function), map[string]*string{}
	}
	for k, v := range dims {
		d[k] = jsii.String(v)
	}
	return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace: jsii.String(namespace), MetricName: jsii.String(name), Period: a.five, Statistic: jsii.String(statistic), DimensionsMap: &d,
	})
}

// outcome counts a function's requests that came to o.
func (a alarms) outcome(function string, o obs.Outcome) awscloudwatch.Metric {
	return a.emf(function, obs.MetricRequests, "Sum", map[string]string{obs.DimensionOutcome: string(o)})
}

// ddb is a metric of the table (of an index of it, by dims).
func (a alarms) ddb(name string, dims map[string]string) awscloudwatch.Metric {
	d := map[string]*string{"TableName": a.table}
	for k, v := range dims {
		d[k] = jsii.String(v)
	}
	return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace: jsii.String("AWS/DynamoDB"), MetricName: jsii.String(name), Period: a.five, Statistic: jsii.String("Sum"), DimensionsMap: &d,
	})
}

// deadEnds: the DLQ, the rejected commands, and commands from a producer
// not allowed.
func (a alarms) deadEnds(w watched) {
	a.alarm("DeadLettersAlarm", "DeadLetters", "",
		w.dlq.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{Period: a.five, Statistic: jsii.String("Maximum")}), 1)
	a.alarm("RejectedCommandsAlarm", "RejectedCommands", "",
		w.rejected.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{Period: a.five, Statistic: jsii.String("Maximum")}), 1)
	a.alarm("ProducerNotAllowedAlarm", "ProducerNotAllowed", "",
		a.outcome(obs.FunctionSQSConsumer, obs.OutcomeProducerNotAllowed), 1)
	// The two queue alarms stay in ALARM while their queue holds a message:
	// drain it to re-arm them.

}

// api: the API's 5xx rate, and the outcomes behind a 503.
func (a alarms) api(w watched) {
	api5xx := awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String(fmt.Sprintf("IF(requests >= %d, 100 * errors / requests, 0)", api5xxMinRequests)),
		UsingMetrics: &map[string]awscloudwatch.IMetric{
			"errors":   w.api.MetricServerError(&awscloudwatch.MetricOptions{Period: a.five, Statistic: jsii.String("Sum")}),
			"requests": w.api.MetricCount(&awscloudwatch.MetricOptions{Period: a.five, Statistic: jsii.String("Sum")}),
		},
		Label: jsii.String("5xx %"), Period: a.five,
	})
	a.alarm("Api5xxRateAlarm", "Api5xxRate", "", api5xx, api5xxPercent)
	for _, fn := range []string{obs.FunctionCharge, obs.FunctionSQSConsumer} {
		id := map[string]string{obs.FunctionCharge: "Charge", obs.FunctionSQSConsumer: "Consumer"}[fn]
		a.alarm(id+"PendingAlarm", "<Entry>Pending", id, a.outcome(fn, obs.OutcomePending), float64(a.cfg.AlarmPendingPer5Min))
		a.alarm(id+"UnavailableAlarm", "<Entry>Unavailable", id, a.outcome(fn, obs.OutcomeUnavailable), 1)
	}
	a.alarm("AcquirerErrorsAlarm", "AcquirerErrors", "",
		sum("acq", a.emf(obs.FunctionCharge, obs.MetricAcquirerErrors, "Sum", nil), a.emf(obs.FunctionSQSConsumer, obs.MetricAcquirerErrors, "Sum", nil)), float64(a.cfg.AlarmPendingPer5Min))

}

// queues: a command older than the redrive's worst path is stuck.
func (a alarms) queues(w watched) {
	names := make([]string, 0, len(w.queues))
	for name := range w.queues {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		a.alarm("QueueAgeAlarm-"+name, "QueueAge-<queue>", "queue "+name,
			w.queues[name].MetricApproximateAgeOfOldestMessage(&awscloudwatch.MetricOptions{Period: a.five, Statistic: jsii.String("Maximum")}), queueAgeAlarm)
	}

}

// functions: every function's errors, throttles, and a p99 near its
// timeout.
func (a alarms) functions(w watched) {
	for _, f := range w.functions {
		id := strings.ToUpper(f.name[:1]) + f.name[1:]
		a.alarm(id+"ErrorsAlarm", "<Function>Errors", "function "+f.name,
			f.fn.fn.MetricErrors(&awscloudwatch.MetricOptions{Period: a.five, Statistic: jsii.String("Sum")}), 1)
		a.alarm(id+"ThrottlesAlarm", "<Function>Throttles", "function "+f.name,
			f.fn.fn.MetricThrottles(&awscloudwatch.MetricOptions{Period: a.five, Statistic: jsii.String("Sum")}), float64(a.cfg.AlarmThrottlesPer5Min))
		a.alarm(id+"DurationAlarm", "<Function>Duration", fmt.Sprintf("function %s, timeout %g s", f.name, f.timeout),
			f.fn.fn.MetricDuration(&awscloudwatch.MetricOptions{Period: a.five, Statistic: jsii.String("p99")}), 0.8*f.timeout*1000)
	}

}

// sweeper: its heartbeat, and what it finds.
func (a alarms) sweeper(w watched) {
	// The heartbeat treats missing data as missing: a new alarm starts in
	// INSUFFICIENT_DATA and acts only on a change of state, so the first
	// deploy does not page before the first sweep; afterwards, 5 minutes
	// without a successful sweep turn it to INSUFFICIENT_DATA, which pages
	// like ALARM.
	heartbeat := awscloudwatch.NewAlarm(a.stack, jsii.String("SweeperHeartbeatAlarm"), &awscloudwatch.AlarmProps{
		AlarmDescription: jsii.String(specOf(a.cfg, "SweeperHeartbeat").description("")),
		Metric:           a.outcome(obs.FunctionSweeper, obs.OutcomeSwept), Threshold: jsii.Number(1), EvaluationPeriods: jsii.Number(1),
		ComparisonOperator: awscloudwatch.ComparisonOperator_LESS_THAN_THRESHOLD, TreatMissingData: awscloudwatch.TreatMissingData_MISSING,
	})
	heartbeat.AddAlarmAction(awscloudwatchactions.NewSnsAction(a.topic))
	heartbeat.AddInsufficientDataAction(awscloudwatchactions.NewSnsAction(a.topic))
	w.tableProbe.AddAlarmAction(awscloudwatchactions.NewSnsAction(a.topic))
	a.alarm("StaleRecordsAlarm", "StaleRecords", "", a.emf(obs.FunctionSweeper, obs.MetricStaleFlagged, "Maximum", nil), 1)
	a.alarm("StaleFailingAlarm", "StaleFailing", "", a.emf(obs.FunctionSweeper, obs.MetricStaleFailing, "Maximum", nil), 1)
	// Held records: an acquirer's answer disagreed with the request. The
	// first one pages, from the request that met it and from the sweeper's
	// count; they are in none of the stale counts above.
	a.alarm("AcquirerMismatchAlarm", "AcquirerMismatch", "",
		sum("mm", a.outcome(obs.FunctionCharge, obs.OutcomeAcquirerMismatch), a.outcome(obs.FunctionSQSConsumer, obs.OutcomeAcquirerMismatch)), 1)
	a.alarm("HeldRecordsAlarm", "HeldRecords", "", a.emf(obs.FunctionSweeper, obs.MetricHeldRecords, "Maximum", nil), 1)
	// A refund's mismatch and a held refund page on their own besides:
	// its amount stays reserved on the charge until an operator settles it.
	a.alarm("RefundMismatchAlarm", "RefundMismatch", "",
		sum("rm", a.emf(obs.FunctionCharge, obs.MetricRefundMismatches, "Sum", nil), a.emf(obs.FunctionSQSConsumer, obs.MetricRefundMismatches, "Sum", nil)), 1)
	a.alarm("HeldRefundsAlarm", "HeldRefunds", "", a.emf(obs.FunctionSweeper, obs.MetricHeldRefunds, "Maximum", nil), 1)
	// A capture's or a void's mismatch, and a held one, page on their own
	// as a refund's do: its entry stays open on the charge's balance, and
	// a held void or final capture blocks every other capture.
	a.alarm("CaptureMismatchAlarm", "CaptureMismatch", "",
		sum("cm", a.emf(obs.FunctionCharge, obs.MetricCaptureMismatches, "Sum", nil), a.emf(obs.FunctionSQSConsumer, obs.MetricCaptureMismatches, "Sum", nil)), 1)
	a.alarm("VoidMismatchAlarm", "VoidMismatch", "",
		sum("vm", a.emf(obs.FunctionCharge, obs.MetricVoidMismatches, "Sum", nil), a.emf(obs.FunctionSQSConsumer, obs.MetricVoidMismatches, "Sum", nil)), 1)
	a.alarm("HeldCapturesAlarm", "HeldCaptures", "", a.emf(obs.FunctionSweeper, obs.MetricHeldCaptures, "Maximum", nil), 1)
	a.alarm("HeldVoidsAlarm", "HeldVoids", "", a.emf(obs.FunctionSweeper, obs.MetricHeldVoids, "Maximum", nil), 1)
	a.alarm("OldestStaleAlarm", "OldestStale", "", a.emf(obs.FunctionSweeper, obs.MetricOldestStaleSeconds, "Maximum", nil), staleHorizon)

}

// match: each kind of line the daily match found (match.Metrics) pages
// from its first. A run writes a day's counts once; the alarm returns to
// OK in the next period without data.
func (a alarms) match() {
	for _, name := range obs.MatchMetrics() {
		a.alarm(name+"Alarm", name, "", a.emf(obs.FunctionMatch, name, "Maximum", nil), 1)
	}
}

// tableProbeAlarm is the alarm on the sweeper's table probe
// (obs.MetricTableProbe, one strongly consistent read a run, 1 when the
// table answered): it fires when the probe's Minimum is below 1 in each
// of tableProbePeriods 1-minute periods in a row, and treats missing data
// as breaching, since a minute in which no sweeper reported proves nothing
// healthy. In the multi-region mode the region's Route 53 health check
// reads it (newDomain), and it pages in every mode (watch). Route 53 takes
// an alarm on a standard-resolution metric with a plain statistic
// (Average, Minimum, Maximum, Sum, SampleCount), which this is.
func tableProbeAlarm(stack awscdk.Stack, cfg Config) awscloudwatch.Alarm {
	a := alarms{stack: stack, cfg: cfg}
	probe := a.emf(obs.FunctionSweeper, obs.MetricTableProbe, "Minimum", nil).With(&awscloudwatch.MetricOptions{Period: awscdk.Duration_Minutes(jsii.Number(1))})
	return awscloudwatch.NewAlarm(stack, jsii.String("TableProbeAlarm"), &awscloudwatch.AlarmProps{
		AlarmDescription: jsii.String(specOf(cfg, "TableProbe").description("")),
		Metric:           probe, Threshold: jsii.Number(1), EvaluationPeriods: jsii.Number(tableProbePeriods),
		ComparisonOperator: awscloudwatch.ComparisonOperator_LESS_THAN_THRESHOLD, TreatMissingData: awscloudwatch.TreatMissingData_BREACHING,
	})
}

// events: the publisher keeps up with the stream, and the events reach
// their subscribers.
func (a alarms) events(w watched) {
	a.alarm("PublisherIteratorAgeAlarm", "PublisherIteratorAge", "",
		w.publisher.fn.Metric(jsii.String("IteratorAge"), &awscloudwatch.MetricOptions{Period: a.five, Statistic: jsii.String("Maximum")}), publisherLagAlarm*1000)
	a.alarm("PublisherFailuresAlarm", "PublisherFailures", "",
		w.publisherFailures.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{Period: a.five, Statistic: jsii.String("Maximum")}), 1)
	a.alarm("StreamUndecodableAlarm", "StreamUndecodable", "",
		a.emf(obs.FunctionPublisher, obs.MetricStreamUndecodable, "Sum", nil), 1)
	a.alarm("UndeliveredOutcomesAlarm", "UndeliveredOutcomes", "",
		w.outcomes.undelivered.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{Period: a.five, Statistic: jsii.String("Maximum")}), 1)
	for _, s := range slices.Sorted(maps.Keys(w.outcomes.queues)) {
		a.alarm("OutcomesUnreadAlarm"+s, "OutcomesUnread-<subscriber>", "subscriber "+s,
			w.outcomes.queues[s].MetricApproximateAgeOfOldestMessage(&awscloudwatch.MetricOptions{Period: a.five, Statistic: jsii.String("Maximum")}), outcomeUnreadAlarm)
	}

}

// tableAlarms: the table's and its in-flight index's throttles and errors.
func (a alarms) tableAlarms() {
	index := map[string]string{"GlobalSecondaryIndexName": tabledef.InflightIndex}
	a.alarm("TableThrottlesAlarm", "TableThrottles", "", sum("ddb", a.ddb("ReadThrottleEvents", nil), a.ddb("WriteThrottleEvents", nil)), 1)
	a.alarm("IndexThrottlesAlarm", "IndexThrottles", "",
		sum("ddb", a.ddb("ReadThrottleEvents", index), a.ddb("WriteThrottleEvents", index)), 1)
	var systemErrors []awscloudwatch.IMetric
	for _, op := range []string{"GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query"} {
		systemErrors = append(systemErrors, a.ddb("SystemErrors", map[string]string{"Operation": op}))
	}
	a.alarm("TableSystemErrorsAlarm", "TableSystemErrors", "",
		sum("ddb", systemErrors...), 1)

}

// sum is the sum of metrics, as one math expression.
func sum(prefix string, metrics ...awscloudwatch.IMetric) awscloudwatch.IMetric {
	using := map[string]awscloudwatch.IMetric{}
	var terms []string
	for i, m := range metrics {
		id := fmt.Sprintf("%s%d", prefix, i)
		using[id] = m
		terms = append(terms, "FILL("+id+", 0)")
	}
	return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String(strings.Join(terms, " + ")), UsingMetrics: &using, Period: awscdk.Duration_Minutes(jsii.Number(5)),
	})
}

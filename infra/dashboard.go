package main

import (
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-payments/idempay/internal/obs"
	"github.com/idempotent-payments/idempay/internal/tabledef"
)

// newDashboard is the environment's one page: requests by outcome, latency
// p50/p99, the acquirer's latency and errors, queue depth and age, stale
// and failing records, throttles, the outcome events, refunds and their
// mismatches, held records (refunds' apart), the daily match's lines by
// kind, and the write units the table consumes.
func newDashboard(stack awscdk.Stack, cfg Config, w watched,
	emf func(function, name, statistic string, dims map[string]string) awscloudwatch.Metric,
	ddb func(name string, dims map[string]string) awscloudwatch.Metric,
) {
	five := awscdk.Duration_Minutes(jsii.Number(5))
	graph := func(title string, metrics ...awscloudwatch.IMetric) awscloudwatch.IWidget {
		return awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{
			Title: jsii.String(title), Left: &metrics, Width: jsii.Number(12), Height: jsii.Number(6),
		})
	}
	byOutcome := func(function string) awscloudwatch.IMetric {
		search := fmt.Sprintf(`SEARCH('{%s,%s,%s,%s} MetricName="%s" %s="%s" %s="%s"', 'Sum', 300)`,
			obs.Namespace, obs.DimensionEnvironment, obs.DimensionFunction, obs.DimensionOutcome, obs.MetricRequests,
			obs.DimensionEnvironment, cfg.Name, obs.DimensionFunction, function)
		if fromLines[function] {
			search = fmt.Sprintf(`SEARCH('{"%s",%s} MetricName="%s"', 'Sum', 300)`, // a namespace with slashes is quoted
				obs.LogNamespace(cfg.Name, function), obs.DimensionOutcome, obs.MetricRequests)
		}
		return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
			Expression: jsii.String(search), Label: jsii.String(function), Period: five,
		})
	}
	var durations, throttles []awscloudwatch.IMetric
	for _, f := range w.functions {
		for _, p := range []string{"p50", "p99"} {
			durations = append(durations, f.fn.fn.MetricDuration(&awscloudwatch.MetricOptions{Period: five, Statistic: jsii.String(p), Label: jsii.String(f.name + " " + p)}))
		}
		throttles = append(throttles, f.fn.fn.MetricThrottles(&awscloudwatch.MetricOptions{Period: five, Statistic: jsii.String("Sum"), Label: jsii.String(f.name)}))
	}
	names := make([]string, 0, len(w.queues))
	for name := range w.queues {
		names = append(names, name)
	}
	sort.Strings(names)
	var depth, age []awscloudwatch.IMetric
	for _, name := range names {
		q := w.queues[name]
		depth = append(depth, q.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{Period: five, Statistic: jsii.String("Maximum"), Label: jsii.String(name)}))
		age = append(age, q.MetricApproximateAgeOfOldestMessage(&awscloudwatch.MetricOptions{Period: five, Statistic: jsii.String("Maximum"), Label: jsii.String(name)}))
	}
	// The daily match: a panel per kind of line, each day's count, three
	// to a row (CloudWatch takes whole widths only, of 24 a row).
	var matchRows [][]awscloudwatch.IWidget
	for i, name := range obs.MatchMetrics() {
		if i%3 == 0 {
			matchRows = append(matchRows, nil)
		}
		matchRows[len(matchRows)-1] = append(matchRows[len(matchRows)-1], awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{
			Title: jsii.String("Daily match: " + name), Left: &[]awscloudwatch.IMetric{emf(obs.FunctionMatch, name, "Maximum", nil)},
			Width: jsii.Number(8), Height: jsii.Number(6),
		}))
	}
	depth = append(depth,
		w.dlq.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{Period: five, Statistic: jsii.String("Maximum"), Label: jsii.String("DLQ")}),
		w.rejected.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{Period: five, Statistic: jsii.String("Maximum"), Label: jsii.String("rejected")}))
	var unread []awscloudwatch.IMetric
	for _, s := range slices.Sorted(maps.Keys(w.outcomes.queues)) {
		unread = append(unread, w.outcomes.queues[s].MetricApproximateAgeOfOldestMessage(&awscloudwatch.MetricOptions{Period: five, Statistic: jsii.String("Maximum"), Label: jsii.String(s)}))
	}
	index := map[string]string{"GlobalSecondaryIndexName": tabledef.InflightIndex}
	rows := []*[]awscloudwatch.IWidget{
		{graph("Charges by outcome (HTTP)", byOutcome(obs.FunctionCharge)), graph("Commands by outcome (queues)", byOutcome(obs.FunctionSQSConsumer))},
		{graph("Duration p50 / p99 (ms)", durations...), graph("Acquirer latency (ms) and errors",
			emf(obs.FunctionCharge, obs.MetricAcquirerLatencyMs, "p99", nil), emf(obs.FunctionCharge, obs.MetricAcquirerLatencyMs, "p50", nil), emf(obs.FunctionCharge, obs.MetricAcquirerErrors, "Sum", nil))},
		{graph("Queue depth", depth...), graph("Oldest message age (s)", age...)},
		{graph("Stale and failing records", emf(obs.FunctionSweeper, obs.MetricStaleFlagged, "Maximum", nil), emf(obs.FunctionSweeper, obs.MetricStaleFailing, "Maximum", nil),
			emf(obs.FunctionSweeper, obs.MetricOldestStaleSeconds, "Maximum", nil)), graph("Throttles", throttles...)},
		{graph("Outcome events published, and the publisher's lag (ms)", w.outcomes.topic.MetricNumberOfMessagesPublished(&awscloudwatch.MetricOptions{Period: five, Statistic: jsii.String("Sum")}),
			w.publisher.fn.Metric(jsii.String("IteratorAge"), &awscloudwatch.MetricOptions{Period: five, Statistic: jsii.String("Maximum")})),
			graph("Unread outcome events: oldest age (s)", unread...)},
		{graph("Refunds (HTTP, queues) and refund mismatches", emf(obs.FunctionCharge, obs.MetricRefunds, "Sum", nil), emf(obs.FunctionSQSConsumer, obs.MetricRefunds, "Sum", nil),
			emf(obs.FunctionCharge, obs.MetricRefundMismatches, "Sum", nil), emf(obs.FunctionSQSConsumer, obs.MetricRefundMismatches, "Sum", nil)),
			graph("Held records: all, and refunds' (their amounts stay reserved)", emf(obs.FunctionSweeper, obs.MetricHeldRecords, "Maximum", nil),
				emf(obs.FunctionSweeper, obs.MetricHeldRefunds, "Maximum", nil))},
		{graph("Captures and voids (HTTP, queues), and their mismatches", emf(obs.FunctionCharge, obs.MetricCaptures, "Sum", nil), emf(obs.FunctionSQSConsumer, obs.MetricCaptures, "Sum", nil),
			emf(obs.FunctionCharge, obs.MetricVoids, "Sum", nil), emf(obs.FunctionSQSConsumer, obs.MetricVoids, "Sum", nil),
			emf(obs.FunctionCharge, obs.MetricCaptureMismatches, "Sum", nil), emf(obs.FunctionSQSConsumer, obs.MetricCaptureMismatches, "Sum", nil),
			emf(obs.FunctionCharge, obs.MetricVoidMismatches, "Sum", nil), emf(obs.FunctionSQSConsumer, obs.MetricVoidMismatches, "Sum", nil)),
			graph("Held captures and voids, and lost sales (authorizations expired uncaptured)", emf(obs.FunctionSweeper, obs.MetricHeldCaptures, "Maximum", nil),
				emf(obs.FunctionSweeper, obs.MetricHeldVoids, "Maximum", nil), emf(obs.FunctionSweeper, obs.MetricAuthorizationsExpired, "Sum", nil))},
	}
	for i := range matchRows {
		rows = append(rows, &matchRows[i])
	}
	rows = append(rows,
		&[]awscloudwatch.IWidget{graph("Write units consumed (table, in-flight index)", ddb("ConsumedWriteCapacityUnits", nil), ddb("ConsumedWriteCapacityUnits", index)),
			graph("DynamoDB throttles", ddb("WriteThrottleEvents", nil), ddb("ReadThrottleEvents", nil), ddb("WriteThrottleEvents", index))},
	)
	awscloudwatch.NewDashboard(stack, jsii.String("Dashboard"), &awscloudwatch.DashboardProps{
		DashboardName: jsii.String("idempay-" + cfg.where("-")), // dashboards are named once per account, not per region
		Widgets:       &rows,
	})
}

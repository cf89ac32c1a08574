package main

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-payments/idempay/internal/obs"
)

// fromLines are the functions whose metrics CloudWatch Logs makes from
// their request lines (obs.LineMetrics), in obs.LogNamespace, instead
// of EMF lines: one line a charge, not two.
var fromLines = map[string]bool{obs.FunctionCharge: true}

// lineMetricFilters makes the charge function's metrics from its request
// lines: a metric filter on its log group for each obs.LineMetric.
func lineMetricFilters(stack awscdk.Stack, cfg Config, logs awslogs.LogGroup) {
	for _, m := range obs.LineMetrics() {
		props := &awslogs.MetricFilterProps{
			LogGroup:        logs,
			FilterPattern:   awslogs.FilterPattern_Literal(jsii.String(filterPattern(m))),
			MetricNamespace: jsii.String(obs.LogNamespace(cfg.Name, obs.FunctionCharge)),
			MetricName:      jsii.String(m.Name),
			MetricValue:     jsii.String("1"),
			Unit:            unitOf(m.Name),
		}
		if m.Value != "" {
			props.MetricValue = jsii.String("$." + m.Value)
		}
		if m.Outcome != "" {
			props.Dimensions = &map[string]*string{obs.DimensionOutcome: jsii.String("$." + m.Outcome)}
		}
		awslogs.NewMetricFilter(stack, jsii.String("ChargeLines"+m.Name), props)
	}
}

// filterPattern is m's JSON filter pattern: each member of Where equal to
// its value, and Positive above zero.
func filterPattern(m obs.LineMetric) string {
	var terms []string
	for _, k := range slices.Sorted(maps.Keys(m.Where)) {
		terms = append(terms, fmt.Sprintf("$.%s = %s", k, strconv.Quote(m.Where[k])))
	}
	if m.Positive != "" {
		terms = append(terms, "$."+m.Positive+" > 0")
	}
	return "{ " + strings.Join(terms, " && ") + " }"
}

// unitOf is the CloudWatch unit of the metric name (obs.UnitOf).
func unitOf(name string) awscloudwatch.Unit {
	switch obs.UnitOf(name) {
	case "Milliseconds":
		return awscloudwatch.Unit_MILLISECONDS
	case "Seconds":
		return awscloudwatch.Unit_SECONDS
	}
	return awscloudwatch.Unit_COUNT
}

package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/deploy"
	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/event"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/obs"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/route"
	"github.com/idempotent-payments/idempay/internal/tabledef"
)

// singleRegionEnvironments are the environments that deploy one stack
// from testInputs; the multi-region ones (multiRegionOnly) are tested in
// global_test.go.
var singleRegionEnvironments = slices.DeleteFunc(slices.Clone(Environments), func(env string) bool { return multiRegionOnly[env] })

// jsii tests share one node process: no t.Parallel, and close it at the end.
func TestMain(m *testing.M) {
	code := m.Run()
	jsii.Close()
	os.Exit(code)
}

// synth builds env's stack with CDK's CloudFormation validation switched to
// strict (a violation fails synthesis) and returns its template as JSON.
func synth(t *testing.T, env string) map[string]any {
	t.Helper()
	cfg, err := ConfigFor(env, testInputs)
	if err != nil {
		t.Fatal(err)
	}
	return synthConfig(t, "idempay-"+env, cfg)
}

// synthConfig builds the stack id from cfg, validation strict, and returns
// its template as JSON.
func synthConfig(t *testing.T, id string, cfg Config) map[string]any {
	t.Helper()
	app := awscdk.NewApp(&awscdk.AppProps{Context: &map[string]interface{}{"@aws-cdk/core:validateAgainstDefaultRules": true}})
	return asJSONMap(t, assertions.Template_FromStack(NewStack(app, id, cfg, StackAssets{Dir: testAssets(t)}), nil).ToJSON())
}

// testAssets is a directory with a stand-in bootstrap per function.
func testAssets(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, fn := range deployed.Binaries() {
		if err := os.MkdirAll(filepath.Join(dir, fn), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fn, "bootstrap"), []byte("test asset "+fn), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func resources(tmpl map[string]any, typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for id, r := range tmpl["Resources"].(map[string]any) {
		r := r.(map[string]any)
		if r["Type"] == typ {
			out[id] = r
		}
	}
	return out
}

func props(r map[string]any) map[string]any { p, _ := r["Properties"].(map[string]any); return p }

func only(t *testing.T, tmpl map[string]any, typ string) map[string]any {
	t.Helper()
	rs := resources(tmpl, typ)
	if len(rs) != 1 {
		t.Fatalf("%d %s, want 1", len(rs), typ)
	}
	for _, r := range rs {
		return r
	}
	return nil
}

func byPrefix(t *testing.T, rs map[string]map[string]any, prefix string) map[string]any {
	t.Helper()
	for id, r := range rs {
		if strings.HasPrefix(id, prefix) {
			return r
		}
	}
	t.Fatalf("no resource %s*", prefix)
	return nil
}

func asJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

// withoutWarm drops each index's WarmThroughput, a deployment setting the
// code's table definition does not carry.
func withoutWarm(gsis any) any {
	var out []map[string]any
	for _, g := range gsis.([]any) {
		c := map[string]any{}
		for k, v := range g.(map[string]any) {
			if k != "WarmThroughput" {
				c[k] = v
			}
		}
		out = append(out, c)
	}
	return out
}

func TestTableMatchesTheCode(t *testing.T) {
	for _, env := range singleRegionEnvironments {
		tmpl := synth(t, env)
		table := only(t, tmpl, "AWS::DynamoDB::Table")
		p := props(table)
		in := dynamo.TableInput(tableName)
		var wantAttrs, wantKeys []map[string]string
		for _, a := range in.AttributeDefinitions {
			wantAttrs = append(wantAttrs, map[string]string{"AttributeName": *a.AttributeName, "AttributeType": string(a.AttributeType)})
		}
		for _, k := range in.KeySchema {
			wantKeys = append(wantKeys, map[string]string{"AttributeName": *k.AttributeName, "KeyType": string(k.KeyType)})
		}
		var wantGSI []map[string]any
		for _, g := range in.GlobalSecondaryIndexes {
			wantGSI = append(wantGSI, map[string]any{
				"IndexName": *g.IndexName,
				"KeySchema": []map[string]string{
					{"AttributeName": *g.KeySchema[0].AttributeName, "KeyType": string(g.KeySchema[0].KeyType)},
					{"AttributeName": *g.KeySchema[1].AttributeName, "KeyType": string(g.KeySchema[1].KeyType)},
				},
				"Projection": map[string]any{"NonKeyAttributes": g.Projection.NonKeyAttributes, "ProjectionType": string(g.Projection.ProjectionType)},
			})
		}
		for name, pair := range map[string][2]string{
			"AttributeDefinitions":    {asJSON(p["AttributeDefinitions"]), asJSON(wantAttrs)},
			"KeySchema":               {asJSON(p["KeySchema"]), asJSON(wantKeys)},
			"GlobalSecondaryIndexes":  {asJSON(withoutWarm(p["GlobalSecondaryIndexes"])), asJSON(wantGSI)},
			"BillingMode":             {asJSON(p["BillingMode"]), asJSON(string(in.BillingMode))},
			"TimeToLiveSpecification": {asJSON(p["TimeToLiveSpecification"]), `{"AttributeName":"expires_at","Enabled":true}`},
			"StreamSpecification":     {asJSON(p["StreamSpecification"]), `{"StreamViewType":"` + string(in.StreamSpecification.StreamViewType) + `"}`},
			"PointInTimeRecovery":     {asJSON(p["PointInTimeRecoverySpecification"]), `{"PointInTimeRecoveryEnabled":true}`},
			"SseSpecification":        {asJSON(p["SSESpecification"]), `{"SSEEnabled":true}`},
		} {
			if pair[0] != pair[1] {
				t.Errorf("%s: table %s = %s, the code's %s", env, name, pair[0], pair[1])
			}
		}
		prod := env == "prod"
		if want := map[bool]string{true: `{"WriteUnitsPerSecond":25000}`, false: "null"}[prod]; asJSON(p["WarmThroughput"]) != want {
			t.Errorf("%s: table warm throughput %s, want %s", env, asJSON(p["WarmThroughput"]), want)
		}
		if prod {
			gsi := p["GlobalSecondaryIndexes"].([]any)[0].(map[string]any)
			if asJSON(gsi["WarmThroughput"]) != `{"WriteUnitsPerSecond":10000}` {
				t.Errorf("prod: index warm throughput %s", asJSON(gsi["WarmThroughput"]))
			}
		}
		if p["DeletionProtectionEnabled"] != prod || (table["DeletionPolicy"] == "Retain") != prod {
			t.Errorf("%s: deletion protection %v, policy %v", env, p["DeletionProtectionEnabled"], table["DeletionPolicy"])
		}
	}
}

func TestFunctionsQueuesAndTriggers(t *testing.T) {
	for _, env := range singleRegionEnvironments {
		tmpl := synth(t, env)
		fns := resources(tmpl, "AWS::Lambda::Function")
		if len(fns) != len(deployed.Functions) {
			t.Fatalf("%s: %d functions", env, len(fns))
		}
		for prefix, timeout := range map[string]float64{"Charge": timeoutOf(deploy.FunctionCharge), "SqsConsumer": timeoutOf(deploy.FunctionConsumer), "Reconciler": timeoutOf(deploy.FunctionReconciler), "Sweeper": timeoutOf(deploy.FunctionSweeper),
			"Publisher": timeoutOf(deploy.FunctionPublisher), "Operator": timeoutOf(deploy.FunctionOperator)} {
			p := props(byPrefix(t, fns, prefix))
			if asJSON(p["TracingConfig"]) != `{"Mode":"Active"}` {
				t.Errorf("%s %s: tracing %s, want active", env, prefix, asJSON(p["TracingConfig"]))
			}
			if p["Runtime"] != "provided.al2023" || asJSON(p["Architectures"]) != `["arm64"]` || p["Handler"] != "bootstrap" || p["Timeout"] != timeout {
				t.Errorf("%s %s: runtime %v arch %v handler %v timeout %v", env, prefix, p["Runtime"], p["Architectures"], p["Handler"], p["Timeout"])
			}
			vars := p["Environment"].(map[string]any)["Variables"].(map[string]any)
			for name := range vars {
				if strings.Contains(name, "KEY") || strings.Contains(name, "SECRET") && name != "ACQUIRER_SECRET_ARN" {
					t.Errorf("%s %s: variable %s looks like a credential; credentials come from Secrets Manager", env, prefix, name)
				}
			}
			for _, local := range deploy.LocalOnly {
				if vars[local] != nil {
					t.Errorf("%s %s: %s is a local switch, yet set in AWS", env, prefix, local)
				}
			}
		}
		charge := props(byPrefix(t, fns, "Charge"))
		if want := 100.0; charge["ReservedConcurrentExecutions"] != want {
			t.Errorf("%s: charge reserved concurrency %v, want %v", env, charge["ReservedConcurrentExecutions"], want)
		}
		cfg, _ := ConfigFor(env, testInputs)
		queues := resources(tmpl, "AWS::SQS::Queue")
		if len(queues) != len(cfg.Producers)+3+len(subscribersOf(cfg))+2 {
			t.Fatalf("%s: %d queues, want one per producer, the reconcile queue, the DLQ, the rejected queue, "+
				"an outcome queue per subscriber, the undelivered outcomes and the publisher's failures", env, len(queues))
		}
		for id, q := range queues {
			p := props(q)
			if p["SqsManagedSseEnabled"] != true {
				t.Errorf("%s %s: not encrypted", env, id)
			}
			if strings.Contains(id, "DLQ") || strings.HasPrefix(id, "RejectedCommands") {
				continue
			}
			if strings.Contains(id, "Outcomes") || strings.HasPrefix(id, "PublisherFailures") {
				if p["MessageRetentionPeriod"] != 14*86400.0 {
					t.Errorf("%s %s: retention %v, want 14 days", env, id, p["MessageRetentionPeriod"])
				}
				continue
			}
			if p["VisibilityTimeout"] != 6.0*timeoutOf(deploy.FunctionConsumer) || !strings.Contains(asJSON(p["RedrivePolicy"]), fmt.Sprintf(`"maxReceiveCount":%d`, deploy.MaxReceiveCount)) {
				t.Errorf("%s %s: visibility %v redrive %v", env, id, p["VisibilityTimeout"], asJSON(p["RedrivePolicy"]))
			}
		}
		mappings := resources(tmpl, "AWS::Lambda::EventSourceMapping")
		if len(mappings) != len(cfg.Producers)+2 {
			t.Fatalf("%s: %d mappings, want one per producer queue, the reconcile queue's and the stream's", env, len(mappings))
		}
		for id, m := range mappings {
			if strings.HasPrefix(id, "PublisherMapping") {
				continue // TestOutcomeEvents
			}
			m := props(m)
			if asJSON(m["FunctionResponseTypes"]) != `["ReportBatchItemFailures"]` || m["BatchSize"] != 10.0 || m["ScalingConfig"] == nil {
				t.Errorf("%s %s: mapping %s", env, id, asJSON(m))
			}
		}
		if inv := props(byPrefix(t, resources(tmpl, "AWS::Lambda::EventInvokeConfig"), "SweeperEventInvokeConfig")); inv["MaximumRetryAttempts"] != 0.0 || inv["MaximumEventAgeInSeconds"] != 60.0 ||
			!strings.Contains(asJSON(inv["FunctionName"]), "Sweeper") {
			t.Errorf("%s: the sweeper's asynchronous invocations: %s", env, asJSON(inv))
		}
		if inv := props(byPrefix(t, resources(tmpl, "AWS::Lambda::EventInvokeConfig"), "MatchEventInvokeConfig")); inv["MaximumRetryAttempts"] != 0.0 {
			t.Errorf("%s: the match's asynchronous invocations: %s", env, asJSON(inv))
		}
		if rules := resources(tmpl, "AWS::Events::Rule"); len(rules) != 2 || props(byPrefix(t, rules, "SweeperSchedule"))["ScheduleExpression"] != "rate(1 minute)" {
			t.Errorf("%s: schedules %v", env, asJSON(rules))
		}
		// The daily match at the environment's time, after midnight UTC.
		at := map[string]string{"dev": "cron(0 2 * * ? *)", "staging": "cron(0 2 * * ? *)", "prod": "cron(0 4 * * ? *)"}[env]
		if got := props(byPrefix(t, resources(tmpl, "AWS::Events::Rule"), "MatchSchedule"))["ScheduleExpression"]; got != at {
			t.Errorf("%s: the match's schedule %v, want %s", env, got, at)
		}
		if len(resources(tmpl, "AWS::SecretsManager::Secret")) != 1 {
			t.Errorf("%s: no acquirer secret", env)
		}
	}
}

func TestAPI(t *testing.T) {
	tmpl := synth(t, "staging")
	auth := props(only(t, tmpl, "AWS::ApiGatewayV2::Authorizer"))
	if auth["AuthorizerType"] != "JWT" || asJSON(auth["JwtConfiguration"]) != `{"Audience":["test-audience"],"Issuer":"https://idp.test.invalid/"}` {
		t.Errorf("authorizer %s", asJSON(auth))
	}
	checkRoutes(t, "staging", tmpl)
	if !slices.Equal(route.Public, []string{route.Health}) {
		t.Errorf("the public routes are %v: each needs its reason here and in nag.go", route.Public)
	}
	stage := props(only(t, tmpl, "AWS::ApiGatewayV2::Stage"))
	if stage["AccessLogSettings"] == nil || asJSON(stage["DefaultRouteSettings"]) != `{"ThrottlingBurstLimit":100,"ThrottlingRateLimit":200}` {
		t.Errorf("stage %s", asJSON(stage))
	}
	format := asJSON(stage["AccessLogSettings"])
	for _, field := range []string{"$context.requestId", "$context.status", "$context.integrationLatency", "$context.integrationStatus", "$context.error.message", "$context.authorizer.error"} {
		if !strings.Contains(format, field) {
			t.Errorf("the access log lacks %s", field)
		}
	}
}

// checkRoutes: the API has exactly the routes of route.All and
// route.Public; each of route.All has the JWT authorizer and its scope,
// none of route.Public has an authorizer; all reach the one integration.
func checkRoutes(t *testing.T, where string, tmpl map[string]any) {
	t.Helper()
	var keys, want []string
	targets := map[string]bool{}
	for _, r := range resources(tmpl, "AWS::ApiGatewayV2::Route") {
		p := props(r)
		key := p["RouteKey"].(string)
		keys = append(keys, key)
		targets[asJSON(p["Target"])] = true
		switch {
		case slices.Contains(route.Public, key):
			if p["AuthorizationType"] != "NONE" || p["AuthorizerId"] != nil || p["AuthorizationScopes"] != nil {
				t.Errorf("%s: public route %s has an authorizer: %s", where, key, asJSON(p))
			}
		case p["AuthorizationType"] != "JWT" || p["AuthorizerId"] == nil:
			t.Errorf("%s: route %s without the JWT authorizer", where, key)
		}
		if want := `["` + route.Scopes[key] + `"]`; !slices.Contains(route.Public, key) && asJSON(p["AuthorizationScopes"]) != want {
			t.Errorf("%s: route %s scopes %s, want %s", where, key, asJSON(p["AuthorizationScopes"]), want)
		}
	}
	want = append(slices.Clone(route.All), route.Public...)
	sort.Strings(keys)
	sort.Strings(want)
	if !slices.Equal(keys, want) {
		t.Errorf("%s: routes %v, want %v", where, keys, want)
	}
	if len(targets) != 1 || len(resources(tmpl, "AWS::ApiGatewayV2::Integration")) != 1 {
		t.Errorf("%s: the routes reach %d targets of %d integrations, want the one", where, len(targets), len(resources(tmpl, "AWS::ApiGatewayV2::Integration")))
	}
	// The routes without the authorizer have a throttle of their own.
	stage := only(t, tmpl, "AWS::ApiGatewayV2::Stage")
	settings, _ := props(stage)["RouteSettings"].(map[string]any)
	for _, r := range route.Public {
		if got := asJSON(settings[r]); got != fmt.Sprintf(`{"ThrottlingBurstLimit":%d,"ThrottlingRateLimit":%d}`, publicBurst, publicRate) {
			t.Errorf("%s: public route %s throttled as %s", where, r, got)
		}
	}
}

// TestLeastPrivilege pins every action each role may take, and that no
// statement names a wildcard action or a literal wildcard resource.
func TestLeastPrivilege(t *testing.T) {
	tmpl := synth(t, "prod")
	want := map[string][]string{
		"ChargePolicy": {"dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "logs:CreateLogStream", "logs:PutLogEvents", "secretsmanager:GetSecretValue",
			"xray:PutTelemetryRecords", "xray:PutTraceSegments"},
		"SqsConsumerPolicy": {"dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "logs:CreateLogStream", "logs:PutLogEvents",
			"secretsmanager:GetSecretValue", "sns:Publish", "sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ReceiveMessage", "sqs:SendMessage",
			"xray:PutTelemetryRecords", "xray:PutTraceSegments"},
		"ReconcilerPolicy": {"dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "logs:CreateLogStream", "logs:PutLogEvents",
			"secretsmanager:GetSecretValue", "sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ReceiveMessage", "sqs:SendMessage",
			"xray:PutTelemetryRecords", "xray:PutTraceSegments"},
		"SweeperPolicy": {"dynamodb:GetItem", "dynamodb:Query", "dynamodb:UpdateItem", "logs:CreateLogStream", "logs:PutLogEvents", "sqs:SendMessage",
			"xray:PutTelemetryRecords", "xray:PutTraceSegments"},
		"PublisherPolicy": {"dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator", "dynamodb:ListStreams", "logs:CreateLogStream", "logs:PutLogEvents",
			"sns:Publish", "sqs:SendMessage", "xray:PutTelemetryRecords", "xray:PutTraceSegments"},
		"OperatorPolicy": {"dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "logs:CreateLogStream", "logs:PutLogEvents",
			"secretsmanager:GetSecretValue", "xray:PutTelemetryRecords", "xray:PutTraceSegments"},
		"MatchPolicy": {"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "dynamodb:UpdateItem", "logs:CreateLogStream", "logs:PutLogEvents",
			"secretsmanager:GetSecretValue", "xray:PutTelemetryRecords", "xray:PutTraceSegments"},
		"OperatorCallerPolicy": {"dynamodb:DescribeStream", "dynamodb:GetItem", "dynamodb:GetRecords", "dynamodb:GetShardIterator", "dynamodb:Query",
			"lambda:InvokeFunction", "lambda:InvokeFunctionUrl", "sns:Publish", "sqs:DeleteMessage", "sqs:ReceiveMessage"},
		"ProducerordersPolicy":    {"sqs:SendMessage"},
		"ProducerbillingPolicy":   {"sqs:SendMessage"},
		"ProducerordersOutcomes":  slices.Sorted(slices.Values(outcomeReadActions)),
		"ProducerbillingOutcomes": slices.Sorted(slices.Values(outcomeReadActions)),
	}
	policies := resources(tmpl, "AWS::IAM::Policy")
	if len(policies) != len(want) {
		t.Fatalf("%d policies, want %d", len(policies), len(want))
	}
	for prefix, actions := range want {
		doc := props(byPrefix(t, policies, prefix))["PolicyDocument"].(map[string]any)
		var got []string
		for _, st := range doc["Statement"].([]any) {
			st := st.(map[string]any)
			if st["Effect"] != "Allow" {
				t.Errorf("%s: %v", prefix, st)
			}
			for _, a := range list(st["Action"]) {
				if strings.Contains(a.(string), "*") {
					t.Errorf("%s: wildcard action %v", prefix, a)
				}
				got = append(got, a.(string))
			}
			xray := asJSON(st["Action"]) == asJSON(xrayActions) // they take no resource-level permissions
			for _, r := range list(st["Resource"]) {
				if s, ok := r.(string); ok && strings.Contains(s, "*") && !(xray && s == "*") {
					t.Errorf("%s: wildcard resource %v", prefix, s)
				}
			}
		}
		sort.Strings(got)
		if got = slices.Compact(got); !slices.Equal(got, actions) {
			t.Errorf("%s: actions %v, want %v", prefix, got, actions)
		}
	}
	for id, role := range resources(tmpl, "AWS::IAM::Role") {
		if props(role)["ManagedPolicyArns"] != nil || props(role)["Policies"] != nil {
			t.Errorf("role %s has policies beyond its own: %s", id, asJSON(props(role)))
		}
	}
	if strings.Contains(asJSON(tmpl), `"dynamodb:Scan"`) {
		t.Error("something may Scan")
	}
	// Rows by prefix: every item action names the prefixes it may touch; no
	// role updates a ledger row or a refund row or deletes a refund row
	// (the deletes under the ledger's prefix are of held markers, by the
	// code's condition), and none puts or deletes a balance; the sweeper touches records, closes
	// balances (the expiry) and unlists a ledger row's authorization, reads the
	// table probe's one key (idem.SentinelPK) and no other; the reconciler
	// puts ledger and refund rows only (never an idempotency record: the
	// claim path fails for it); the queue consumer and the operator's
	// channel refund as the charge function does.
	records := `{"ForAllValues:StringLike":{"dynamodb:LeadingKeys":["` + idem.RecordPrefix + `*"]}}`
	ledger := `{"ForAllValues:StringLike":{"dynamodb:LeadingKeys":["` + tabledef.LedgerPrefix + `*"]}}`
	both := `{"ForAllValues:StringLike":{"dynamodb:LeadingKeys":["` + idem.RecordPrefix + `*","` + tabledef.LedgerPrefix + `*"]}}`
	refunds := leadingKeysOf(tabledef.RefundPrefix, tabledef.CapturePrefix, tabledef.VoidPrefix)
	balances := `{"ForAllValues:StringLike":{"dynamodb:LeadingKeys":["` + tabledef.BalancePrefix + `*"]}}`
	for prefix, want := range map[string]map[string][]string{ // action → the conditions of its statements ("" none)
		"ChargePolicy": {"dynamodb:PutItem": {both, refunds}, "dynamodb:GetItem": {both, refunds, balances},
			"dynamodb:UpdateItem": {records, balances}, "dynamodb:DeleteItem": {both}},
		"SqsConsumerPolicy": {"dynamodb:PutItem": {both, refunds}, "dynamodb:GetItem": {both, refunds, balances},
			"dynamodb:UpdateItem": {records, balances}, "dynamodb:DeleteItem": {both}},
		"OperatorPolicy": {"dynamodb:PutItem": {leadingKeysOf(tabledef.LedgerPrefix, tabledef.ReleasePrefix), refunds},
			"dynamodb:GetItem":    {leadingKeysOf(idem.RecordPrefix, tabledef.LedgerPrefix, tabledef.ReleasePrefix), refunds, balances},
			"dynamodb:UpdateItem": {records, balances}, "dynamodb:DeleteItem": {both}},
		"ReconcilerPolicy": {"dynamodb:PutItem": {ledger, refunds}, "dynamodb:GetItem": {both, refunds, balances},
			"dynamodb:UpdateItem": {records, balances}, "dynamodb:DeleteItem": {both}},
		"SweeperPolicy": {"dynamodb:UpdateItem": {records, balances, unlistOnly}, "dynamodb:Query": {""}, "dynamodb:GetItem": {sentinelOnly}},
		// The match reads rows and balances, and writes its own items alone.
		"MatchPolicy": {"dynamodb:GetItem": {leadingKeysOf(append([]string{tabledef.BalancePrefix, tabledef.MatchPrefix}, tabledef.RowPrefixes()...)...)},
			"dynamodb:PutItem": {leadingKeysOf(tabledef.MatchPrefix)}, "dynamodb:UpdateItem": {leadingKeysOf(tabledef.MatchPrefix)}, "dynamodb:Query": {""}},
	} {
		got := map[string][]string{}
		for _, st := range props(byPrefix(t, policies, prefix))["PolicyDocument"].(map[string]any)["Statement"].([]any) {
			st := st.(map[string]any)
			for _, a := range list(st["Action"]) {
				if _, ok := want[a.(string)]; !ok {
					continue
				}
				cond := ""
				if st["Condition"] != nil {
					cond = asJSON(st["Condition"])
				}
				got[a.(string)] = append(got[a.(string)], cond)
			}
		}
		for action, conds := range want {
			if !slices.Equal(slices.Sorted(slices.Values(got[action])), slices.Sorted(slices.Values(conds))) {
				t.Errorf("%s: %s has conditions %v, want %v", prefix, action, got[action], conds)
			}
		}
	}
}

// leadingKeysOf is a statement's condition on the prefixes of the keys it
// may touch.
func leadingKeysOf(prefixes ...string) string {
	var like []string
	for _, p := range prefixes {
		like = append(like, `"`+p+`*"`)
	}
	return `{"ForAllValues:StringLike":{"dynamodb:LeadingKeys":[` + strings.Join(like, ",") + `]}}`
}

// unlistOnly is the condition of the sweeper's unlisting of an
// authorization: a ledger row's key, its listing and its expired mark,
// nothing returned.
const unlistOnly = `{"ForAllValues:StringEquals":{"dynamodb:Attributes":["` + tabledef.KeyAttribute + `","` + tabledef.AuthorizationShardAttribute +
	`","` + tabledef.ExpiredAttribute + `"]},"ForAllValues:StringLike":{"dynamodb:LeadingKeys":["` + tabledef.LedgerPrefix + `*"]},"StringEqualsIfExists":{"dynamodb:ReturnValues":"NONE"}}`

// sentinelOnly is the condition of the sweeper's one read of the table in
// every mode, its table probe's: the key no record has.
var sentinelOnly = `{"ForAllValues:StringEquals":{"dynamodb:LeadingKeys":["` + idem.SentinelPK + `"]}}`

// TestQueuePolicies: each producer's queue admits only that producer's
// role, the reconcile queue only the sweeper's, and the sweeper's own
// policy can send to the reconcile queue and nowhere else. The consumers'
// and the sweeper's roles are not producers.
func TestQueuePolicies(t *testing.T) {
	for _, env := range singleRegionEnvironments {
		tmpl := synth(t, env)
		cfg, _ := ConfigFor(env, testInputs)
		senders := map[string]string{} // queue logical id → the one role that may send
		for _, p := range cfg.Producers {
			senders["ChargeCommands"+p.Name] = "Producer" + p.Name + "Role"
		}
		senders["ReconcileCommands"] = "SweeperRole"
		for _, qp := range resources(tmpl, "AWS::SQS::QueuePolicy") {
			q := asJSON(props(qp)["Queues"])
			if strings.Contains(q, "DLQ") || strings.Contains(q, "RejectedCommands") || strings.Contains(q, "PublisherFailures") {
				continue // written by the functions' own policies (TestLeastPrivilege)
			}
			if strings.Contains(q, "Outcomes") {
				continue // the topic's (TestOutcomeEvents)
			}
			var queueID string
			for id := range senders {
				if strings.Contains(q, `"`+id) && (queueID == "" || len(id) > len(queueID)) {
					queueID = id
				}
			}
			role := senders[queueID]
			if role == "" {
				t.Fatalf("%s: a policy for an unknown queue %s", env, q)
			}
			var denies, allows int
			for _, st := range props(qp)["PolicyDocument"].(map[string]any)["Statement"].([]any) {
				st := st.(map[string]any)
				if st["Action"] != "sqs:SendMessage" {
					continue
				}
				switch st["Effect"] {
				case "Deny":
					denies++
					cond := asJSON(st["Condition"])
					if asJSON(st["Principal"]) != `{"AWS":"*"}` || !strings.Contains(cond, `"ArnNotEquals":{"aws:PrincipalArn":{"Fn::GetAtt":["`+role) {
						t.Errorf("%s %s: deny %s, want everyone but %s", env, queueID, asJSON(st), role)
					}
				case "Allow":
					allows++
					if p := asJSON(st["Principal"]); !strings.Contains(p, `"`+role) {
						t.Errorf("%s %s: allows %s, want only %s", env, queueID, p, role)
					}
				}
				for _, other := range []string{"SqsConsumerRole", "ReconcilerRole", "ChargeRole"} {
					if strings.Contains(asJSON(st), other) {
						t.Errorf("%s %s: %s is named in %s", env, queueID, other, asJSON(st))
					}
				}
			}
			if denies != 1 || allows != 1 {
				t.Errorf("%s %s: %d denies and %d allows of sqs:SendMessage, want 1 and 1", env, queueID, denies, allows)
			}
			delete(senders, queueID)
		}
		if len(senders) != 0 {
			t.Errorf("%s: queues without a sender policy: %v", env, senders)
		}
		// The sweeper's own policy: sqs:SendMessage on the reconcile queue only.
		for _, st := range props(byPrefix(t, resources(tmpl, "AWS::IAM::Policy"), "SweeperPolicy"))["PolicyDocument"].(map[string]any)["Statement"].([]any) {
			st := st.(map[string]any)
			if slices.Contains(list(st["Action"]), any("sqs:SendMessage")) && asJSON(st["Resource"]) != `{"Fn::GetAtt":["ReconcileCommands1837AB11","Arn"]}` {
				t.Errorf("%s: the sweeper may send to %s", env, asJSON(st["Resource"]))
			}
		}
	}
}

func mustDuration(t *testing.T, s string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestProtocolDefaults: every function of every environment is deployed
// with the protocol's compiled defaults (T, the skew, the acquirer timeout,
// the lease margin), which idemctl uses for records that carry none, and
// with its environment's acquirer id.
func TestProtocolDefaults(t *testing.T) {
	for _, env := range singleRegionEnvironments {
		cfg, _ := ConfigFor(env, testInputs)
		for id, fn := range resources(synth(t, env), "AWS::Lambda::Function") {
			vars := props(fn)["Environment"].(map[string]any)["Variables"].(map[string]any)
			want := map[string]time.Duration{deploy.EnvInTransitBound: idem.DefaultInTransitBound, deploy.EnvClockSkew: idem.DefaultClockSkew}
			if strings.HasPrefix(id, "Publisher") {
				continue // it takes no protocol setting: it only publishes what the table says
			}
			if !strings.HasPrefix(id, "Sweeper") {
				want[deploy.EnvAcquirerTimeout], want[deploy.EnvLeaseMargin] = charge.DefaultAcquirerTimeout, idem.DefaultLeaseMargin
				if vars[deploy.EnvAcquirerID] != cfg.AcquirerID || cfg.AcquirerID == "" {
					t.Errorf("%s %s: %s = %v, want %q", env, id, deploy.EnvAcquirerID, vars[deploy.EnvAcquirerID], cfg.AcquirerID)
				}
			}
			for name, d := range want {
				if s, _ := vars[name].(string); s == "" || mustDuration(t, s) != d {
					t.Errorf("%s %s: %s = %v, want the compiled default %s", env, id, name, vars[name], d)
				}
			}
		}
	}
}

// TestProducersConfig: every environment lists its producers validly, and
// a producer's AssumedBy is the one principal its role trusts.
func TestProducersConfig(t *testing.T) {
	cfg, _ := ConfigFor("staging", testInputs)
	cfg.Producers[0].AssumedBy = "arn:aws:iam::111122223333:role/orders-service"
	trust := asJSON(resources(synthConfig(t, "trust", cfg), "AWS::IAM::Role"))
	if !strings.Contains(trust, `"Principal":{"AWS":"arn:aws:iam::111122223333:role/orders-service"}`) {
		t.Fatalf("the producer role does not trust its AssumedBy: %s", trust)
	}
	for _, env := range singleRegionEnvironments {
		cfg, err := ConfigFor(env, testInputs)
		if err != nil || cfg.checkProducers() != nil {
			t.Fatalf("%s: %v", env, err)
		}
	}
	for name, ps := range map[string][]Producer{
		"none":        nil,
		"bad name":    {{Name: "Orders", Accounts: []string{"acct_1"}}},
		"twice":       {{Name: "orders", Accounts: []string{"acct_1"}}, {Name: "orders", Accounts: []string{"acct_2"}}},
		"http":        {{Name: event.ProducerHTTP, Accounts: []string{"acct_1"}}},
		"no accounts": {{Name: "orders"}},
		"bad account": {{Name: "orders", Accounts: []string{""}}},
		"bad trust":   {{Name: "orders", Accounts: []string{"acct_1"}, AssumedBy: "orders-service"}},
		"root trust":  {{Name: "orders", Accounts: []string{"acct_1"}, AssumedBy: "arn:aws:iam::111122223333:root"}},
		"ten":         tenProducers(),
	} {
		if err := (Config{Producers: ps}).checkProducers(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// tenProducers is one producer more than the DLQ's redrive-allow policy
// can name besides the reconcile queue.
func tenProducers() []Producer {
	var ps []Producer
	for i := range maxProducers + 1 {
		ps = append(ps, Producer{Name: fmt.Sprintf("p%d", i), Accounts: []string{"acct_1"}})
	}
	return ps
}

// TestAlarms: every alarm an on-call engineer needs exists, says what to
// do, and notifies the topic, which only takes TLS; the heartbeat fires on
// silence; the durations alarm at 80 % of each timeout; the dashboard is
// there.
func TestAlarms(t *testing.T) {
	tmpl := synth(t, "prod")
	cfg, _ := ConfigFor("prod", testInputs)
	alarms := resources(tmpl, "AWS::CloudWatch::Alarm")
	want := []string{"DeadLettersAlarm", "RejectedCommandsAlarm", "ProducerNotAllowedAlarm", "Api5xxRateAlarm", "ChargePendingAlarm", "ConsumerPendingAlarm",
		"ChargeUnavailableAlarm", "ConsumerUnavailableAlarm", "AcquirerErrorsAlarm", "SweeperHeartbeatAlarm", "StaleRecordsAlarm",
		"StaleFailingAlarm", "OldestStaleAlarm", "AcquirerMismatchAlarm", "HeldRecordsAlarm", "RefundMismatchAlarm", "HeldRefundsAlarm",
		"CaptureMismatchAlarm", "VoidMismatchAlarm", "HeldCapturesAlarm", "HeldVoidsAlarm", "TableThrottlesAlarm", "IndexThrottlesAlarm", "TableSystemErrorsAlarm", "TableProbeAlarm", "QueueAgeAlarmreconcile",
		"PublisherIteratorAgeAlarm", "PublisherFailuresAlarm", "StreamUndecodableAlarm", "UndeliveredOutcomesAlarm",
		"MovementsWithoutRowAlarm", "RowsWithoutMovementAlarm", "TermsDifferAlarm", "RefundedOverCapturedAlarm", "CapturedOverAuthorizedAlarm"}
	for _, p := range cfg.Producers {
		want = append(want, "QueueAgeAlarm"+p.Name)
	}
	for _, s := range subscribersOf(cfg) {
		want = append(want, "OutcomesUnreadAlarm"+s)
	}
	for _, fn := range []string{"Charge", "Consumer", "Reconciler", "Sweeper", "Publisher", "Operator", "Match"} {
		want = append(want, fn+"ErrorsAlarm", fn+"ThrottlesAlarm", fn+"DurationAlarm")
	}
	if len(alarms) != len(want) {
		t.Errorf("%d alarms, want %d", len(alarms), len(want))
	}
	for _, id := range want {
		a := props(byPrefix(t, alarms, id))
		if actions := list(a["AlarmActions"]); len(actions) != 1 || !strings.Contains(asJSON(actions[0]), "Alarms") {
			t.Errorf("alarm %s does not notify the topic: %v", id, actions)
		}
		if d, _ := a["AlarmDescription"].(string); len(d) < 40 {
			t.Errorf("alarm %s does not say what to do: %q", id, d)
		}
	}
	// Authorizations that lapse uncaptured are business, not an incident:
	// a dashboard panel, never an alarm.
	if all := asJSON(alarms); strings.Contains(all, obs.MetricAuthorizationsExpired) {
		t.Errorf("an alarm reads %s", obs.MetricAuthorizationsExpired)
	}
	if board := asJSON(resources(tmpl, "AWS::CloudWatch::Dashboard")); !strings.Contains(board, "lost sales") || !strings.Contains(board, obs.MetricAuthorizationsExpired) {
		t.Error("the dashboard has no lost-sales panel")
	}
	// The heartbeat pages on silence (no data: INSUFFICIENT_DATA), not on
	// the first deploy (a new alarm starts there and acts only on a change).
	hb := props(byPrefix(t, alarms, "SweeperHeartbeatAlarm"))
	if hb["ComparisonOperator"] != "LessThanThreshold" || hb["TreatMissingData"] != "missing" || hb["Threshold"] != 1.0 ||
		len(list(hb["InsufficientDataActions"])) != 1 || strings.Contains(asJSON(hb), "FILL") {
		t.Errorf("heartbeat %s", asJSON(hb))
	}
	if a := asJSON(props(byPrefix(t, alarms, "AcquirerMismatchAlarm"))); !strings.Contains(a, `"Value":"`+op.Mismatch.String()+`"`) || !strings.Contains(a, `"Threshold":1`) {
		t.Errorf("the mismatch alarm: %s", a)
	}
	// A refund's mismatch pages from either entry point, a held refund
	// from the sweeper's count.
	if a := asJSON(props(byPrefix(t, alarms, "RefundMismatchAlarm"))); strings.Count(a, `"MetricName":"`+obs.MetricRefundMismatches+`"`) != 2 ||
		!strings.Contains(a, `"Namespace":"`+obs.LogNamespace(cfg.Name, obs.FunctionCharge)+`"`) || !strings.Contains(a, `"Value":"`+obs.FunctionSQSConsumer+`"`) || !strings.Contains(a, `"Threshold":1`) {
		t.Errorf("the refund mismatch alarm: %s", a)
	}
	if a := asJSON(props(byPrefix(t, alarms, "HeldRefundsAlarm"))); !strings.Contains(a, `"MetricName":"`+obs.MetricHeldRefunds+`"`) || !strings.Contains(a, `"Value":"`+obs.FunctionSweeper+`"`) {
		t.Errorf("the held refunds alarm: %s", a)
	}
	for fn, timeout := range map[string]float64{"Charge": timeoutOf(deploy.FunctionCharge), "Consumer": timeoutOf(deploy.FunctionConsumer), "Sweeper": timeoutOf(deploy.FunctionSweeper), "Publisher": timeoutOf(deploy.FunctionPublisher)} {
		if d := props(byPrefix(t, alarms, fn+"DurationAlarm")); d["Threshold"] != 0.8*timeout*1000 || d["ExtendedStatistic"] != "p99" {
			t.Errorf("%s duration alarm %s", fn, asJSON(d))
		}
	}
	if r := asJSON(props(byPrefix(t, alarms, "Api5xxRateAlarm"))["Metrics"]); !strings.Contains(r, "100 * errors / requests") {
		t.Errorf("the 5xx alarm is not a rate: %s", r)
	}
	if a := props(byPrefix(t, alarms, "ProducerNotAllowedAlarm")); !strings.Contains(asJSON(a["Dimensions"]), `"Value":"producer_not_allowed"`) {
		t.Errorf("the PRODUCER_NOT_ALLOWED alarm watches %s", asJSON(a["Dimensions"]))
	}
	tp := asJSON(props(byPrefix(t, resources(tmpl, "AWS::SNS::TopicPolicy"), "AlarmsPolicy")))
	if !strings.Contains(tp, `"aws:SecureTransport":"false"`) {
		t.Errorf("the topic takes plain HTTP: %s", tp)
	}
	if !strings.Contains(tp, `"Action":"sns:Publish","Condition":{"ArnLike":{"aws:SourceArn":`) || !strings.Contains(tp, `"Principal":{"Service":"cloudwatch.amazonaws.com"}`) {
		t.Errorf("CloudWatch may not publish the alarms to the topic: %s", tp)
	}
	var emails []string
	for _, sub := range resources(tmpl, "AWS::SNS::Subscription") {
		if p := props(sub); p["Protocol"] == "email" {
			emails = append(emails, p["Endpoint"].(string))
		}
	}
	sort.Strings(emails)
	if !slices.Equal(emails, []string{"oncall@example.com", "payments@example.com"}) {
		t.Errorf("the alarms reach %v", emails)
	}
	body := asJSON(props(only(t, tmpl, "AWS::CloudWatch::Dashboard"))["DashboardBody"])
	for _, w := range []string{"Charges by outcome", "Duration p50 / p99", "Acquirer latency", "Queue depth", "Oldest message age",
		"Stale and failing", "Throttles", "Outcome events published", "Unread outcome events", "Write units consumed",
		"Refunds (HTTP, queues) and refund mismatches", `\"` + obs.MetricRefunds + `\"`, `\"` + obs.MetricRefundMismatches + `\"`, "Held records: all, and refunds'", `\"` + obs.MetricHeldRefunds + `\"`} {
		if !strings.Contains(body, w) {
			t.Errorf("the dashboard has no %q", w)
		}
	}
}

// testInputs are the deployer's inputs of the tests.
func testInputs(key string) string {
	return map[string]string{
		InputJWTIssuer: "https://idp.test.invalid/", InputJWTAudience: "test-audience",
		InputAlarmEmails: "oncall@example.com, payments@example.com", InputReservedConcurrency: "100",
		InputThrottleRate: "200", InputThrottleBurst: "100", InputAccount: "111122223333", InputRegion: "sa-east-1",
		InputProducerPrincipal + "orders":  "arn:aws:iam::444455556666:role/orders-service",
		InputProducerPrincipal + "billing": "arn:aws:iam::444455556666:role/billing-service",
		InputOperatorPrincipal:             "arn:aws:iam::111122223333:role/payments-operators",
	}[key]
}

func TestUnknownEnvironment(t *testing.T) {
	if _, err := ConfigFor("qa", testInputs); err == nil {
		t.Fatal("ConfigFor(qa) succeeded")
	}
}

// TestJWTInputsRequired: no environment synthesizes without the IdP's
// issuer and audience, and the issuer must be https.
func TestJWTInputsRequired(t *testing.T) {
	for _, env := range Environments {
		for name, inputs := range map[string]map[string]string{
			"none":         {},
			"no audience":  {InputJWTIssuer: "https://idp.test.invalid/"},
			"no issuer":    {InputJWTAudience: "test-audience"},
			"http issuer":  {InputJWTIssuer: "http://idp.test.invalid/", InputJWTAudience: "test-audience"},
			"bare issuer":  {InputJWTIssuer: "idp.test.invalid", InputJWTAudience: "test-audience"},
			"space in aud": {InputJWTIssuer: "https://idp.test.invalid/", InputJWTAudience: "test audience"},
		} {
			if _, err := ConfigFor(env, func(k string) string { return inputs[k] }); err == nil || !strings.Contains(err.Error(), "JWT") {
				t.Errorf("%s, %s: %v, want an error naming the JWT input", env, name, err)
			}
		}
	}
}

func list(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	return []any{v}
}

// TestValidationIsStrict is the control for synth's zero findings: the same
// validation refuses a template with a queue whose visibility timeout is out
// of CloudFormation's range.
func TestValidationIsStrict(t *testing.T) {
	app := awscdk.NewApp(&awscdk.AppProps{Context: &map[string]interface{}{"@aws-cdk/core:validateAgainstDefaultRules": true}})
	stack := awscdk.NewStack(app, jsii.String("control"), nil)
	awssqs.NewCfnQueue(stack, jsii.String("Bad"), &awssqs.CfnQueueProps{VisibilityTimeout: jsii.Number(999999)})
	defer func() {
		r := recover()
		if r != nil && !strings.Contains(fmt.Sprint(r), "Validation") {
			t.Fatalf("synthesis failed, but not by validation: %v", r)
		}
		if r == nil {
			t.Fatal("an out-of-range VisibilityTimeout passed validation: the validation is not running")
		}
	}()
	app.Synth(nil)
}

// TestCapacityInputs: staging and prod do not synthesize without an alarm
// subscriber, the reservation and the stage throttle; dev takes defaults;
// and the throttle must fit the reservation (rate ≤ reserved ÷ p99, burst
// ≤ reserved), so overload is a 429 before it is a Lambda throttle.
func TestCapacityInputs(t *testing.T) {
	jwtOnly := func(k string) string {
		return map[string]string{InputJWTIssuer: "https://idp.test.invalid/", InputJWTAudience: "test-audience", InputAccount: "111122223333", InputRegion: "sa-east-1"}[k]
	}
	dev, err := ConfigFor("dev", jwtOnly)
	if err != nil || dev.ChargeReservedConcurrency != 0 || dev.ThrottleRate != 50 || dev.ThrottleBurst != 100 || len(dev.AlarmEmails) != 0 {
		t.Fatalf("dev defaults: %+v, %v", dev, err)
	}
	for _, env := range []string{"staging", "prod"} {
		for _, key := range []string{InputAlarmEmails, InputReservedConcurrency, InputThrottleRate, InputThrottleBurst} {
			without := func(k string) string {
				if k == key {
					return ""
				}
				return testInputs(k)
			}
			if _, err := ConfigFor(env, without); err == nil || !strings.Contains(err.Error(), key) {
				t.Errorf("%s without %s: %v, want an error naming it", env, key, err)
			}
		}
	}
	for name, over := range map[string]map[string]string{
		"rate above reserved ÷ p99": {InputThrottleRate: "201"},
		"burst above reserved":      {InputThrottleBurst: "101"},
		"not an address":            {InputAlarmEmails: "oncall"},
		"fractional burst":          {InputThrottleBurst: "1.5"},
		"zero rate":                 {InputThrottleRate: "0"},
		"negative reservation":      {InputReservedConcurrency: "-1"},
	} {
		in := func(k string) string {
			if v, ok := over[k]; ok {
				return v
			}
			return testInputs(k)
		}
		if _, err := ConfigFor("prod", in); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if c, _ := ConfigFor("prod", testInputs); c.ThrottleRate > float64(c.ChargeReservedConcurrency)/c.ChargeP99.Seconds() {
		t.Fatalf("prod's throttle %g/s exceeds %d reserved ÷ %s", c.ThrottleRate, c.ChargeReservedConcurrency, c.ChargeP99)
	}
}

// TestTracing: with the tracing input (make deploy TRACING=1) every function
// carries the ADOT collector layer for its region and arm64, exports to it
// over OTLP/HTTP, has active tracing and the X-Ray permissions the
// collector's exporter uses; without it, none of the layer or endpoint.
func TestTracing(t *testing.T) {
	for _, on := range []bool{false, true} {
		inputs := func(k string) string {
			if k == InputTracing && on {
				return "1"
			}
			return testInputs(k)
		}
		cfg, err := ConfigFor("staging", inputs)
		if err != nil || cfg.Tracing != on {
			t.Fatalf("tracing %v: %+v %v", on, cfg.Tracing, err)
		}
		tmpl := synthConfig(t, fmt.Sprintf("tracing-%v", on), cfg)
		for id, fn := range resources(tmpl, "AWS::Lambda::Function") {
			p := props(fn)
			vars := p["Environment"].(map[string]any)["Variables"].(map[string]any)
			layers := asJSON(p["Layers"])
			if asJSON(p["TracingConfig"]) != `{"Mode":"Active"}` {
				t.Errorf("tracing %v, %s: not active", on, id)
			}
			if !on {
				if vars[deploy.EnvOTLPEndpoint] != nil || strings.Contains(layers, "otel") {
					t.Errorf("%s has a collector without tracing: %s %v", id, layers, vars[deploy.EnvOTLPEndpoint])
				}
				continue
			}
			if want := `["arn:aws:lambda:sa-east-1:901920570463:layer:aws-otel-collector-arm64-ver-0-115-0:2"]`; vars[deploy.EnvOTLPEndpoint] != collectorEndpoint || layers != want {
				t.Errorf("%s: layers %s, endpoint %v; want %s", id, layers, vars[deploy.EnvOTLPEndpoint], want)
			}
		}
		bad := map[string]string{InputTracing: "yes"}
		if _, err := ConfigFor("dev", func(k string) string {
			if v, ok := bad[k]; ok {
				return v
			}
			return testInputs(k)
		}); err == nil {
			t.Error("tracing=yes accepted")
		}
	}
	// A region outside CDK's table of the layer: refused, unless its ARN
	// is given.
	elsewhere := over(map[string]string{InputTracing: "1", InputRegion: "mx-central-1"})
	if _, err := ConfigFor("staging", elsewhere); err == nil || !strings.Contains(err.Error(), InputCollectorLayerARN) {
		t.Errorf("tracing in a region without a collector layer: %v", err)
	}
	given := "arn:aws:lambda:mx-central-1:111122223333:layer:collector:1"
	if c, err := ConfigFor("staging", over(map[string]string{InputTracing: "1", InputRegion: "mx-central-1", InputCollectorLayerARN: given})); err != nil || c.CollectorLayerARN != given {
		t.Errorf("a given collector layer: %+v, %v", c.CollectorLayerARN, err)
	}
}

// over is testInputs with some inputs replaced.
func over(m map[string]string) func(string) string {
	return func(k string) string {
		if v, ok := m[k]; ok {
			return v
		}
		return testInputs(k)
	}
}

// TestPlacement: every stack names its account and region (the inputs;
// main falls back to the cdk CLI's defaults); a stack without them does
// not synthesize. TestTracing shows a region-dependent lookup resolved.
func TestPlacement(t *testing.T) {
	for _, env := range singleRegionEnvironments {
		cfg, _ := ConfigFor(env, testInputs)
		if cfg.Account != "111122223333" || cfg.Region != "sa-east-1" {
			t.Errorf("%s: placed in %s/%s", env, cfg.Account, cfg.Region)
		}
		for key, bad := range map[string]string{InputAccount: "", InputRegion: ""} {
			if _, err := ConfigFor(env, over(map[string]string{key: bad})); err == nil || !strings.Contains(err.Error(), key) {
				t.Errorf("%s without %s: %v", env, key, err)
			}
		}
		for key, bad := range map[string]string{InputAccount: "1111-2222-3333", InputRegion: "Sao Paulo"} {
			if _, err := ConfigFor(env, over(map[string]string{key: bad})); err == nil {
				t.Errorf("%s with %s=%q: accepted", env, key, bad)
			}
		}
	}
	app := awscdk.NewApp(nil)
	cfg, _ := ConfigFor("dev", testInputs)
	stack := NewStack(app, "placed", cfg, StackAssets{Dir: testAssets(t)})
	if aws := *stack.Account() + "/" + *stack.Region(); aws != "111122223333/sa-east-1" {
		t.Errorf("the stack is placed in %s, want explicit 111122223333/sa-east-1", aws)
	}
}

// TestProducerPrincipals: staging and prod do not synthesize a producer
// without the principal that may assume its role, nor one that names an
// account's root; dev may, and says so at synthesis.
func TestProducerPrincipals(t *testing.T) {
	for _, env := range []string{"staging", "prod"} {
		if _, err := ConfigFor(env, over(map[string]string{InputProducerPrincipal + "orders": ""})); err == nil || !strings.Contains(err.Error(), "orders") {
			t.Errorf("%s without the orders principal: %v", env, err)
		}
		for _, root := range []string{"arn:aws:iam::444455556666:root", "444455556666", "*"} {
			if _, err := ConfigFor(env, over(map[string]string{InputProducerPrincipal + "orders": root})); err == nil {
				t.Errorf("%s with the orders principal %q: accepted", env, root)
			}
		}
		cfg, _ := ConfigFor(env, testInputs)
		tmpl := synthConfig(t, "principals-"+env, cfg)
		for id, role := range resources(tmpl, "AWS::IAM::Role") {
			if !strings.HasPrefix(id, "Producer") {
				continue
			}
			trust := asJSON(props(role)["AssumeRolePolicyDocument"])
			if strings.Contains(trust, ":root") || !strings.Contains(trust, "arn:aws:iam::444455556666:role/") {
				t.Errorf("%s %s trusts %s", env, id, trust)
			}
		}
	}
	cfg, err := ConfigFor("dev", over(map[string]string{InputProducerPrincipal + "orders": ""}))
	if err != nil || cfg.Producers[0].AssumedBy != "" {
		t.Fatalf("dev without a principal: %+v, %v", cfg.Producers, err)
	}
	app := awscdk.NewApp(nil)
	stack := NewStack(app, "dev-root", cfg, StackAssets{Dir: testAssets(t)})
	warnings := assertions.Annotations_FromStack(stack).FindWarning(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String("trusts the whole account")))
	if len(*warnings) != 1 {
		t.Errorf("dev's producer trusts the account root without a warning at synthesis: %d warnings", len(*warnings))
	}
}

// TestLogging: every function logs in Lambda's JSON format with an
// application log level, which reaches the code as AWS_LAMBDA_LOG_LEVEL,
// and the system level WARN, which drops Lambda's START, END and REPORT
// lines.
func TestLogging(t *testing.T) {
	for id, fn := range resources(synth(t, "prod"), "AWS::Lambda::Function") {
		if got := asJSON(props(fn)["LoggingConfig"]); !strings.Contains(got, `"LogFormat":"JSON"`) || !strings.Contains(got, `"ApplicationLogLevel":"INFO"`) ||
			!strings.Contains(got, `"SystemLogLevel":"WARN"`) {
			t.Errorf("%s logs as %s", id, got)
		}
	}
}

// TestChargeMetricsFromItsLines: the charge function's log group has a
// metric filter for each of obs.LineMetrics, in its namespace, with
// the Outcome dimension on Requests; the alarms that read the charge
// function's metrics read those, and no alarm or panel looks for EMF
// metrics of the charge function.
func TestChargeMetricsFromItsLines(t *testing.T) {
	tmpl := synth(t, "prod")
	cfg, _ := ConfigFor("prod", testInputs)
	namespace := obs.LogNamespace(cfg.Name, obs.FunctionCharge)
	filters := resources(tmpl, "AWS::Logs::MetricFilter")
	byName := map[string]map[string]any{}
	for _, f := range filters {
		p := props(f)
		for _, m := range list(p["MetricTransformations"]) {
			mt := m.(map[string]any)
			if mt["MetricNamespace"] == namespace {
				byName[mt["MetricName"].(string)] = p
			}
		}
		if !strings.Contains(asJSON(p["LogGroupName"]), "ChargeLogs") {
			t.Errorf("a metric filter on %s", asJSON(p["LogGroupName"]))
		}
	}
	for _, m := range obs.LineMetrics() {
		p, ok := byName[m.Name]
		if !ok {
			t.Errorf("no metric filter makes %s", m.Name)
			continue
		}
		if p["FilterPattern"] != filterPattern(m) {
			t.Errorf("%s: pattern %v, want %s", m.Name, p["FilterPattern"], filterPattern(m))
		}
		dims := asJSON(p["MetricTransformations"])
		if (m.Outcome != "") != strings.Contains(dims, `"Key":"`+obs.DimensionOutcome+`","Value":"$.`+m.Outcome+`"`) {
			t.Errorf("%s: dimensions %s", m.Name, dims)
		}
	}
	if len(byName) != len(obs.LineMetrics()) || len(filters) != len(byName) {
		t.Errorf("%d metric filters, %d in the namespace, for %d line metrics", len(filters), len(byName), len(obs.LineMetrics()))
	}
	if got := filterPattern(obs.LineMetric{Where: map[string]string{"message": "request", "operation": "refund"}, Positive: "acquirer_errors"}); got != `{ $.message = "request" && $.operation = "refund" && $.acquirer_errors > 0 }` {
		t.Errorf("pattern %s", got)
	}
	pending := asJSON(props(byPrefix(t, resources(tmpl, "AWS::CloudWatch::Alarm"), "ChargePendingAlarm")))
	if !strings.Contains(pending, `"Namespace":"`+namespace+`"`) || strings.Contains(pending, `"Value":"`+obs.FunctionCharge+`"`) {
		t.Errorf("the charge's pending alarm reads %s", pending)
	}
	board := asJSON(resources(tmpl, "AWS::CloudWatch::Dashboard"))
	if strings.Contains(board, `\"`+obs.DimensionFunction+`\",\"`+obs.FunctionCharge+`\"`) || !strings.Contains(board, namespace) {
		t.Errorf("the dashboard still looks for the charge function's EMF metrics")
	}
}

// TestWarmThroughput: prod pre-warms the table and its index for what its
// capacity inputs let in (3 and 2 units per charge, twice over), never
// below what it deploys today (DynamoDB refuses a decrease); the other
// environments keep DynamoDB's default.
func TestWarmThroughput(t *testing.T) {
	low, _ := ConfigFor("prod", testInputs) // 200/s at the stage + 3 mappings × 400/s from the queues
	if low.TableWarmWrites != deployedWarm["prod"].table || low.IndexWarmWrites != deployedWarm["prod"].index {
		t.Errorf("prod at 1,400 charges/s: %d/%d, want the deployed floor %+v", low.TableWarmWrites, low.IndexWarmWrites, deployedWarm["prod"])
	}
	high, err := ConfigFor("prod", over(map[string]string{InputReservedConcurrency: "5000", InputThrottleRate: "8800", InputThrottleBurst: "5000"}))
	if err != nil || high.TableWarmWrites != 60000 || high.IndexWarmWrites != 40000 { // (8,800 + 3 × 400) × 3 × 2 and × 2 × 2
		t.Errorf("prod at 10,000 charges/s: %d/%d, %v; want 60000/40000", high.TableWarmWrites, high.IndexWarmWrites, err)
	}
	tmpl := synthConfig(t, "warm", high)
	table := asJSON(props(only(t, tmpl, "AWS::DynamoDB::Table")))
	if !strings.Contains(table, `"WarmThroughput":{"WriteUnitsPerSecond":60000}`) || !strings.Contains(table, `"WarmThroughput":{"WriteUnitsPerSecond":40000}`) {
		t.Errorf("the table's warm throughput: %s", table)
	}
	for _, env := range []string{"dev", "staging"} {
		if c, _ := ConfigFor(env, testInputs); c.TableWarmWrites != 0 || c.IndexWarmWrites != 0 {
			t.Errorf("%s pre-warms: %d/%d", env, c.TableWarmWrites, c.IndexWarmWrites)
		}
	}
}

// TestDLQRedriveAllow: only the stack's command queues may use its DLQ,
// named as the local stack names them.
func TestDLQRedriveAllow(t *testing.T) {
	cfg, _ := ConfigFor("prod", testInputs)
	tmpl := synth(t, "prod")
	names := deploy.Names{Prefix: "idempay-prod"}
	dlq := props(byPrefix(t, resources(tmpl, "AWS::SQS::Queue"), "ChargeCommandsDLQ"))
	policy := asJSON(dlq["RedriveAllowPolicy"])
	want := []string{names.Reconcile()}
	for _, p := range cfg.Producers {
		want = append(want, names.Charges(p.Name))
	}
	if dlq["QueueName"] != names.DLQ() || !strings.Contains(policy, `"redrivePermission":"byQueue"`) || strings.Count(policy, ":sqs:") != len(want) {
		t.Fatalf("DLQ %s, redrive-allow %s", dlq["QueueName"], policy)
	}
	for _, name := range want {
		if !strings.Contains(policy, ":"+name+`"`) {
			t.Errorf("the DLQ does not allow %s: %s", name, policy)
		}
	}
	for id, q := range resources(tmpl, "AWS::SQS::Queue") {
		if n, _ := props(q)["QueueName"].(string); !strings.HasPrefix(n, "idempay-prod-") {
			t.Errorf("queue %s is named %q", id, n)
		}
	}
}

func asJSONMap(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRunbookNamesEveryAlarm: every alarm the stack makes has its row in
// the runbook (runbook, from which docs/operating.md is generated): its
// name, or its family (`<Function>Errors`, `<Entry>Pending`,
// `QueueAge-<queue>`, `OutcomesUnread-<subscriber>`), and its description
// is that row's.
func TestRunbookNamesEveryAlarm(t *testing.T) {
	prod, _ := ConfigFor("prod", testInputs)
	rows := map[string]alarmSpec{}
	for _, s := range runbook(prod) {
		rows[s.name] = s
	}
	functions := []string{"Charge", "Consumer", "Reconciler", "Sweeper", "Publisher", "Operator", "Match"}
	for id, a := range resources(synth(t, "prod"), "AWS::CloudWatch::Alarm") {
		name, per, ok := strings.Cut(id, "Alarm")
		if !ok {
			t.Fatalf("alarm %s", id)
		}
		want := name
		if len(per) > 8 { // a per-queue or per-subscriber alarm: its name, then the hash
			for row := range rows {
				if strings.HasPrefix(row, name+"-<") {
					want = row
				}
			}
		}
		for _, fn := range functions {
			if rest, ok := strings.CutPrefix(name, fn); ok && slices.Contains([]string{"Errors", "Throttles", "Duration"}, rest) {
				want = "<Function>" + rest
			}
		}
		for _, entry := range []string{"Charge", "Consumer"} {
			if rest, ok := strings.CutPrefix(name, entry); ok && slices.Contains([]string{"Pending", "Unavailable"}, rest) {
				want = "<Entry>" + rest
			}
		}
		row, ok := rows[want]
		if !ok {
			t.Errorf("alarm %s: the runbook has no row %s", id, want)
			continue
		}
		if d, _ := a["Properties"].(map[string]any)["AlarmDescription"].(string); !strings.HasPrefix(d, capitalize(row.when)) || !strings.HasSuffix(d, row.do) {
			t.Errorf("alarm %s: description %q is not its row's (%s)", id, d, want)
		}
	}
}

var updateRunbook = flag.Bool("update", false, "rewrite docs/operating.md's runbook from the alarm specs")

// TestRunbookIsGenerated: the runbook in docs/operating.md is what the
// alarm specs generate (renderRunbook, prod's thresholds); -update
// rewrites it. Every spec names alarms the stack makes: each alarm's
// description is its row's.
func TestRunbookIsGenerated(t *testing.T) {
	const path, begin, end = "../docs/operating.md", "<!-- runbook: generated from infra/runbook.go; (cd infra && go test -run TestRunbookIsGenerated -update .) -->\n", "<!-- end of runbook -->"
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	before, rest, ok1 := strings.Cut(string(doc), begin)
	table, after, ok2 := strings.Cut(rest, end)
	if !ok1 || !ok2 {
		t.Fatalf("%s has no generated runbook between %q and %q", path, begin, end)
	}
	prod, _ := ConfigFor("prod", testInputs)
	want := renderRunbook(prod)
	if *updateRunbook {
		if err := os.WriteFile(path, []byte(before+begin+want+end+after), 0o644); err != nil {
			t.Fatal(err)
		}
	} else if table != want {
		t.Errorf("%s's runbook differs from the alarm specs: (cd infra && go test -run TestRunbookIsGenerated -update .)", path)
	}
	var descriptions []string
	for _, a := range resources(synth(t, "prod"), "AWS::CloudWatch::Alarm") {
		d, _ := a["Properties"].(map[string]any)["AlarmDescription"].(string)
		descriptions = append(descriptions, d)
	}
	for _, s := range runbook(prod) {
		if !slices.ContainsFunc(descriptions, func(d string) bool { return strings.HasPrefix(d, capitalize(s.when)) }) {
			t.Errorf("runbook row %s: no alarm of the stack has its description", s.name)
		}
	}
}

// TestLinksNoFunctionWiring: the CDK app reads names from the system's
// description (deploy, tabledef, obs and the schemas), not from the
// functions' wiring: it links neither setup, the SQS adapter, the HTTP
// rendering, the charge service, nor the AWS SDK or OpenTelemetry they
// bring.
func TestLinksNoFunctionWiring(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, never := range []string{
			"github.com/idempotent-payments/idempay/internal/setup", "github.com/idempotent-payments/idempay/internal/queue",
			"github.com/idempotent-payments/idempay/internal/httpapi", "github.com/idempotent-payments/idempay/internal/charge",
			"github.com/idempotent-payments/idempay/internal/outbox", "github.com/aws/aws-sdk-go-v2", "go.opentelemetry.io",
		} {
			if dep == never || strings.HasPrefix(dep, never+"/") {
				t.Errorf("the CDK app links %s", dep)
			}
		}
	}
}

// TestQueueAgeAlarmAfterTheRedrive: a command pages as stuck only once it
// is older than the redrive's worst path, whose figure the runbook states.
func TestQueueAgeAlarmAfterTheRedrive(t *testing.T) {
	worst := deployed.WorstRedrive()
	if time.Duration(queueAgeAlarm)*time.Second <= worst {
		t.Fatalf("the queue-age alarm (%d s) fires within the redrive's worst path %s", queueAgeAlarm, worst)
	}
	prod, _ := ConfigFor("prod", testInputs)
	if w := fmt.Sprintf("%d min %d s", int(worst.Minutes()), int(worst.Seconds())%60); !strings.Contains(specOf(prod, "QueueAge-<queue>").when, w) {
		t.Fatalf("the runbook's queue-age row does not state the worst path %s", w)
	}
}

// TestMemorySizes: every function deploys the memory size the description
// gives it (deploy.Function.MemoryMB), which the local stack shapes its
// execution environments by.
func TestMemorySizes(t *testing.T) {
	ids := map[string]string{"Charge": deploy.FunctionCharge, "SqsConsumer": deploy.FunctionConsumer, "Reconciler": deploy.FunctionReconciler,
		"Sweeper": deploy.FunctionSweeper, "Publisher": deploy.FunctionPublisher, "Operator": deploy.FunctionOperator}
	fns := resources(synth(t, "prod"), "AWS::Lambda::Function")
	for id, name := range ids {
		if got, want := props(byPrefix(t, fns, id))["MemorySize"], float64(deployed.Function(name).MemoryMB); got != want {
			t.Errorf("%s: MemorySize %v, the description's %v", id, got, want)
		}
	}
}

// TestAccessLogLine: the API's access log line of a charge, with the
// values API Gateway writes (a field with no value is "-"), is 264 bytes
// and its newline: the gateway's share of a charge's log bytes, apart
// from the charge function's.
func TestAccessLogLine(t *testing.T) {
	line := strings.NewReplacer(
		"$context.requestId", "JxYz1hbcIAMEVxw=", "$context.identity.sourceIp", "203.0.113.42",
		"$context.requestTime", "07/Dec/2026:10:58:03 +0000", "$context.routeKey", "POST /v1/charges",
		"$context.status", "201", "$context.responseLatency", "35", "$context.integrationErrorMessage", "-",
		"$context.authorizer.error", "-", "$context.integrationLatency", "33", "$context.integrationStatus", "200",
		"$context.error.message", "-",
	).Replace(accessLogFormat)
	if strings.Contains(line, "$context") || !json.Valid([]byte(line)) {
		t.Fatalf("the line does not render: %s", line)
	}
	if len(line)+1 != 265 {
		t.Errorf("the access log line is %d bytes with its newline, want 265: %s", len(line)+1, line)
	}
}

// TestDashboardWholeUnits: CloudWatch takes a widget's width, height, x
// and y as integers only (of 24 a row); a fraction refuses the dashboard,
// and with it the stack's update.
func TestDashboardWholeUnits(t *testing.T) {
	board := asJSON(resources(synth(t, "prod"), "AWS::CloudWatch::Dashboard"))
	units := regexp.MustCompile(`\\"(width|height|x|y)\\":(-?[0-9.eE+-]+)`).FindAllStringSubmatch(board, -1)
	if len(units) == 0 {
		t.Fatal("no widget positions in the dashboard")
	}
	for _, u := range units {
		if n, err := strconv.ParseFloat(u[2], 64); err != nil || n != math.Trunc(n) || n < 0 || u[1] == "width" && n > 24 {
			t.Errorf("a widget's %s is %s", u[1], u[2])
		}
	}
}

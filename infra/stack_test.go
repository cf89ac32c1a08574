package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-payments/idempay/internal/idem/dynamostore"
)

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
	dir := t.TempDir()
	for _, fn := range []string{"charge", "sqsconsumer", "sweeper"} {
		if err := os.MkdirAll(filepath.Join(dir, fn), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fn, "bootstrap"), []byte("test asset "+fn), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	app := awscdk.NewApp(&awscdk.AppProps{Context: &map[string]interface{}{"@aws-cdk/core:validateAgainstDefaultRules": true}})
	stack := NewStack(app, "idempay-"+env, cfg, StackAssets{Dir: dir})
	tmpl := assertions.Template_FromStack(stack, nil)
	b, err := json.Marshal(tmpl.ToJSON())
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
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

func TestTableMatchesTheCode(t *testing.T) {
	for _, env := range Environments {
		tmpl := synth(t, env)
		table := only(t, tmpl, "AWS::DynamoDB::Table")
		p := props(table)
		in := dynamostore.TableInput(tableName)
		var wantAttrs, wantKeys []map[string]string
		for _, a := range in.AttributeDefinitions {
			wantAttrs = append(wantAttrs, map[string]string{"AttributeName": *a.AttributeName, "AttributeType": string(a.AttributeType)})
		}
		for _, k := range in.KeySchema {
			wantKeys = append(wantKeys, map[string]string{"AttributeName": *k.AttributeName, "KeyType": string(k.KeyType)})
		}
		g := in.GlobalSecondaryIndexes[0]
		wantGSI := []map[string]any{{
			"IndexName": *g.IndexName,
			"KeySchema": []map[string]string{
				{"AttributeName": *g.KeySchema[0].AttributeName, "KeyType": string(g.KeySchema[0].KeyType)},
				{"AttributeName": *g.KeySchema[1].AttributeName, "KeyType": string(g.KeySchema[1].KeyType)},
			},
			"Projection": map[string]any{"NonKeyAttributes": g.Projection.NonKeyAttributes, "ProjectionType": string(g.Projection.ProjectionType)},
		}}
		for name, pair := range map[string][2]string{
			"AttributeDefinitions":    {asJSON(p["AttributeDefinitions"]), asJSON(wantAttrs)},
			"KeySchema":               {asJSON(p["KeySchema"]), asJSON(wantKeys)},
			"GlobalSecondaryIndexes":  {asJSON(p["GlobalSecondaryIndexes"]), asJSON(wantGSI)},
			"BillingMode":             {asJSON(p["BillingMode"]), asJSON(string(in.BillingMode))},
			"TimeToLiveSpecification": {asJSON(p["TimeToLiveSpecification"]), `{"AttributeName":"expires_at","Enabled":true}`},
			"PointInTimeRecovery":     {asJSON(p["PointInTimeRecoverySpecification"]), `{"PointInTimeRecoveryEnabled":true}`},
			"SseSpecification":        {asJSON(p["SSESpecification"]), `{"SSEEnabled":true}`},
		} {
			if pair[0] != pair[1] {
				t.Errorf("%s: table %s = %s, the code's %s", env, name, pair[0], pair[1])
			}
		}
		prod := env == "prod"
		if p["DeletionProtectionEnabled"] != prod || (table["DeletionPolicy"] == "Retain") != prod {
			t.Errorf("%s: deletion protection %v, policy %v", env, p["DeletionProtectionEnabled"], table["DeletionPolicy"])
		}
	}
}

func TestFunctionsQueuesAndTriggers(t *testing.T) {
	for _, env := range Environments {
		tmpl := synth(t, env)
		fns := resources(tmpl, "AWS::Lambda::Function")
		if len(fns) != 3 {
			t.Fatalf("%s: %d functions", env, len(fns))
		}
		for prefix, timeout := range map[string]float64{"Charge": chargeTimeout, "SqsConsumer": consumerTimeout, "Sweeper": sweeperTimeout} {
			p := props(byPrefix(t, fns, prefix))
			if p["Runtime"] != "provided.al2023" || asJSON(p["Architectures"]) != `["arm64"]` || p["Handler"] != "bootstrap" || p["Timeout"] != timeout {
				t.Errorf("%s %s: runtime %v arch %v handler %v timeout %v", env, prefix, p["Runtime"], p["Architectures"], p["Handler"], p["Timeout"])
			}
			vars := p["Environment"].(map[string]any)["Variables"].(map[string]any)
			for name := range vars {
				if strings.Contains(name, "KEY") || strings.Contains(name, "SECRET") && name != "ACQUIRER_SECRET_ARN" {
					t.Errorf("%s %s: variable %s looks like a credential; credentials come from Secrets Manager", env, prefix, name)
				}
			}
		}
		charge := props(byPrefix(t, fns, "Charge"))
		if want := map[string]any{"prod": 100.0}[env]; charge["ReservedConcurrentExecutions"] != want {
			t.Errorf("%s: charge reserved concurrency %v, want %v", env, charge["ReservedConcurrentExecutions"], want)
		}
		queues := resources(tmpl, "AWS::SQS::Queue")
		if len(queues) != 2 {
			t.Fatalf("%s: %d queues", env, len(queues))
		}
		for id, q := range queues {
			if props(q)["SqsManagedSseEnabled"] != true {
				t.Errorf("%s %s: not encrypted", env, id)
			}
		}
		var cmds map[string]any
		for id, q := range queues {
			if !strings.Contains(id, "DLQ") {
				cmds = props(q)
			}
		}
		if cmds["VisibilityTimeout"] != 6.0*consumerTimeout || !strings.Contains(asJSON(cmds["RedrivePolicy"]), `"maxReceiveCount":5`) {
			t.Errorf("%s: commands queue visibility %v redrive %v", env, cmds["VisibilityTimeout"], asJSON(cmds["RedrivePolicy"]))
		}
		m := props(only(t, tmpl, "AWS::Lambda::EventSourceMapping"))
		if asJSON(m["FunctionResponseTypes"]) != `["ReportBatchItemFailures"]` || m["BatchSize"] != 10.0 || m["ScalingConfig"] == nil {
			t.Errorf("%s: mapping %s", env, asJSON(m))
		}
		rule := props(only(t, tmpl, "AWS::Events::Rule"))
		if rule["ScheduleExpression"] != "rate(1 minute)" {
			t.Errorf("%s: schedule %v", env, rule["ScheduleExpression"])
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
	routes := resources(tmpl, "AWS::ApiGatewayV2::Route")
	var keys []string
	for _, r := range routes {
		p := props(r)
		keys = append(keys, p["RouteKey"].(string))
		if p["AuthorizationType"] != "JWT" {
			t.Errorf("route %v without the JWT authorizer", p["RouteKey"])
		}
	}
	sort.Strings(keys)
	if !slices.Equal(keys, []string{"GET /v1/charges/{id}", "POST /v1/charges"}) {
		t.Errorf("routes %v", keys)
	}
	stage := props(only(t, tmpl, "AWS::ApiGatewayV2::Stage"))
	if stage["AccessLogSettings"] == nil || asJSON(stage["DefaultRouteSettings"]) != `{"ThrottlingBurstLimit":100,"ThrottlingRateLimit":50}` {
		t.Errorf("stage %s", asJSON(stage))
	}
}

// TestLeastPrivilege pins every action each role may take, and that no
// statement names a wildcard action or a literal wildcard resource.
func TestLeastPrivilege(t *testing.T) {
	tmpl := synth(t, "prod")
	want := map[string][]string{
		"ChargePolicy": {"dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "logs:CreateLogStream", "logs:PutLogEvents", "secretsmanager:GetSecretValue"},
		"SqsConsumerPolicy": {"dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "logs:CreateLogStream", "logs:PutLogEvents",
			"secretsmanager:GetSecretValue", "sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ReceiveMessage", "sqs:SendMessage"},
		"SweeperPolicy": {"dynamodb:Query", "dynamodb:UpdateItem", "logs:CreateLogStream", "logs:PutLogEvents", "sqs:SendMessage"},
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
			for _, r := range list(st["Resource"]) {
				if s, ok := r.(string); ok && strings.Contains(s, "*") {
					t.Errorf("%s: wildcard resource %v", prefix, s)
				}
			}
		}
		sort.Strings(got)
		if !slices.Equal(got, actions) {
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
}

func TestAlarms(t *testing.T) {
	tmpl := synth(t, "prod")
	alarms := resources(tmpl, "AWS::CloudWatch::Alarm")
	if len(alarms) != 7 {
		t.Fatalf("%d alarms, want 7", len(alarms))
	}
	for id, a := range alarms {
		if actions := list(props(a)["AlarmActions"]); len(actions) != 1 || !strings.Contains(asJSON(actions[0]), "Alarms") {
			t.Errorf("alarm %s does not notify the topic: %v", id, actions)
		}
	}
	if n := len(resources(tmpl, "AWS::SNS::Topic")); n != 1 {
		t.Errorf("%d topics", n)
	}
}

// testInputs are the deployer's inputs of the tests.
func testInputs(key string) string {
	return map[string]string{InputJWTIssuer: "https://idp.test.invalid/", InputJWTAudience: "test-audience"}[key]
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

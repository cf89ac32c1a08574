package main

//lint:file-ignore SA1019 aws-cdk-go reads synthesis messages only as cxapi.SynthesisMessage; the type it names instead lives in a JavaScript package with no Go binding

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/cxapi"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/idempotent-payments/idempay/internal/deploy"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/obs"
	"github.com/idempotent-payments/idempay/internal/streamfilter"
	"github.com/idempotent-payments/idempay/internal/tabledef"
)

// The multi-region test environment: two replicas and a witness in the US
// region set, and the domain.
var (
	globalRegions = []string{"us-east-1", "us-east-2"}
	globalWitness = "us-west-2"
)

const (
	testDomain   = "pay.example.com"
	testZoneID   = "Z0123456789ABCDEFGHIJ"
	testZoneName = "example.com"
)

// globalInputs are testInputs with the multi-region inputs.
func globalInputs(key string) string {
	if v, ok := map[string]string{
		InputRegions: strings.Join(globalRegions, ","), InputWitnessRegion: globalWitness,
		InputDomainName: testDomain, InputHostedZoneID: testZoneID, InputHostedZoneName: testZoneName,
	}[key]; ok {
		return v
	}
	return testInputs(key)
}

// globalWith is globalInputs with some inputs replaced ("" removes one).
func globalWith(m map[string]string) func(string) string {
	return func(k string) string {
		if v, ok := m[k]; ok {
			return v
		}
		return globalInputs(k)
	}
}

// globalStack is one synthesized stack of the multi-region app.
type globalStack struct {
	name, account, region string
	template              map[string]any
	dependsOn             []string
	findings              []string // cdk-nag's errors and warnings
}

var global struct {
	once   sync.Once
	stacks []globalStack
	err    error
}

// synthGlobal synthesizes the multi-region app once per test binary, with
// CloudFormation validation strict and cdk-nag's packs applied, and returns
// its stacks in the order of the regions.
func synthGlobal(t *testing.T) []globalStack {
	t.Helper()
	global.once.Do(func() { global.stacks, global.err = synthGlobalOnce() })
	if global.err != nil {
		t.Fatal(global.err)
	}
	return global.stacks
}

func synthGlobalOnce() ([]globalStack, error) {
	cfg, err := ConfigFor("global", globalInputs)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "global-assets-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	for _, fn := range deployed.Binaries() {
		if err := os.MkdirAll(filepath.Join(dir, fn), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, fn, "bootstrap"), []byte("test asset "+fn), 0o755); err != nil {
			return nil, err
		}
	}
	app := awscdk.NewApp(&awscdk.AppProps{Context: &map[string]interface{}{"@aws-cdk/core:validateAgainstDefaultRules": true}})
	stacks := NewStacks(app, cfg, StackAssets{Dir: dir})
	awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
	awscdk.Aspects_Of(app).Add(cdknag.NewServerlessChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
	assembly := app.Synth(nil)
	var out []globalStack
	for _, s := range stacks {
		artifact := assembly.GetStackByName(s.StackName())
		b, err := json.Marshal(artifact.Template())
		if err != nil {
			return nil, err
		}
		g := globalStack{name: *s.StackName(), template: map[string]any{}}
		if err := json.Unmarshal(b, &g.template); err != nil {
			return nil, err
		}
		if !*awscdk.Token_IsUnresolved(s.Account()) && !*awscdk.Token_IsUnresolved(s.Region()) {
			g.account, g.region = *s.Account(), *s.Region()
		}
		for _, d := range *artifact.Dependencies() {
			if _, isStack := d.(cxapi.CloudFormationStackArtifact); isStack {
				g.dependsOn = append(g.dependsOn, *d.Id())
			}
		}
		for _, m := range *artifact.Messages() {
			if m.Level == cxapi.SynthesisMessageLevel_ERROR || m.Level == cxapi.SynthesisMessageLevel_WARNING {
				g.findings = append(g.findings, *m.Id+": "+asJSON(m.Entry.Data))
			}
		}
		sort.Strings(g.findings)
		out = append(out, g)
	}
	return out, nil
}

// TestGlobalConfig: the global environment is prod's settings in the
// regions given, multi-region strongly consistent, with the witness and the
// domain, and placed in the first region.
func TestGlobalConfig(t *testing.T) {
	cfg, err := ConfigFor("global", globalInputs)
	if err != nil {
		t.Fatal(err)
	}
	prod, _ := ConfigFor("prod", testInputs)
	if cfg.Table != deploy.MultiRegionStrong || !slices.Equal(cfg.Regions, globalRegions) || cfg.WitnessRegion != globalWitness || cfg.Region != globalRegions[0] {
		t.Errorf("global: mode %s, regions %v, witness %s, placed in %s", cfg.Table, cfg.Regions, cfg.WitnessRegion, cfg.Region)
	}
	if cfg.DomainName != testDomain || cfg.HostedZoneID != testZoneID || cfg.HostedZoneName != testZoneName {
		t.Errorf("global's domain: %s in %s (%s)", cfg.DomainName, cfg.HostedZoneName, cfg.HostedZoneID)
	}
	if !cfg.Retain || cfg.AcquirerID != prod.AcquirerID || cfg.AcquirerURL != prod.AcquirerURL || asJSON(cfg.Producers) != asJSON(prod.Producers) ||
		cfg.LogRetentionDays != prod.LogRetentionDays || cfg.ConsumerMaxConcurrency != prod.ConsumerMaxConcurrency || cfg.TableWarmWrites == 0 {
		t.Errorf("global does not have prod's settings: %+v", cfg)
	}
	for _, env := range singleRegionEnvironments {
		c, _ := ConfigFor(env, testInputs)
		if c.Table != deploy.SingleRegion || !slices.Equal(c.Regions, []string{c.Region}) || c.WitnessRegion != "" || c.DomainName != "" {
			t.Errorf("%s: mode %s, regions %v, witness %q, domain %q", env, c.Table, c.Regions, c.WitnessRegion, c.DomainName)
		}
		one, err := ConfigFor(env, over(map[string]string{InputRegions: "eu-west-1"}))
		if err != nil || one.Region != "eu-west-1" || one.Table != deploy.SingleRegion {
			t.Errorf("%s in the one region of input %s: %s, %s, %v", env, InputRegions, one.Region, one.Table, err)
		}
	}
	three, err := ConfigFor("global", globalWith(map[string]string{InputRegions: "eu-west-1, eu-west-2,eu-central-1", InputWitnessRegion: ""}))
	if err != nil || !slices.Equal(three.Regions, []string{"eu-west-1", "eu-west-2", "eu-central-1"}) || three.WitnessRegion != "" {
		t.Errorf("three replicas: %v %q, %v", three.Regions, three.WitnessRegion, err)
	}
	if c, err := ConfigFor("global", globalWith(map[string]string{InputTableConsistency: "strong"})); err != nil || c.Table != deploy.MultiRegionStrong {
		t.Errorf("tableConsistency=strong: %s, %v", c.Table, err)
	}
}

// TestGlobalRequiresItsInputs: global does not synthesize in one region,
// nor without any of the domain inputs; the single-region environments
// refuse the multi-region inputs, which nothing there would read.
func TestGlobalRequiresItsInputs(t *testing.T) {
	for _, key := range []string{InputRegions, InputDomainName, InputHostedZoneID, InputHostedZoneName} {
		if _, err := ConfigFor("global", globalWith(map[string]string{key: ""})); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("global without %s: %v, want an error naming it", key, err)
		}
	}
	for name, in := range map[string]map[string]string{
		"a domain outside its zone": {InputDomainName: "pay.example.org"},
		"an upper-case domain":      {InputDomainName: "Pay.example.com"},
		"a bad zone id":             {InputHostedZoneID: "example.com"},
	} {
		if _, err := ConfigFor("global", globalWith(in)); err == nil {
			t.Errorf("global with %s: accepted", name)
		}
	}
	for key, v := range map[string]string{InputWitnessRegion: globalWitness, InputDomainName: testDomain, InputHostedZoneID: testZoneID,
		InputHostedZoneName: testZoneName, InputTableConsistency: "strong"} {
		if _, err := ConfigFor("staging", over(map[string]string{key: v})); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("staging with %s: %v, want an error naming it", key, err)
		}
	}
	if _, err := ConfigFor("global", globalWith(map[string]string{InputTracing: "1", InputCollectorLayerARN: "arn:aws:lambda:us-east-1:111122223333:layer:collector:1"})); err == nil {
		t.Error("global with one region's collector layer for all: accepted")
	}
	if c, err := ConfigFor("global", globalWith(map[string]string{InputTracing: "1"})); err != nil || !strings.Contains(c.CollectorLayerARN, ":us-east-1:") ||
		!strings.Contains(c.inRegion("us-east-2").CollectorLayerARN, ":us-east-2:") {
		t.Errorf("global with tracing: %q, %v; want each region's layer", c.CollectorLayerARN, err)
	}
	given := "arn:aws:lambda:mx-central-1:111122223333:layer:collector:1"
	c, err := ConfigFor("staging", over(map[string]string{InputTracing: "1", InputRegion: "mx-central-1", InputCollectorLayerARN: given}))
	if err != nil || c.inRegion(c.Region).CollectorLayerARN != given {
		t.Errorf("a single region's given collector layer, in its stack: %q, %v", c.inRegion(c.Region).CollectorLayerARN, err)
	}
}

// TestEventualConsistencyRefused: tableConsistency=eventual is refused in
// every environment, saying why.
func TestEventualConsistencyRefused(t *testing.T) {
	for _, env := range Environments {
		_, err := ConfigFor(env, globalWith(map[string]string{InputTableConsistency: "eventual"}))
		if err == nil {
			t.Fatalf("%s: eventual consistency accepted", env)
		}
		for _, why := range []string{"MREC", "one region only", "both charge", "claim time", "cannot deduplicate"} {
			if !strings.Contains(err.Error(), why) {
				t.Errorf("%s: %q does not say %q", env, err, why)
			}
		}
	}
	if _, err := ConfigFor("global", globalWith(map[string]string{InputTableConsistency: "linearizable"})); err == nil {
		t.Error("tableConsistency=linearizable accepted")
	}
}

// TestExistingEnvironmentKeepsItsMode: an environment deployed
// single-region does not synthesize multi-region, and once global is
// recorded multi-region (deployedTable), not single-region either.
func TestExistingEnvironmentKeepsItsMode(t *testing.T) {
	for _, env := range singleRegionEnvironments {
		if deployedTable[env] != deploy.SingleRegion {
			t.Fatalf("%s deploys %q", env, deployedTable[env])
		}
		for _, regions := range []map[string]string{
			{InputRegions: "us-east-1,us-east-2,us-west-2", InputWitnessRegion: ""},
			{InputRegions: "us-east-1,us-east-2"},
		} {
			_, err := ConfigFor(env, globalWith(regions))
			if err == nil || !strings.Contains(err.Error(), "cannot become "+string(deploy.MultiRegionStrong)) || !strings.Contains(err.Error(), "AWS::DynamoDB::GlobalTable") {
				t.Errorf("%s in %s: %v, want a refusal saying why", env, regions[InputRegions], err)
			}
		}
	}
	if _, ok := deployedTable["global"]; ok {
		t.Fatal("the test below assumes global is not deployed yet")
	}
	deployedTable["global"] = deploy.MultiRegionStrong
	defer delete(deployedTable, "global")
	if _, err := ConfigFor("global", globalWith(map[string]string{InputRegions: "us-east-1", InputWitnessRegion: ""})); err == nil || !strings.Contains(err.Error(), "cannot become "+string(deploy.SingleRegion)) {
		t.Errorf("global deployed multi-region, in one region: %v", err)
	}
	if _, err := ConfigFor("global", globalInputs); err != nil {
		t.Errorf("global deployed multi-region, multi-region: %v", err)
	}
}

// TestRegionSetRefusals: three replicas, or two and a witness, exactly;
// each region named once and valid; the witness none of the replicas; all
// in one region set.
func TestRegionSetRefusals(t *testing.T) {
	for name, c := range map[string]struct{ regions, witness, says string }{
		"two without a witness":   {"us-east-1,us-east-2", "", "need a witness"},
		"three with a witness":    {"eu-west-1,eu-west-2,eu-west-3", "eu-central-1", "take no witness"},
		"four":                    {"eu-west-1,eu-west-2,eu-west-3,eu-central-1", "", "4 regions"},
		"a duplicate":             {"us-east-1,us-east-1", "us-west-2", "named twice"},
		"a duplicate of three":    {"us-east-1,us-east-2,us-east-1", "", "named twice"},
		"the witness a replica":   {"us-east-1,us-east-2", "us-east-2", "also a replica"},
		"across sets":             {"us-east-1,eu-west-1", "us-west-2", "not all in one region set"},
		"the witness in another":  {"ap-northeast-1,ap-northeast-2", "eu-west-1", "not all in one region set"},
		"outside every set":       {"us-east-1,us-west-1", "us-west-2", "us-west-1 is in no region set"},
		"not a region":            {"us-east-1,Ohio", "us-west-2", "not an AWS region"},
		"an empty region":         {"us-east-1,", "us-west-2", "not an AWS region"},
		"a witness not a region":  {"us-east-1,us-east-2", "oregon", "want an AWS region"},
		"a witness outside a set": {"us-east-1,us-east-2", "sa-east-1", "sa-east-1 is in no region set"},
	} {
		_, err := ConfigFor("global", globalWith(map[string]string{InputRegions: c.regions, InputWitnessRegion: c.witness}))
		if err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s (%s + %q): %v, want %q", name, c.regions, c.witness, err, c.says)
		}
	}
	for set, regions := range mrscRegionSets {
		in := map[string]string{InputRegions: strings.Join(regions[:2], ","), InputWitnessRegion: regions[2]}
		if _, err := ConfigFor("global", globalWith(in)); err != nil {
			t.Errorf("the %s set: %v", set, err)
		}
	}
}

// TestGlobalStacks: one stack per replica region, none in the witness
// region, each with its explicit account and region, named
// idempay-global-<region>; every other depends on the first, which alone
// has the table.
func TestGlobalStacks(t *testing.T) {
	stacks := synthGlobal(t)
	if len(stacks) != len(globalRegions) {
		t.Fatalf("%d stacks, want one per replica region %v", len(stacks), globalRegions)
	}
	for i, s := range stacks {
		region := globalRegions[i]
		if s.name != "idempay-global-"+region || s.account != "111122223333" || s.region != region {
			t.Errorf("stack %d: %s in %s/%s, want idempay-global-%s in 111122223333/%s", i, s.name, s.account, s.region, region, region)
		}
		tables := len(resources(s.template, "AWS::DynamoDB::GlobalTable"))
		if want := map[bool]int{true: 1, false: 0}[i == 0]; tables != want || len(resources(s.template, "AWS::DynamoDB::Table")) != 0 {
			t.Errorf("%s: %d global tables, want %d, and no single-region table", s.name, tables, want)
		}
		if i > 0 && !slices.Contains(s.dependsOn, stacks[0].name) {
			t.Errorf("%s depends on %v, want %s", s.name, s.dependsOn, stacks[0].name)
		}
		if strings.Contains(asJSON(s.template), "Fn::ImportValue") || strings.Contains(asJSON(s.template), "ExportsReader") {
			t.Errorf("%s references another stack's values", s.name)
		}
		if d := props(only(t, s.template, "AWS::CloudWatch::Dashboard"))["DashboardName"]; d != s.name {
			t.Errorf("%s: dashboard %v, want one per region (the names are the account's)", s.name, d)
		}
		for _, q := range resources(s.template, "AWS::SQS::Queue") {
			if n, _ := props(q)["QueueName"].(string); !strings.HasPrefix(n, s.name+"-") {
				t.Errorf("%s: queue %s", s.name, n)
			}
		}
	}
	if len(stacks[0].dependsOn) != 0 {
		t.Errorf("the first stack depends on %v", stacks[0].dependsOn)
	}
}

// TestGlobalTable: the first region's stack creates the table as a global
// table: strongly consistent, the other region's replica and the witness
// as given, the definition of a table without TTL (both indexes, no LSI,
// no TTL), the stream of new and old images, and point-in-time recovery,
// encryption and deletion protection on every replica, retained.
func TestGlobalTable(t *testing.T) {
	table := only(t, synthGlobal(t)[0].template, "AWS::DynamoDB::GlobalTable")
	p := props(table)
	def := tabledef.For(false)
	if p["MultiRegionConsistency"] != "STRONG" || p["TableName"] != "idempay-global" || p["BillingMode"] != def.BillingMode {
		t.Errorf("table: consistency %v, name %v, billing %v", p["MultiRegionConsistency"], p["TableName"], p["BillingMode"])
	}
	if p["TimeToLiveSpecification"] != nil || p["LocalSecondaryIndexes"] != nil {
		t.Errorf("table: TTL %s, LSIs %s; want neither", asJSON(p["TimeToLiveSpecification"]), asJSON(p["LocalSecondaryIndexes"]))
	}
	if asJSON(p["GlobalTableWitnesses"]) != `[{"Region":"`+globalWitness+`"}]` {
		t.Errorf("witnesses %s", asJSON(p["GlobalTableWitnesses"]))
	}
	if asJSON(p["StreamSpecification"]) != `{"StreamViewType":"`+def.StreamView+`"}` {
		t.Errorf("stream %s", asJSON(p["StreamSpecification"]))
	}
	if asJSON(p["KeySchema"]) != `[{"AttributeName":"`+tabledef.KeyAttribute+`","KeyType":"HASH"}]` {
		t.Errorf("keys %s", asJSON(p["KeySchema"]))
	}
	var wantAttrs []string
	for _, a := range def.Attributes() {
		wantAttrs = append(wantAttrs, a.Name+"="+string(a.Type))
	}
	var gotAttrs []string
	for _, a := range p["AttributeDefinitions"].([]any) {
		a := a.(map[string]any)
		gotAttrs = append(gotAttrs, a["AttributeName"].(string)+"="+a["AttributeType"].(string))
	}
	if sort.Strings(gotAttrs); !slices.Equal(gotAttrs, slices.Sorted(slices.Values(wantAttrs))) {
		t.Errorf("attributes %v, want %v", gotAttrs, wantAttrs)
	}
	gsis := map[string]map[string]any{}
	for _, g := range p["GlobalSecondaryIndexes"].([]any) {
		gsis[g.(map[string]any)["IndexName"].(string)] = g.(map[string]any)
	}
	if len(gsis) != len(def.Indexes) {
		t.Errorf("indexes %v, want %d", slices.Collect(maps.Keys(gsis)), len(def.Indexes))
	}
	for _, ix := range def.Indexes {
		g := gsis[ix.Name]
		keys := `[{"AttributeName":"` + ix.Partition.Name + `","KeyType":"HASH"},{"AttributeName":"` + ix.Sort.Name + `","KeyType":"RANGE"}]`
		projection := map[string]any{"ProjectionType": ix.Projection()}
		if len(ix.Projected) > 0 {
			projection["NonKeyAttributes"] = ix.Projected
		}
		if asJSON(g["KeySchema"]) != keys || asJSON(g["Projection"]) != asJSON(projection) {
			t.Errorf("index %s: %s", ix.Name, asJSON(g))
		}
	}
	if gsis[tabledef.ExpiryIndex]["Projection"].(map[string]any)["ProjectionType"] != "KEYS_ONLY" {
		t.Errorf("the expiry index projects %s", asJSON(gsis[tabledef.ExpiryIndex]["Projection"]))
	}
	var regions []string
	for _, r := range p["Replicas"].([]any) {
		r := r.(map[string]any)
		regions = append(regions, r["Region"].(string))
		if r["DeletionProtectionEnabled"] != true || asJSON(r["PointInTimeRecoverySpecification"]) != `{"PointInTimeRecoveryEnabled":true}` {
			t.Errorf("replica %v: deletion protection %v, PITR %s", r["Region"], r["DeletionProtectionEnabled"], asJSON(r["PointInTimeRecoverySpecification"]))
		}
	}
	if sort.Strings(regions); !slices.Equal(regions, globalRegions) {
		t.Errorf("replicas %v, want %v", regions, globalRegions)
	}
	if asJSON(p["SSESpecification"]) != `{"SSEEnabled":true,"SSEType":"KMS"}` || table["DeletionPolicy"] != "Retain" || table["UpdateReplacePolicy"] != "Retain" {
		t.Errorf("SSE %s, deletion %v, replacement %v", asJSON(p["SSESpecification"]), table["DeletionPolicy"], table["UpdateReplacePolicy"])
	}
}

// TestGlobalTableThreeReplicas: with three regions the table has a replica
// in each and no witness.
func TestGlobalTableThreeReplicas(t *testing.T) {
	cfg, err := ConfigFor("global", globalWith(map[string]string{InputRegions: "ap-northeast-1,ap-northeast-2,ap-northeast-3", InputWitnessRegion: ""}))
	if err != nil {
		t.Fatal(err)
	}
	app := awscdk.NewApp(nil)
	stack := awscdk.NewStack(app, jsii.String("three"), &awscdk.StackProps{Env: &awscdk.Environment{Account: jsii.String(cfg.Account), Region: jsii.String(cfg.Region)}})
	newGlobalTable(stack, cfg, awscdk.RemovalPolicy_RETAIN)
	p := props(only(t, asJSONMap(t, assertions.Template_FromStack(stack, nil).ToJSON()), "AWS::DynamoDB::GlobalTable"))
	var regions []string
	for _, r := range p["Replicas"].([]any) {
		regions = append(regions, r.(map[string]any)["Region"].(string))
	}
	if sort.Strings(regions); !slices.Equal(regions, cfg.Regions) || p["GlobalTableWitnesses"] != nil || p["MultiRegionConsistency"] != "STRONG" {
		t.Errorf("replicas %v, witnesses %s, consistency %v", regions, asJSON(p["GlobalTableWitnesses"]), p["MultiRegionConsistency"])
	}
}

// TestGlobalReplicaReferences: every region's functions, trigger and
// alarms use that region's replica: the first region's by the table's
// attributes, the others' by its fixed name, its ARN in the stack's region
// and its stream's ARN read from it at deploy time by a custom resource
// that may only describe that table.
func TestGlobalReplicaReferences(t *testing.T) {
	stacks := synthGlobal(t)
	first, other := stacks[0].template, stacks[1].template
	if m := asJSON(props(byPrefix(t, resources(first, "AWS::Lambda::EventSourceMapping"), "PublisherMapping"))["EventSourceArn"]); m != `{"Fn::GetAtt":["TableCD117FA1","StreamArn"]}` {
		t.Errorf("the first region's publisher reads %s", m)
	}
	if len(resources(first, "Custom::ReplicaStreamArn")) != 0 {
		t.Error("the first region's stack looks its own table's stream up")
	}
	lookup := only(t, other, "Custom::ReplicaStreamArn")
	lookupID := ""
	for id := range resources(other, "Custom::ReplicaStreamArn") {
		lookupID = id
	}
	if call := asJSON(props(lookup)["Create"]); !strings.Contains(call, `\"action\":\"describeTable\"`) || !strings.Contains(call, `\"TableName\":\"idempay-global\"`) ||
		!strings.Contains(call, `\"outputPaths\":[\"`+latestStreamArn+`\"]`) {
		t.Errorf("the stream lookup calls %s", call)
	}
	if m := asJSON(props(byPrefix(t, resources(other, "AWS::Lambda::EventSourceMapping"), "PublisherMapping"))["EventSourceArn"]); m != `{"Fn::GetAtt":["`+lookupID+`","`+latestStreamArn+`"]}` {
		t.Errorf("the second region's publisher reads %s, want the looked-up stream", m)
	}
	replicaArn := `{"Fn::Sub":"arn:${AWS::Partition}:dynamodb:${AWS::Region}:${AWS::AccountId}:table/idempay-global"}`
	lookupPolicy := asJSON(props(byPrefix(t, resources(other, "AWS::IAM::Policy"), "ReplicaStreamLookupPolicy"))["PolicyDocument"])
	if !strings.Contains(lookupPolicy, `{"Action":"dynamodb:DescribeTable","Effect":"Allow","Resource":`+replicaArn+`}`) {
		t.Errorf("the lookup's policy: %s", lookupPolicy)
	}
	for id, fn := range resources(other, "AWS::Lambda::Function") {
		if v := asJSON(props(fn)["Environment"]); strings.Contains(v, deploy.EnvTableName) && !strings.Contains(v, `"`+deploy.EnvTableName+`":"idempay-global"`) {
			t.Errorf("the second region's %s names the table in %s", id, v)
		}
	}
	for name, tmpl := range map[string]map[string]any{"first": first, "second": other} {
		watching := 0
		for id, a := range resources(tmpl, "AWS::CloudWatch::Alarm") {
			if !strings.Contains(asJSON(a), `"TableName"`) {
				continue
			}
			watching++
			if !strings.Contains(asJSON(a), map[string]string{"first": `{"Name":"TableName","Value":{"Ref":"TableCD117FA1"}}`, "second": `{"Name":"TableName","Value":"idempay-global"}`}[name]) {
				t.Errorf("%s region's alarm %s watches another table: %s", name, id, asJSON(a))
			}
		}
		if watching < 3 {
			t.Errorf("%s region: %d alarms watch the table, want its throttles and system errors", name, watching)
		}
	}
}

// TestGlobalLeastPrivilege: in every region the roles have prod's actions,
// each table statement on that region's replica or its index, no wildcard
// beyond X-Ray's; the other regions' stream lookup may describe the
// replica only.
func TestGlobalLeastPrivilege(t *testing.T) {
	prodPolicies := map[string][]string{}
	for id, p := range resources(synth(t, "prod"), "AWS::IAM::Policy") {
		prodPolicies[strings.TrimRight(id, "0123456789ABCDEF")] = policyActions(p)
	}
	for i, s := range synthGlobal(t) {
		table, index, expiry, unpublished := `{"Fn::GetAtt":["TableCD117FA1","Arn"]}`, `"/index/`+tabledef.InflightIndex+`"`, `"/index/`+tabledef.ExpiryIndex+`"`, `"/index/`+tabledef.UnpublishedIndex+`"`
		want := maps.Clone(prodPolicies)
		want["SweeperPolicy"] = slices.Sorted(slices.Values(append(slices.Clone(want["SweeperPolicy"]),
			"dynamodb:DeleteItem", "dynamodb:PutItem", "dynamodb:GetItem", "dynamodb:UpdateItem", "sns:Publish")))
		want["PublisherPolicy"] = slices.Sorted(slices.Values(append(slices.Clone(want["PublisherPolicy"]), "dynamodb:UpdateItem")))
		// republish marks the rows it publishes (TestGlobalOperatorMarksOnly).
		want["OperatorCallerPolicy"] = slices.Sorted(slices.Values(append(slices.Clone(want["OperatorCallerPolicy"]), "dynamodb:UpdateItem")))
		if i > 0 {
			table = `{"Fn::Sub":"arn:${AWS::Partition}:dynamodb:${AWS::Region}:${AWS::AccountId}:table/idempay-global"}`
			want["ReplicaStreamLookupPolicy"] = []string{"dynamodb:DescribeTable", "logs:CreateLogStream", "logs:PutLogEvents"}
		}
		policies := resources(s.template, "AWS::IAM::Policy")
		if len(policies) != len(want) {
			t.Errorf("%s: %d policies, want %d", s.name, len(policies), len(want))
		}
		for prefix, actions := range want {
			p := byPrefix(t, policies, prefix)
			if got := policyActions(p); !slices.Equal(got, actions) {
				t.Errorf("%s %s: actions %v, want %v", s.name, prefix, got, actions)
			}
			for _, st := range props(p)["PolicyDocument"].(map[string]any)["Statement"].([]any) {
				st := st.(map[string]any)
				res := asJSON(st["Resource"])
				if strings.Contains(asJSON(st["Action"]), `"dynamodb:`) && !strings.Contains(asJSON(st["Action"]), "Stream") &&
					!strings.Contains(asJSON(st["Action"]), "dynamodb:GetRecords") && !strings.Contains(res, table) {
					t.Errorf("%s %s: %s on %s, want this region's replica %s", s.name, prefix, asJSON(st["Action"]), res, table)
				}
				if slices.Contains(list(st["Action"]), any("dynamodb:Query")) && prefix == "SweeperPolicy" && (!strings.Contains(res, index) || !strings.Contains(res, expiry) ||
					!strings.Contains(res, unpublished) || !strings.Contains(res, `"/index/`+tabledef.AuthorizationIndex+`"`) || len(list(st["Resource"])) != 4) {
					t.Errorf("%s %s: Query on %s, want the in-flight, authorizations, expiry and unpublished indexes", s.name, prefix, res)
				}
				if slices.Contains(list(st["Action"]), any("dynamodb:Query")) && prefix == "OperatorCallerPolicy" && (!strings.Contains(res, index) || !strings.Contains(res, `"/index/`+tabledef.DayIndex+`"`) || len(list(st["Resource"])) != 2) {
					t.Errorf("%s %s: Query on %s, want the in-flight index (stale, held) and the day index (match) alone", s.name, prefix, res)
				}
				if slices.Contains(list(st["Action"]), any("dynamodb:DeleteItem")) && prefix == "SweeperPolicy" &&
					asJSON(st["Condition"]) != `{"ForAllValues:StringLike":{"dynamodb:LeadingKeys":["`+idem.RecordPrefix+`*"]}}` {
					t.Errorf("%s: the sweeper deletes %s, want records only", s.name, asJSON(st["Condition"]))
				}
				if slices.Contains(list(st["Action"]), any("dynamodb:GetItem")) && prefix == "SweeperPolicy" &&
					asJSON(st["Condition"]) != sentinelOnly && asJSON(st["Condition"]) != `{"ForAllValues:StringLike":{"dynamodb:LeadingKeys":["`+tabledef.HeartbeatPrefix+`*","`+tabledef.LedgerPrefix+`*","`+tabledef.RefundPrefix+`*","`+tabledef.CapturePrefix+`*","`+tabledef.VoidPrefix+`*"]}}` {
					t.Errorf("%s: the sweeper reads %s, want the probe's key, the heartbeats and the operations' rows only", s.name, asJSON(st["Condition"]))
				}
				if strings.Contains(res, `"*"`) && asJSON(st["Action"]) != asJSON(xrayActions) || strings.Contains(res, "/stream/*") || strings.Contains(asJSON(st["Action"]), "*") {
					t.Errorf("%s %s: a wildcard in %s", s.name, prefix, asJSON(st))
				}
			}
		}
		// Refunds, captures and voids in every region: the charge and
		// reconciler roles reach their rows and the balances by their key
		// prefixes, on this region's replica, as in one region.
		for _, prefix := range []string{"ChargePolicy", "ReconcilerPolicy"} {
			p := asJSON(props(byPrefix(t, policies, prefix)))
			for _, keys := range []string{
				`"` + tabledef.RefundPrefix + `*","` + tabledef.CapturePrefix + `*","` + tabledef.VoidPrefix + `*"`,
				`"` + tabledef.BalancePrefix + `*"`,
			} {
				if !strings.Contains(p, `"dynamodb:LeadingKeys":[`+keys+`]`) {
					t.Errorf("%s %s: no grant on %s rows: %s", s.name, prefix, keys, p)
				}
			}
		}
		for id, role := range resources(s.template, "AWS::IAM::Role") {
			if props(role)["ManagedPolicyArns"] != nil || props(role)["Policies"] != nil {
				t.Errorf("%s: role %s has policies beyond its own: %s", s.name, id, asJSON(props(role)))
			}
		}
	}
}

// policyActions are the sorted actions of an IAM policy resource.
func policyActions(p map[string]any) []string {
	var out []string
	for _, st := range props(p)["PolicyDocument"].(map[string]any)["Statement"].([]any) {
		for _, a := range list(st.(map[string]any)["Action"]) {
			out = append(out, a.(string))
		}
	}
	sort.Strings(out)
	return out
}

// TestGlobalRouting: every region's stack puts its API at the domain with
// a certificate validated in the hosted zone, and a latency record for its
// region that carries the region's health check: a CLOUDWATCH_METRIC check
// on that region's own table-probe alarm, unhealthy while the alarm has
// too little data, and nothing that calls the API (the health route's
// throttle is every anonymous caller's). The alarm reads the sweeper's
// TableProbe metric: Minimum below 1 in each of 3 one-minute periods in a
// row, a missing minute breaching. The routes are those of every mode.
func TestGlobalRouting(t *testing.T) {
	cfg, err := ConfigFor("global", globalInputs)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range synthGlobal(t) {
		tmpl := s.template
		checkRoutes(t, s.name, tmpl)
		cert := props(only(t, tmpl, "AWS::CertificateManager::Certificate"))
		if cert["DomainName"] != testDomain || cert["ValidationMethod"] != "DNS" ||
			asJSON(cert["DomainValidationOptions"]) != `[{"DomainName":"`+testDomain+`","HostedZoneId":"`+testZoneID+`"}]` {
			t.Errorf("%s: certificate %s", s.name, asJSON(cert))
		}
		domain := props(only(t, tmpl, "AWS::ApiGatewayV2::DomainName"))
		if domain["DomainName"] != testDomain || !strings.Contains(asJSON(domain["DomainNameConfigurations"]), `"EndpointType":"REGIONAL"`) {
			t.Errorf("%s: domain %s", s.name, asJSON(domain))
		}
		mapping := only(t, tmpl, "AWS::ApiGatewayV2::ApiMapping")
		if m := props(mapping); m["Stage"] != "$default" || asJSON(m["ApiId"]) != `{"Ref":"ApiF70053CD"}` || !strings.Contains(asJSON(m["DomainName"]), `"Domain`) ||
			!strings.Contains(asJSON(mapping["DependsOn"]), "ApiDefaultStage") {
			t.Errorf("%s: mapping %s", s.name, asJSON(mapping))
		}

		// The probe's alarm, in this region's stack.
		alarmID := ""
		for id := range resources(tmpl, "AWS::CloudWatch::Alarm") {
			if strings.HasPrefix(id, "TableProbeAlarm") {
				alarmID = id
			}
		}
		alarm := props(byPrefix(t, resources(tmpl, "AWS::CloudWatch::Alarm"), "TableProbeAlarm"))
		dims := asJSON(alarm["Dimensions"])
		if alarm["Namespace"] != obs.Namespace || alarm["MetricName"] != obs.MetricTableProbe || alarm["Statistic"] != "Minimum" || alarm["Period"] != 60.0 ||
			dims != `[{"Name":"`+obs.DimensionEnvironment+`","Value":"`+cfg.Name+`"},{"Name":"`+obs.DimensionFunction+`","Value":"`+obs.FunctionSweeper+`"}]` ||
			alarm["ComparisonOperator"] != "LessThanThreshold" || alarm["Threshold"] != 1.0 || alarm["EvaluationPeriods"] != float64(tableProbePeriods) ||
			alarm["DatapointsToAlarm"] != nil || alarm["TreatMissingData"] != "breaching" || alarm["Metrics"] != nil || alarm["ExtendedStatistic"] != nil {
			t.Errorf("%s: table-probe alarm %s", s.name, asJSON(alarm))
		}
		if actions := list(alarm["AlarmActions"]); len(actions) != 1 || !strings.Contains(asJSON(actions[0]), `"Alarms`) {
			t.Errorf("%s: the table-probe alarm does not page: %v", s.name, actions)
		}

		// The region's one health check reads that alarm, in this region.
		checkID := ""
		for id := range resources(tmpl, "AWS::Route53::HealthCheck") {
			checkID = id
		}
		check := props(only(t, tmpl, "AWS::Route53::HealthCheck"))["HealthCheckConfig"].(map[string]any)
		if check["Type"] != "CLOUDWATCH_METRIC" || asJSON(check["AlarmIdentifier"]) != `{"Name":{"Ref":"`+alarmID+`"},"Region":"`+s.region+`"}` ||
			check["InsufficientDataHealthStatus"] != "Unhealthy" {
			t.Errorf("%s: health check %s", s.name, asJSON(check))
		}
		for _, endpoint := range []string{"FullyQualifiedDomainName", "IPAddress", "ResourcePath", "Port", "RequestInterval", "FailureThreshold"} {
			if check[endpoint] != nil {
				t.Errorf("%s: the health check calls an endpoint (%s): %s", s.name, endpoint, asJSON(check))
			}
		}
		record := props(only(t, tmpl, "AWS::Route53::RecordSet"))
		alias := asJSON(record["AliasTarget"])
		if record["Type"] != "A" || record["Name"] != testDomain+"." || record["HostedZoneId"] != testZoneID || record["SetIdentifier"] != s.region ||
			record["Region"] != s.region || asJSON(record["HealthCheckId"]) != `{"Ref":"`+checkID+`"}` ||
			!strings.Contains(alias, `"RegionalDomainName"`) || !strings.Contains(alias, `"RegionalHostedZoneId"`) {
			t.Errorf("%s: latency record %s", s.name, asJSON(record))
		}
	}
}

// TestGlobalNag: cdk-nag's packs find nothing unsuppressed in any stack
// of the multi-region app.
func TestGlobalNag(t *testing.T) {
	for _, s := range synthGlobal(t) {
		for _, f := range s.findings {
			t.Errorf("%s: %s", s.name, f)
		}
	}
}

// TestSingleRegionHasNoDomain: a single-region stack has neither a global
// table, a custom domain nor a record, and its health route is public as
// in every mode (TestAPI).
func TestSingleRegionHasNoDomain(t *testing.T) {
	tmpl := synth(t, "dev")
	for _, typ := range []string{"AWS::DynamoDB::GlobalTable", "AWS::ApiGatewayV2::DomainName", "AWS::Route53::RecordSet", "AWS::Route53::HealthCheck",
		"AWS::CertificateManager::Certificate", "Custom::ReplicaStreamArn"} {
		if n := len(resources(tmpl, typ)); n != 0 {
			t.Errorf("dev has %d %s", n, typ)
		}
	}
	if id := fmt.Sprint(props(only(t, tmpl, "AWS::CloudWatch::Dashboard"))["DashboardName"]); id != "idempay-dev" {
		t.Errorf("dev's dashboard is %s", id)
	}
}

// TestGlobalSweeperPurges: with no TTL, every region's sweeper is told the
// table's mode and the purge window, which a single-region sweeper is not
// (its table deletes by TTL).
func TestGlobalSweeperPurges(t *testing.T) {
	for _, s := range synthGlobal(t) {
		vars := props(byPrefix(t, resources(s.template, "AWS::Lambda::Function"), "Sweeper"))["Environment"].(map[string]any)["Variables"].(map[string]any)
		if vars[deploy.EnvTableMode] != string(deploy.MultiRegionStrong) || vars[deploy.EnvPurgeWindow] != deployed.PurgeWindow.String() {
			t.Errorf("%s: the sweeper's %s=%v, %s=%v", s.name, deploy.EnvTableMode, vars[deploy.EnvTableMode], deploy.EnvPurgeWindow, vars[deploy.EnvPurgeWindow])
		}
	}
	for id, fn := range resources(synth(t, "prod"), "AWS::Lambda::Function") {
		vars := asJSON(props(fn)["Environment"])
		if strings.Contains(vars, deploy.EnvTableMode) || strings.Contains(vars, deploy.EnvPurgeWindow) {
			t.Errorf("prod's %s: %s", id, vars)
		}
	}
}

// TestGlobalEventsOnce: each region's publisher is given its own region's
// ledger rows (streamfilter.For) and may mark them; its sweeper beats its
// own region's heartbeat only, reads the heartbeats and rows, marks rows
// and publishes to its own topic, with the stale age of the description;
// the charging functions know the mode, so their rows carry the region;
// and every region's outcome queue of every subscriber is subscribed to
// every region's topic exactly once across the stacks, in the topic's
// region, with the subscriber's filter, its queue's policy admitting the
// other regions' topics.
func TestGlobalEventsOnce(t *testing.T) {
	stacks := synthGlobal(t)
	cfg, err := ConfigFor("global", globalInputs)
	if err != nil {
		t.Fatal(err)
	}
	subscribers := subscribersOf(cfg)
	type route struct{ topic, queue, subscriber string }
	routes := map[route]int{}
	for _, s := range stacks {
		tmpl := s.template
		m := props(byPrefix(t, resources(tmpl, "AWS::Lambda::EventSourceMapping"), "PublisherMapping"))
		var patterns []string
		for _, f := range m["FilterCriteria"].(map[string]any)["Filters"].([]any) {
			patterns = append(patterns, f.(map[string]any)["Pattern"].(string))
		}
		want := streamfilter.For(s.region).Patterns()
		if len(patterns) != len(want) || !strings.Contains(patterns[0], `["`+s.region+`"]`) {
			t.Fatalf("%s: the publisher's filters %v, want its region's %v", s.name, patterns, want)
		}
		for i := range want {
			if !sameJSON(t, patterns[i], want[i]) {
				t.Errorf("%s: filter %d is %s, want %s", s.name, i, patterns[i], want[i])
			}
		}
		fns := resources(tmpl, "AWS::Lambda::Function")
		for _, fn := range []string{"Charge", "SqsConsumer", "Reconciler", "Publisher", "Sweeper"} {
			if vars := props(byPrefix(t, fns, fn))["Environment"].(map[string]any)["Variables"].(map[string]any); vars[deploy.EnvTableMode] != string(deploy.MultiRegionStrong) {
				t.Errorf("%s %s: %s=%v", s.name, fn, deploy.EnvTableMode, vars[deploy.EnvTableMode])
			}
		}
		sweeper := props(byPrefix(t, fns, "Sweeper"))["Environment"].(map[string]any)["Variables"].(map[string]any)
		if sweeper[deploy.EnvStaleRegion] != deployed.StaleRegion.String() || !strings.HasPrefix(asJSON(sweeper[deploy.EnvOutcomeTopicARN]), `{"Ref":"Outcomes`) {
			t.Errorf("%s: the sweeper's environment %s", s.name, asJSON(sweeper))
		}
		policies := resources(tmpl, "AWS::IAM::Policy")
		sweeperPolicy := asJSON(props(byPrefix(t, policies, "SweeperPolicy"))["PolicyDocument"])
		mark := `"Action":"dynamodb:UpdateItem","Condition":{"ForAllValues:StringEquals":{"dynamodb:Attributes":["pk","unpublished_shard","unpublished_since"]},` +
			`"ForAllValues:StringLike":{"dynamodb:LeadingKeys":["` + tabledef.LedgerPrefix + `*","` + tabledef.RefundPrefix + `*","` + tabledef.CapturePrefix + `*","` + tabledef.VoidPrefix + `*"]},"StringEqualsIfExists":{"dynamodb:ReturnValues":"NONE"}}`
		for _, want := range []string{
			`"Action":"dynamodb:PutItem","Condition":{"ForAllValues:StringEquals":{"dynamodb:Attributes":["pk","region","beat_at"],"dynamodb:LeadingKeys":["` +
				tabledef.HeartbeatPrefix + s.region + `"]},"StringEqualsIfExists":{"dynamodb:ReturnValues":"NONE"}}`,
			`"Action":"dynamodb:GetItem","Condition":{"ForAllValues:StringLike":{"dynamodb:LeadingKeys":["` + tabledef.HeartbeatPrefix + `*","` + tabledef.LedgerPrefix + `*","` + tabledef.RefundPrefix + `*","` + tabledef.CapturePrefix + `*","` + tabledef.VoidPrefix + `*"]}}`,
			mark,
			`"Action":"sns:Publish","Effect":"Allow","Resource":{"Ref":"Outcomes`,
		} {
			if !strings.Contains(sweeperPolicy, want) {
				t.Errorf("%s: the sweeper's policy lacks %s: %s", s.name, want, sweeperPolicy)
			}
		}
		if p := asJSON(props(byPrefix(t, policies, "PublisherPolicy"))["PolicyDocument"]); !strings.Contains(p, mark) {
			t.Errorf("%s: the publisher may not mark rows, or may do more: %s", s.name, p)
		}

		for id, sub := range resources(tmpl, "AWS::SNS::Subscription") {
			p := props(sub)
			r := route{topic: s.region, queue: s.region}
			if topic := asJSON(p["TopicArn"]); !strings.HasPrefix(topic, `{"Ref":"Outcomes`) && !strings.Contains(topic, "-outcomes") {
				continue // the alarms' topic
			} else if !strings.HasPrefix(topic, `{"Ref":"Outcomes`) {
				r.topic = regionIn(topic)
				if p["Region"] != r.topic {
					t.Errorf("%s %s: a subscription to %s made in region %v", s.name, id, topic, p["Region"])
				}
			}
			if endpoint := asJSON(p["Endpoint"]); !strings.HasPrefix(endpoint, `{"Fn::GetAtt":["Outcomes`) {
				r.queue = regionIn(endpoint)
			}
			var policy map[string][]string
			if err := json.Unmarshal([]byte(asJSON(p["FilterPolicy"])), &policy); err != nil || len(policy["producer"]) != 1 {
				t.Errorf("%s %s: filter %s", s.name, id, asJSON(p["FilterPolicy"]))
				continue
			}
			r.subscriber = policy["producer"][0]
			dlq := asJSON(p["RedrivePolicy"])
			if p["RawMessageDelivery"] != true || p["Protocol"] != "sqs" ||
				(r.topic == s.region) != strings.Contains(dlq, `"UndeliveredOutcomes`) || r.topic != s.region && !strings.Contains(dlq, ":sqs:"+r.topic+":") {
				t.Errorf("%s %s: %s; want raw delivery to a queue, undelivered events to the topic's region", s.name, id, asJSON(p))
			}
			routes[r]++
		}
		for _, q := range subscribers {
			doc := asJSON(props(byPrefix(t, resources(tmpl, "AWS::SQS::QueuePolicy"), "Outcomes"+q+"Policy"))["PolicyDocument"])
			for _, other := range stacks {
				if other.region == s.region {
					continue
				}
				if !strings.Contains(doc, `"Principal":{"Service":"sns.amazonaws.com"},"Resource":{"Fn::GetAtt":`) ||
					!strings.Contains(doc, ":sns:"+other.region+":${AWS::AccountId}:"+other.name+"-outcomes") {
					t.Errorf("%s: %s's queue policy does not admit %s's topic: %s", s.name, q, other.region, doc)
				}
			}
		}
	}
	for _, topic := range stacks {
		for _, queue := range stacks {
			for _, q := range subscribers {
				if n := routes[route{topic.region, queue.region, q}]; n != 1 {
					t.Errorf("%s's topic to %s's queue of %s: %d subscriptions, want 1", topic.region, queue.region, q, n)
				}
			}
		}
	}
	if len(routes) != len(stacks)*len(stacks)*len(subscribers) {
		t.Errorf("subscriptions %v", routes)
	}
}

// TestSNSPrincipals: a queue admits another region's topic by the global
// SNS principal between regions enabled by default, and by the opt-in
// region's own where one takes part (the queue's when both are).
func TestSNSPrincipals(t *testing.T) {
	for _, c := range []struct{ topic, queue, want string }{
		{"us-east-1", "us-east-2", "sns.amazonaws.com"},
		{"ap-northeast-3", "ap-northeast-1", "sns.ap-northeast-3.amazonaws.com"},
		{"ap-northeast-1", "ap-northeast-3", "sns.ap-northeast-3.amazonaws.com"},
		{"eu-south-1", "eu-central-2", "sns.eu-central-2.amazonaws.com"},
	} {
		if got := snsPrincipal(c.topic, c.queue); got != c.want {
			t.Errorf("a topic in %s, a queue in %s: %s, want %s", c.topic, c.queue, got, c.want)
		}
	}
	for _, set := range mrscRegionSets {
		for _, r := range set {
			if snsOptIn[r] != (r == "ap-northeast-3") {
				t.Errorf("%s: opt-in for SNS %t", r, snsOptIn[r])
			}
		}
	}
}

// regionIn is the region of the ARN a Fn::Sub formats.
func regionIn(arn string) string {
	for _, part := range strings.Split(arn, ":") {
		if awsRegion.MatchString(part) {
			return part
		}
	}
	return ""
}

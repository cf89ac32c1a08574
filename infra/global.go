package main

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscertificatemanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsroute53"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsroute53targets"
	"github.com/aws/aws-cdk-go/awscdk/v2/customresources"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-payments/idempay/internal/tabledef"
)

// NewStacks defines cfg's environment: one stack (NewStack), or in the
// multi-region mode one per region of cfg.Regions, each the whole system
// (API, functions, queues, topic, secret, sweeper, alarms) on its own
// region's replica. The first region's stack creates the table and its
// replicas, and each later stack subscribes queues and topics of the
// stacks before it (crossRegionOutcomes), so every stack depends on every
// earlier one and `cdk deploy --all` deploys them in cfg.Regions' order. No
// stack deploys in the witness region, where the table can be neither
// read nor written.
func NewStacks(scope constructs.Construct, cfg Config, assets StackAssets) []awscdk.Stack {
	var stacks []awscdk.Stack
	for _, region := range cfg.Regions {
		stack := NewStack(scope, cfg.StackName(region), cfg.inRegion(region), assets)
		for i, earlier := range stacks {
			why := "its outcome queues and topic are subscribed to this region's"
			if i == 0 {
				why = "the first region's stack creates the table and this region's replica, and " + why
			}
			stack.AddStackDependency(earlier, jsii.String(why))
		}
		stacks = append(stacks, stack)
	}
	return stacks
}

// globalTableName is the multi-region table's name, the same in every
// region: fixed, so each region's stack names its own replica without a
// reference to the stack that creates it.
func globalTableName(cfg Config) string { return "idempay-" + cfg.Name }

// newGlobalTable is the multi-region table, strongly consistent (MRSC),
// built from tabledef.For with the mode's TTL (none, so it has the expiry
// index the sweeper's purge lists), with a replica in every other region of
// cfg.Regions and the witness when there are two. Stream, point-in-time
// recovery, encryption and deletion protection apply to every replica.
func newGlobalTable(stack awscdk.Stack, cfg Config, removal awscdk.RemovalPolicy) awsdynamodb.TableV2 {
	def := tabledef.For(cfg.tableTTL())
	if def.BillingMode != "PAY_PER_REQUEST" {
		panic("tabledef: billing mode " + def.BillingMode + " has no TableV2 billing here")
	}
	var replicas []*awsdynamodb.ReplicaTableProps
	for _, r := range cfg.Regions[1:] {
		replicas = append(replicas, &awsdynamodb.ReplicaTableProps{Region: jsii.String(r)})
	}
	var witness *string
	if cfg.WitnessRegion != "" {
		witness = jsii.String(cfg.WitnessRegion)
	}
	var ttl *string
	if cfg.tableTTL() {
		ttl = jsii.String(tabledef.TTLAttribute)
	}
	return awsdynamodb.NewTableV2(stack, jsii.String("Table"), &awsdynamodb.TablePropsV2{
		TableName:              jsii.String(globalTableName(cfg)),
		PartitionKey:           attributeV2(def.Partition),
		Billing:                awsdynamodb.Billing_OnDemand(nil),
		GlobalSecondaryIndexes: indexesV2(def.Indexes, cfg.IndexWarmWrites),
		WarmThroughput:         warmV2(cfg.TableWarmWrites),
		TimeToLiveAttribute:    ttl,
		DynamoStream:           awsdynamodb.StreamViewType(def.StreamView),
		MultiRegionConsistency: awsdynamodb.MultiRegionConsistency_STRONG,
		Replicas:               &replicas,
		WitnessRegion:          witness,
		// As the single-region table: SSE with the AWS-managed key.
		Encryption:                       awsdynamodb.TableEncryptionV2_AwsManagedKey(),
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{PointInTimeRecoveryEnabled: jsii.Bool(true)},
		DeletionProtection:               jsii.Bool(cfg.Retain),
		RemovalPolicy:                    removal,
	})
}

func attributeV2(a tabledef.Attribute) *awsdynamodb.Attribute {
	t, ok := map[tabledef.Type]awsdynamodb.AttributeType{tabledef.String: awsdynamodb.AttributeType_STRING, tabledef.Number: awsdynamodb.AttributeType_NUMBER}[a.Type]
	if !ok {
		panic(fmt.Sprintf("tabledef: attribute %s has type %q", a.Name, a.Type))
	}
	return &awsdynamodb.Attribute{Name: jsii.String(a.Name), Type: t}
}

func indexesV2(indexes []tabledef.Index, warmWrites int) *[]*awsdynamodb.GlobalSecondaryIndexPropsV2 {
	var out []*awsdynamodb.GlobalSecondaryIndexPropsV2
	for _, ix := range indexes {
		gsi := &awsdynamodb.GlobalSecondaryIndexPropsV2{
			IndexName: jsii.String(ix.Name), PartitionKey: attributeV2(ix.Partition),
			ProjectionType: awsdynamodb.ProjectionType(ix.Projection()), WarmThroughput: warmV2(warmWrites),
		}
		if ix.Sort.Name != "" {
			gsi.SortKey = attributeV2(ix.Sort)
		}
		if len(ix.Projected) > 0 {
			gsi.NonKeyAttributes = jsii.Strings(ix.Projected...)
		}
		out = append(out, gsi)
	}
	return &out
}

// warmV2 is a pre-warmed write throughput, or none for 0.
func warmV2(writesPerSecond int) *awsdynamodb.WarmThroughput {
	if writesPerSecond == 0 {
		return nil
	}
	return &awsdynamodb.WarmThroughput{WriteUnitsPerSecond: jsii.Number(float64(writesPerSecond))}
}

// replicaTable is the table in a stack of another region than the first:
// that region's replica, which the first region's stack creates.
//
// Its ARN is formatted from the fixed table name and the stack's region,
// as CDK's TableV2.replica does, so it names this region's replica with
// no cross-region reference. Its stream's ARN cannot be formatted: it ends
// in a label, the time the stream was created. CloudFormation's
// AWS::DynamoDB::GlobalTable returns StreamArn only for the replica in its
// own stack's region, and TableV2.replica gives "<table ARN>/stream/*",
// which an IAM policy takes but an event source mapping does not (its
// EventSourceArn is one stream). So the stack reads the stream's ARN at
// deploy time from the replica itself, DynamoDB's DescribeTable
// (Table.LatestStreamArn) in its own region, in a custom resource whose
// role may describe that table only. The publisher's trigger and its
// policy then name that one stream; the label changes only if the stream
// is turned off and on, which nothing here does.
func replicaTable(stack awscdk.Stack, cfg Config, removal awscdk.RemovalPolicy) tableRef {
	name := globalTableName(cfg)
	arn := awscdk.Fn_Sub(jsii.String("arn:${AWS::Partition}:dynamodb:${AWS::Region}:${AWS::AccountId}:table/"+name), nil)
	logs := awslogs.NewLogGroup(stack, jsii.String("ReplicaStreamLookupLogs"), &awslogs.LogGroupProps{
		Retention: retention(cfg.LogRetentionDays), RemovalPolicy: removal,
	})
	role := awsiam.NewRole(stack, jsii.String("ReplicaStreamLookupRole"), &awsiam.RoleProps{
		AssumedBy: awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
	})
	policy := awsiam.NewPolicy(stack, jsii.String("ReplicaStreamLookupPolicy"), &awsiam.PolicyProps{Roles: &[]awsiam.IRole{role}, Statements: &[]awsiam.PolicyStatement{
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{Actions: jsii.Strings("dynamodb:DescribeTable"), Resources: &[]*string{arn}}),
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{Actions: jsii.Strings("logs:CreateLogStream", "logs:PutLogEvents"), Resources: &[]*string{logs.LogGroupArn()}}),
	}})
	describe := &customresources.AwsSdkCall{
		Service: jsii.String("DynamoDB"), Action: jsii.String("describeTable"), Parameters: map[string]any{"TableName": name},
		PhysicalResourceId: customresources.PhysicalResourceId_FromResponse(jsii.String(latestStreamArn)),
		OutputPaths:        jsii.Strings(latestStreamArn), // the response kept within CloudFormation's limit
	}
	lookup := customresources.NewAwsCustomResource(stack, jsii.String("ReplicaStream"), &customresources.AwsCustomResourceProps{
		ResourceType: jsii.String("Custom::ReplicaStreamArn"), OnCreate: describe, OnUpdate: describe,
		Role: role, LogGroup: logs, InstallLatestAwsSdk: jsii.Bool(false), MemorySize: jsii.Number(256),
	})
	lookup.Node().AddDependency(policy)
	suppressReplicaLookup(stack)
	return tableRef{name: jsii.String(name), arn: arn, streamArn: lookup.GetResponseField(jsii.String(latestStreamArn))}
}

// latestStreamArn is the field of DescribeTable's answer that holds the
// table's stream ARN.
const latestStreamArn = "Table.LatestStreamArn"

// newDomain puts the stack's API at cfg.DomainName in its region: an ACM
// certificate validated by DNS in the hosted zone, a regional custom
// domain mapped to the stage, a Route 53 health check of the region, and
// a latency record for the domain (this region's, SetIdentifier and Region
// the region) that answers only while that check is healthy, so clients go
// to the nearest healthy region.
//
// The check is of type CLOUDWATCH_METRIC on probe, the region's
// table-probe alarm (tableProbeAlarm): healthy while the alarm is OK,
// unhealthy in ALARM, and unhealthy while CloudWatch has too little data
// to say (InsufficientDataHealthStatus), so a region enters the domain
// only once its own probes have answered. The deployment makes that probe
// itself, from the region's sweeper, so no caller of the API takes part
// in it: the health route's throttle is shared by every anonymous caller,
// and a check that called it would turn unhealthy under anyone's flood.
// What the probe does not cover (API Gateway, the authorizer, the charge
// function) is in docs/deploying.md.
func newDomain(stack awscdk.Stack, cfg Config, api awsapigatewayv2.HttpApi, stage awsapigatewayv2.HttpStage, probe awscloudwatch.Alarm) {
	zone := awsroute53.HostedZone_FromHostedZoneAttributes(stack, jsii.String("Zone"), &awsroute53.HostedZoneAttributes{
		HostedZoneId: jsii.String(cfg.HostedZoneID), ZoneName: jsii.String(cfg.HostedZoneName),
	})
	cert := awscertificatemanager.NewCertificate(stack, jsii.String("Certificate"), &awscertificatemanager.CertificateProps{
		DomainName: jsii.String(cfg.DomainName), Validation: awscertificatemanager.CertificateValidation_FromDns(zone),
	})
	domain := awsapigatewayv2.NewDomainName(stack, jsii.String("Domain"), &awsapigatewayv2.DomainNameProps{
		DomainName: jsii.String(cfg.DomainName), Certificate: cert,
		EndpointType: awsapigatewayv2.EndpointType_REGIONAL, SecurityPolicy: awsapigatewayv2.SecurityPolicy_TLS_1_2,
	})
	awsapigatewayv2.NewApiMapping(stack, jsii.String("ApiMapping"), &awsapigatewayv2.ApiMappingProps{Api: api, DomainName: domain, Stage: stage})
	check := awsroute53.NewHealthCheck(stack, jsii.String("HealthCheck"), &awsroute53.HealthCheckProps{
		Type:                         awsroute53.HealthCheckType_CLOUDWATCH_METRIC,
		AlarmIdentifier:              &awsroute53.AlarmIdentifier{Name: probe.AlarmName(), Region: jsii.String(cfg.Region)},
		InsufficientDataHealthStatus: awsroute53.InsufficientDataHealthStatusEnum_UNHEALTHY,
	})
	awsroute53.NewARecord(stack, jsii.String("LatencyRecord"), &awsroute53.ARecordProps{
		Zone: zone, RecordName: jsii.String(cfg.DomainName),
		Target:        awsroute53.RecordTarget_FromAlias(awsroute53targets.NewApiGatewayv2DomainProperties(domain.RegionalDomainName(), domain.RegionalHostedZoneId())),
		SetIdentifier: jsii.String(cfg.Region), Region: jsii.String(cfg.Region), HealthCheck: check,
	})
	awscdk.NewCfnOutput(stack, jsii.String("DomainUrl"), &awscdk.CfnOutputProps{
		Value: jsii.String("https://" + cfg.DomainName), Description: jsii.String("The API at the domain: the nearest healthy region's"),
	})
	awscdk.NewCfnOutput(stack, jsii.String("HealthCheckId"), &awscdk.CfnOutputProps{
		Value: check.HealthCheckId(), Description: jsii.String("Route 53's check of this region: its table-probe alarm"),
	})
}

package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/idempotent-payments/idempay/internal/deploy"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/tabledef"
)

// operatorChannel is the operator's channel: the operator function behind
// a function URL with AWS_IAM auth, the function's resource policy, which
// denies every principal but the operator's role, and that role.
type operatorChannel struct {
	fn   function
	url  awslambda.FunctionUrl
	role awsiam.Role
}

// The actions of the channel: a function URL's invocation is authorized
// as both (AWS Lambda Developer Guide, "Control access to Lambda function
// URLs": function URLs created from October 2025 need both).
var operatorInvokeActions = []string{"lambda:InvokeFunctionUrl", "lambda:InvokeFunction"}

// newOperatorChannel makes the channel. The function may do what the
// reconciler does (take records over, complete and release them, put the
// ledger and refund rows a completion writes first, deleting a held
// marker there, move refund balances; never put a record, so it claims
// nothing), put the voided markers of its voids at the rows' keys, read
// the acquirer's credential, and put and read the release markers of its
// voids. The operator's role may call the channel and read
// the table, and keeps only the grants idemctl republish needs; it writes
// no record and holds no secret.
func newOperatorChannel(stack awscdk.Stack, cfg Config, assets StackAssets, removal awscdk.RemovalPolicy, env *map[string]*string,
	table tableRef, topicArn *string, publisherFailures awssqs.Queue, secretArn *string) operatorChannel {
	tableArn := table.arn
	fn := newFunction(stack, "Operator", cfg, assets, removal, timeoutOf(deploy.FunctionOperator), env, append([]statement{
		{actions: []string{"dynamodb:GetItem"}, resources: []*string{tableArn}, conditions: leadingKeys(idem.RecordPrefix, tabledef.LedgerPrefix, tabledef.ReleasePrefix)},
		{actions: []string{"dynamodb:UpdateItem"}, resources: []*string{tableArn}, conditions: leadingKeys(idem.RecordPrefix)},
		// an accept's row deletes a held marker, conditioned on being one
		{actions: []string{"dynamodb:DeleteItem"}, resources: []*string{tableArn}, conditions: leadingKeys(idem.RecordPrefix, tabledef.LedgerPrefix)},
		{actions: []string{"dynamodb:PutItem"}, resources: []*string{tableArn}, conditions: leadingKeys(tabledef.LedgerPrefix, tabledef.ReleasePrefix)},
		{actions: []string{"secretsmanager:GetSecretValue"}, resources: []*string{secretArn}},
	}, refundGrants(tableArn)...))
	url := fn.fn.AddFunctionUrl(&awslambda.FunctionUrlOptions{AuthType: awslambda.FunctionUrlAuthType_AWS_IAM})

	var assumedBy awsiam.IPrincipal = awsiam.NewAccountRootPrincipal()
	if cfg.OperatorPrincipal != "" {
		assumedBy = awsiam.NewArnPrincipal(jsii.String(cfg.OperatorPrincipal))
	} else { // dev only: ConfigFor requires a principal elsewhere
		awscdk.Annotations_Of(stack).AddWarningV2(jsii.String("idempay:operator-trusts-account"), jsii.String(
			"the operator's role trusts the whole account "+cfg.Account+": any principal allowed sts:AssumeRole on it can settle held charges. "+
				"Name its principal with -c "+InputOperatorPrincipal+"=arn:aws:iam::...:role/... (required in staging and prod)"), nil)
	}
	role := awsiam.NewRole(stack, jsii.String("OperatorCallerRole"), &awsiam.RoleProps{
		AssumedBy:   assumedBy,
		Description: jsii.String("The operator of idempay " + cfg.Name + ": calls the operator's channel, reads the table, republishes events"),
	})
	statements := []awsiam.PolicyStatement{
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions: jsii.Strings("lambda:InvokeFunctionUrl"), Resources: &[]*string{fn.fn.FunctionArn()},
			Conditions: &map[string]interface{}{"StringEquals": map[string]interface{}{"lambda:FunctionUrlAuthType": "AWS_IAM"}},
		}),
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions: jsii.Strings("lambda:InvokeFunction"), Resources: &[]*string{fn.fn.FunctionArn()},
			Conditions: &map[string]interface{}{"Bool": map[string]interface{}{"lambda:InvokedViaFunctionUrl": "true"}},
		}),
		// inspect and held read records, every operation's rows and
		// charges' balances, republish rows, match the daily match's
		// lines; stale and held list the in-flight index, match a day's
		// lines in the day index.
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions: jsii.Strings("dynamodb:GetItem"), Resources: &[]*string{tableArn},
			Conditions: &map[string]interface{}{"ForAllValues:StringLike": map[string]interface{}{
				"dynamodb:LeadingKeys": wildcards(append([]string{idem.RecordPrefix, tabledef.BalancePrefix, tabledef.MatchPrefix}, tabledef.RowPrefixes()...)...)}},
		}),
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions: jsii.Strings("dynamodb:Query"), Resources: &[]*string{jsii.String(*tableArn + "/index/" + tabledef.InflightIndex), jsii.String(*tableArn + "/index/" + tabledef.DayIndex)},
		}),
		// republish: an event to the outcome topic; a failed batch's
		// records from the stream; the failures queue drained.
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{Actions: jsii.Strings("sns:Publish"), Resources: &[]*string{topicArn}}),
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions: jsii.Strings("dynamodb:DescribeStream", "dynamodb:GetShardIterator", "dynamodb:GetRecords"), Resources: &[]*string{table.streamArn},
		}),
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions: jsii.Strings("sqs:ReceiveMessage", "sqs:DeleteMessage"), Resources: &[]*string{publisherFailures.QueueArn()},
		}),
	}
	if cfg.multiRegion() { // republish marks a region's row published: the mark alone (markStatement)
		m := markStatement(tableArn)
		c := map[string]interface{}(m.conditions)
		statements = append(statements, awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions: jsii.Strings(m.actions...), Resources: &m.resources, Conditions: &c,
		}))
	}
	awsiam.NewPolicy(stack, jsii.String("OperatorCallerPolicy"), &awsiam.PolicyProps{Roles: &[]awsiam.IRole{role}, Statements: &statements})

	// Within one account an Allow in a resource policy restricts nobody:
	// any principal whose own policy allows the invocation may call. The
	// explicit Deny on every principal but the operator's role makes the
	// role the only caller, whatever other policies say. The function has
	// no version or alias (TestOperatorChannel); its qualified ARNs are
	// named too, so one published later is not left open.
	awslambda.NewCfnResourcePolicy(stack, jsii.String("OperatorOnlyCaller"), &awslambda.CfnResourcePolicyProps{
		ResourceArn: fn.fn.FunctionArn(),
		PolicyDocument: map[string]interface{}{
			"Version": "2012-10-17",
			"Statement": []interface{}{map[string]interface{}{
				"Sid": "OnlyTheOperatorsRole", "Effect": "Deny", "Principal": "*",
				"Action": operatorInvokeActions, "Resource": []interface{}{fn.fn.FunctionArn(), awscdk.Fn_Join(jsii.String(""), &[]*string{fn.fn.FunctionArn(), jsii.String(":*")})},
				"Condition": map[string]interface{}{"ArnNotEquals": map[string]interface{}{"aws:PrincipalArn": role.RoleArn()}},
			}},
		},
	})
	awscdk.NewCfnOutput(stack, jsii.String("OperatorUrl"), &awscdk.CfnOutputProps{Value: url.Url(),
		Description: jsii.String("The operator's channel: idemctl's OPERATOR_URL, called with the operator's role")})
	awscdk.NewCfnOutput(stack, jsii.String("OperatorRoleArn"), &awscdk.CfnOutputProps{Value: role.RoleArn(),
		Description: jsii.String("The only role that may call the operator's channel")})
	return operatorChannel{fn: fn, url: url, role: role}
}

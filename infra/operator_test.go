package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/tabledef"
)

// getAtt is the template's reference to attribute of the resource whose
// logical id begins with prefix.
func getAtt(t *testing.T, tmpl map[string]any, typ, prefix, attribute string) string {
	t.Helper()
	for id := range resources(tmpl, typ) {
		if strings.HasPrefix(id, prefix) {
			return `{"Fn::GetAtt":["` + id + `","` + attribute + `"]}`
		}
	}
	t.Fatalf("no %s %s*", typ, prefix)
	return ""
}

// TestOperatorChannel: the operator function is served by a function URL
// with AWS_IAM auth; its resource policy is one explicit Deny of both
// invoke actions to every principal but the operator's role (within one
// account an Allow would restrict nobody), and nothing else grants an
// invocation of it; the operator's role, trusted by the configured
// principal, may call the channel and read the table, keeps the grants
// republish needs, writes no record and reads no secret; the function
// may do what the reconciler does and write release markers, but put no
// record (it claims nothing).
func TestOperatorChannel(t *testing.T) {
	tmpl := synth(t, "prod")
	fnArn := getAtt(t, tmpl, "AWS::Lambda::Function", "Operator", "Arn")
	roleArn := getAtt(t, tmpl, "AWS::IAM::Role", "OperatorCallerRole", "Arn")

	url := props(only(t, tmpl, "AWS::Lambda::Url"))
	if url["AuthType"] != "AWS_IAM" || asJSON(url["TargetFunctionArn"]) != fnArn {
		t.Errorf("the channel's URL: %s", asJSON(url))
	}
	rp := props(only(t, tmpl, "AWS::Lambda::ResourcePolicy"))
	deny := `{"Statement":[{"Action":["lambda:InvokeFunctionUrl","lambda:InvokeFunction"],"Condition":{"ArnNotEquals":{"aws:PrincipalArn":` + roleArn + `}},` +
		`"Effect":"Deny","Principal":"*","Resource":[` + fnArn + `,{"Fn::Join":["",[` + fnArn + `,":*"]]}],"Sid":"OnlyTheOperatorsRole"}],"Version":"2012-10-17"}`
	if asJSON(rp["ResourceArn"]) != fnArn || asJSON(rp["PolicyDocument"]) != deny {
		t.Errorf("the channel's resource policy:\n%s\nwant\n%s", asJSON(rp), deny)
	}
	for id, p := range resources(tmpl, "AWS::Lambda::Permission") {
		if asJSON(props(p)["FunctionName"]) == fnArn {
			t.Errorf("permission %s grants an invocation of the operator function: %s", id, asJSON(p))
		}
	}
	for _, typ := range []string{"AWS::Lambda::Version", "AWS::Lambda::Alias"} {
		if n := len(resources(tmpl, typ)); n > 0 {
			t.Errorf("%d %s: the Deny names the function and its qualified ARNs, and a resource policy is a version's or an alias's own", n, typ)
		}
	}

	role := props(byPrefix(t, resources(tmpl, "AWS::IAM::Role"), "OperatorCallerRole"))
	if trust := asJSON(role["AssumeRolePolicyDocument"]); !strings.Contains(trust, `"Principal":{"AWS":"arn:aws:iam::111122223333:role/payments-operators"}`) ||
		strings.Count(trust, `"Action"`) != 1 {
		t.Errorf("the operator's role trusts %s", trust)
	}
	policies := resources(tmpl, "AWS::IAM::Policy")
	caller := asJSON(props(byPrefix(t, policies, "OperatorCallerPolicy"))["PolicyDocument"])
	table := getAtt(t, tmpl, "AWS::DynamoDB::Table", "Table", "Arn")
	for _, want := range []string{
		`{"Action":"lambda:InvokeFunctionUrl","Condition":{"StringEquals":{"lambda:FunctionUrlAuthType":"AWS_IAM"}},"Effect":"Allow","Resource":` + fnArn + `}`,
		`{"Action":"lambda:InvokeFunction","Condition":{"Bool":{"lambda:InvokedViaFunctionUrl":"true"}},"Effect":"Allow","Resource":` + fnArn + `}`,
		`{"Action":"dynamodb:GetItem","Condition":{"ForAllValues:StringLike":{"dynamodb:LeadingKeys":["` + idem.RecordPrefix + `*","` + tabledef.BalancePrefix + `*","` + tabledef.MatchPrefix + `*","` + tabledef.LedgerPrefix + `*","` + tabledef.RefundPrefix + `*","` + tabledef.CapturePrefix + `*","` + tabledef.VoidPrefix + `*"]}},"Effect":"Allow","Resource":` + table + `}`,
		`{"Action":"dynamodb:Query","Effect":"Allow","Resource":[{"Fn::Join":["",[` + table + `,"/index/` + tabledef.InflightIndex + `"]]},{"Fn::Join":["",[` + table + `,"/index/` + tabledef.DayIndex + `"]]}]}`,
	} {
		if !strings.Contains(caller, want) {
			t.Errorf("the operator's role lacks %s:\n%s", want, caller)
		}
	}
	for _, never := range []string{"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem", "secretsmanager", "sqs:SendMessage"} {
		if strings.Contains(caller, never) {
			t.Errorf("the operator's role may %s:\n%s", never, caller)
		}
	}

	fn := asJSON(props(byPrefix(t, policies, "OperatorPolicy"))["PolicyDocument"])
	for _, want := range []string{
		`{"Action":"dynamodb:PutItem","Condition":{"ForAllValues:StringLike":{"dynamodb:LeadingKeys":["` + tabledef.LedgerPrefix + `*","` + tabledef.ReleasePrefix + `*"]}}`,
		`{"Action":"dynamodb:UpdateItem","Condition":{"ForAllValues:StringLike":{"dynamodb:LeadingKeys":["` + idem.RecordPrefix + `*"]}}`,
		`{"Action":"dynamodb:DeleteItem","Condition":{"ForAllValues:StringLike":{"dynamodb:LeadingKeys":["` + idem.RecordPrefix + `*","` + tabledef.LedgerPrefix + `*"]}}`,
		`"secretsmanager:GetSecretValue"`,
	} {
		if !strings.Contains(fn, want) {
			t.Errorf("the operator function's policy lacks %s:\n%s", want, fn)
		}
	}
	outputs := tmpl["Outputs"].(map[string]any)
	if asJSON(outputs["OperatorUrl"].(map[string]any)["Value"]) != getAtt(t, tmpl, "AWS::Lambda::Url", "OperatorFunctionUrl", "FunctionUrl") ||
		asJSON(outputs["OperatorRoleArn"].(map[string]any)["Value"]) != roleArn {
		t.Errorf("outputs: %s", asJSON(outputs))
	}
}

// TestOperatorPrincipal: staging and prod need the principal that may
// assume the operator's role, never an account's root; dev trusts the
// account and says so.
func TestOperatorPrincipal(t *testing.T) {
	for _, env := range []string{"staging", "prod"} {
		if _, err := ConfigFor(env, over(map[string]string{InputOperatorPrincipal: ""})); err == nil || !strings.Contains(err.Error(), InputOperatorPrincipal) {
			t.Errorf("%s without an operator principal: %v", env, err)
		}
	}
	for _, bad := range []string{"arn:aws:iam::111122223333:root", "111122223333", "arn:aws:iam::111122223333:role/ops\nx"} {
		if _, err := ConfigFor("prod", over(map[string]string{InputOperatorPrincipal: bad})); err == nil {
			t.Errorf("operator principal %q accepted", bad)
		}
	}
	cfg, err := ConfigFor("dev", over(map[string]string{InputOperatorPrincipal: ""}))
	if err != nil || cfg.OperatorPrincipal != "" {
		t.Fatalf("dev: %+v, %v", cfg.OperatorPrincipal, err)
	}
	tmpl := synthConfig(t, "idempay-dev", cfg)
	trust := asJSON(props(byPrefix(t, resources(tmpl, "AWS::IAM::Role"), "OperatorCallerRole"))["AssumeRolePolicyDocument"])
	if !strings.Contains(trust, ":root") {
		t.Errorf("dev's operator role trusts %s, want the account", trust)
	}
}

// TestGlobalOperatorMarksOnly: in the multi-region mode republish marks
// the rows it publishes, so the operator's role keeps the mark alone on
// ledger rows (markStatement): their key and unpublished listing, nothing
// returned.
func TestGlobalOperatorMarksOnly(t *testing.T) {
	for _, s := range synthGlobal(t) {
		caller := props(byPrefix(t, resources(s.template, "AWS::IAM::Policy"), "OperatorCallerPolicy"))["PolicyDocument"].(map[string]any)
		var updates []string
		for _, st := range caller["Statement"].([]any) {
			st := st.(map[string]any)
			if slices.Contains(list(st["Action"]), any("dynamodb:UpdateItem")) {
				updates = append(updates, asJSON(st["Condition"]))
			}
		}
		want := asJSON(markStatement(nil).conditions)
		if len(updates) != 1 || updates[0] != want {
			t.Errorf("%s: the operator's updates %v, want the mark's alone %s", s.name, updates, want)
		}
	}
}

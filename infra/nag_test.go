package main

//lint:file-ignore SA1019 aws-cdk-go reads synthesis messages only as cxapi.SynthesisMessage; the type it names instead lives in a JavaScript package with no Go binding

import (
	"sort"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/aws-cdk-go/awscdk/v2/cxapi"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// TestNag applies cdk-nag's AwsSolutions and Serverless packs to every
// environment's stack: any finding not suppressed (with its reason, in
// nag.go) fails the test.
func TestNag(t *testing.T) {
	for _, env := range singleRegionEnvironments {
		cfg, err := ConfigFor(env, testInputs)
		if err != nil {
			t.Fatal(err)
		}
		app := awscdk.NewApp(nil)
		stack := NewStack(app, "nag-"+env, cfg, StackAssets{Dir: testAssets(t)})
		awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
		awscdk.Aspects_Of(app).Add(cdknag.NewServerlessChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
		for _, f := range nagFindings(stack) {
			t.Errorf("%s: %s", env, f)
		}
	}
	// The control: the same packs do find an unencrypted queue that takes
	// plain HTTP and has no dead-letter queue.
	app := awscdk.NewApp(nil)
	control := awscdk.NewStack(app, jsii.String("nag-control"), nil)
	awssqs.NewQueue(control, jsii.String("Bare"), &awssqs.QueueProps{Encryption: awssqs.QueueEncryption_UNENCRYPTED})
	awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(nil), nil)
	awscdk.Aspects_Of(app).Add(cdknag.NewServerlessChecks(nil), nil)
	if f := nagFindings(control); len(f) == 0 {
		t.Fatal("cdk-nag found nothing in a bare queue: the packs are not running")
	}
}

// nagFindings lists the errors and warnings cdk-nag attached to stack.
func nagFindings(stack awscdk.Stack) []string {
	annotations := assertions.Annotations_FromStack(stack)
	var findings []string
	for _, level := range []func(*string, interface{}) *[]*cxapi.SynthesisMessage{annotations.FindError, annotations.FindWarning} {
		for _, m := range *level(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String(".*"))) {
			findings = append(findings, *m.Id+": "+asJSON(m.Entry.Data))
		}
	}
	sort.Strings(findings)
	return findings
}

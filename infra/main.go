// Command infra is the CDK app: one stack per environment, chosen with
// `cdk deploy -c env=staging` (or `make deploy ENV=staging`), and in the
// multi-region mode one per region (NewStacks), deployed in order by
// `cdk deploy --all`.
package main

import (
	"fmt"
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
)

// cliDefaults: the inputs the cdk CLI can supply from the deploying
// shell's credentials when the context does not.
var cliDefaults = map[string]string{InputAccount: "CDK_DEFAULT_ACCOUNT", InputRegion: "CDK_DEFAULT_REGION"}

func main() {
	defer jsii.Close()
	app := awscdk.NewApp(nil)
	env := "dev"
	if v, ok := app.Node().TryGetContext(jsii.String("env")).(string); ok && v != "" {
		env = v
	}
	cfg, err := ConfigFor(env, func(key string) string {
		v, _ := app.Node().TryGetContext(jsii.String(key)).(string)
		if fallback, ok := cliDefaults[key]; ok && v == "" {
			v = os.Getenv(fallback)
		}
		return v
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	NewStacks(app, cfg, StackAssets{Dir: "../dist"})
	app.Synth(nil)
}

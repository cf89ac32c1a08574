// Command infra is the CDK app: one stack per environment, chosen with
// `cdk deploy -c env=staging` (or `make deploy ENV=staging`).
package main

import (
	"fmt"
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
)

func main() {
	defer jsii.Close()
	app := awscdk.NewApp(nil)
	env := "dev"
	if v, ok := app.Node().TryGetContext(jsii.String("env")).(string); ok && v != "" {
		env = v
	}
	cfg, err := ConfigFor(env, func(key string) string {
		v, _ := app.Node().TryGetContext(jsii.String(key)).(string)
		return v
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	NewStack(app, "idempay-"+env, cfg, StackAssets{Dir: "../dist"})
	app.Synth(nil)
}

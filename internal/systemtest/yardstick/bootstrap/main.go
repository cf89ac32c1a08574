// Command bootstrap is the yardstick function (package yardstick), started
// as every function of this module is: the plain yardstick, or with
// YARDSTICK_MODE=sdk the SDK floor, its client built as the functions'
// (setup.AWS, dynamo.NewClient).
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/idempotent-payments/idempay/internal/deploy"
	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/setup"
	"github.com/idempotent-payments/idempay/internal/systemtest/yardstick"
)

func main() {
	setup.Main(func(*slog.Logger) error {
		if os.Getenv(yardstick.EnvMode) != yardstick.ModeSDK {
			lambda.Start(yardstick.Handler(os.Getenv(yardstick.EnvURL)))
			return nil
		}
		awsCfg, err := setup.AWS(context.Background())
		if err != nil {
			return err
		}
		skip, err := setup.Boolean(os.Getenv, deploy.EnvSkipResponseCRC32)
		if err != nil {
			return err
		}
		answers, err := yardstick.Answers(os.Getenv(yardstick.EnvAnswer))
		if err != nil {
			return err
		}
		lambda.Start(yardstick.SDKHandler(dynamo.NewClient(awsCfg, skip), os.Getenv(yardstick.EnvTable), os.Getenv(yardstick.EnvURL), answers))
		return nil
	})
}

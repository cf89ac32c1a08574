// Command bootstrap is the yardstick function (package yardstick), started
// as every function of this module is: the plain yardstick, or with
// YARDSTICK_MODE=sdk the SDK floor of the API's paths (sdk-queue: of the
// queue's commands), its client built as the functions' (setup.AWS,
// dynamo.NewClient).
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
		mode, table, url := os.Getenv(yardstick.EnvMode), os.Getenv(yardstick.EnvTable), os.Getenv(yardstick.EnvURL)
		if mode != yardstick.ModeSDK && mode != yardstick.ModeSDKQueue {
			lambda.Start(yardstick.Handler(url))
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
		client := dynamo.NewClient(awsCfg, skip)
		if mode == yardstick.ModeSDKQueue {
			lambda.Start(yardstick.SDKQueueHandler(client, table, url, deploy.ConsumerConcurrency))
			return nil
		}
		answers, err := yardstick.Answers(os.Getenv(yardstick.EnvAnswer))
		if err != nil {
			return err
		}
		lambda.Start(yardstick.SDKHandler(client, table, url, answers))
		return nil
	})
}

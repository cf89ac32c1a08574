// Command bootstrap is the yardstick function (package yardstick), started
// as every function of this module is.
package main

import (
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/idempotent-payments/idempay/internal/setup"
	"github.com/idempotent-payments/idempay/internal/systemtest/yardstick"
)

func main() {
	setup.Main(func(*slog.Logger) error {
		lambda.Start(yardstick.Handler(os.Getenv(yardstick.EnvURL)))
		return nil
	})
}

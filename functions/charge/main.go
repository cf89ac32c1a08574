// Command charge is the Lambda function behind every route of the API
// (route.All and route.Public: the charges, their refunds, captures and
// voids, the health check; API Gateway HTTP API, payload v2).
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/idempotent-payments/idempay/internal/charging"
	"github.com/idempotent-payments/idempay/internal/httpapi"
	"github.com/idempotent-payments/idempay/internal/obs"
	"github.com/idempotent-payments/idempay/internal/setup"
)

func main() { setup.Main(run) }

// run builds the handler from the environment and serves invocations; it
// returns only when start-up fails.
func run(logger *slog.Logger) error {
	c, err := charging.Start(context.Background(), obs.FunctionCharge, os.Getenv, logger)
	if err != nil {
		return err
	}
	h := &httpapi.Handler{Service: c.Service, Refunds: c.Refunds, Captures: c.Captures, AccountClaim: c.Config.AccountClaim, Log: logger, Tracer: c.Tracer}
	lambda.Start(flushing{h, c.Flush})
	return nil
}

// flushing is the handler (httpapi.Handler.Invoke, which reads the event
// itself) with the traces flushed after each answer: Lambda freezes the
// process once it has answered.
type flushing struct {
	handler *httpapi.Handler
	flush   func(context.Context)
}

func (f flushing) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	defer f.flush(ctx)
	return f.handler.Invoke(ctx, payload)
}

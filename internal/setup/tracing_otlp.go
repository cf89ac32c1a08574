//go:build tracing

package setup

import (
	"context"
	"fmt"
	"strings"

	"go.opentelemetry.io/contrib/propagators/aws/xray"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/idempotent-payments/idempay/internal/deploy"
)

// TracingBuilt reports whether this binary carries the OTLP exporter.
const TracingBuilt = true

// Tracing exports spans over OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT (the
// ADOT collector layer in AWS), with X-Ray-compatible trace ids. Without the
// variable it returns no tracer. Call flush at the end of every invocation:
// Lambda freezes the process between them.
func Tracing(ctx context.Context, service string, getenv func(string) string) (trace.Tracer, func(context.Context), error) {
	endpoint := getenv(deploy.EnvOTLPEndpoint)
	if endpoint == "" {
		return nil, func(context.Context) {}, nil
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(strings.TrimSuffix(endpoint, "/")+"/v1/traces"))
	if err != nil {
		return nil, nil, fmt.Errorf("OTLP exporter: %w", err)
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithIDGenerator(xray.NewIDGenerator()),
		sdktrace.WithResource(resource.NewSchemaless(semconv.ServiceName(service))),
	)
	return tp.Tracer("idempay/" + service), func(ctx context.Context) { _ = tp.ForceFlush(ctx) }, nil
}

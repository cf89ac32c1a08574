//go:build !tracing

package setup

import (
	"context"

	"go.opentelemetry.io/otel/trace"
)

// TracingBuilt reports whether this binary carries the OTLP exporter
// (`-tags tracing`, `make build TRACING=1`).
const TracingBuilt = false

// Tracing returns no tracer in this build: traces are off, as they are by
// default locally. Build with `-tags tracing` to export spans over OTLP.
func Tracing(context.Context, string, func(string) string) (trace.Tracer, func(context.Context), error) {
	return nil, func(context.Context) {}, nil
}

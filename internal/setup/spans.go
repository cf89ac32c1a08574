package setup

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/idempotent-payments/idempay/internal/op"
)

// Spans is t as the operations' tracer (op.Tracer): a span per step, of
// the client kind for an acquirer call, with the lease's attempt as
// idem.attempt when the step names one. Nil t makes none.
func Spans(t trace.Tracer) op.Tracer {
	if t == nil {
		return op.NoTracer
	}
	return spans{t}
}

type spans struct{ t trace.Tracer }

func (s spans) Start(ctx context.Context, step op.Step) (context.Context, func(error)) {
	var opts []trace.SpanStartOption
	if step.Client {
		opts = append(opts, trace.WithSpanKind(trace.SpanKindClient))
	}
	if step.Attempt > 0 {
		opts = append(opts, trace.WithAttributes(attribute.Int("idem.attempt", step.Attempt)))
	}
	ctx, span := s.t.Start(ctx, step.Name, opts...)
	return ctx, func(err error) {
		if err != nil {
			span.SetStatus(codes.Error, "failed")
		}
		span.End()
	}
}

package op

import "context"

// Tracer makes the spans of an operation's steps. Its implementation
// (OpenTelemetry's, setup.Spans) is injected, as the store is: op and the
// operations import no tracing library. NoTracer makes none.
type Tracer interface {
	// Start starts step's span; end ends it, marked failed when err is
	// not nil (the cause stays in the logs: it may name a record).
	Start(ctx context.Context, step Step) (spanCtx context.Context, end func(err error))
}

// Step names one span: the step, whether it is a call to the acquirer
// (Client), and the lease's attempt when it matters (0 for none).
type Step struct {
	Name    string
	Client  bool
	Attempt int
}

// NoTracer makes no span.
var NoTracer Tracer = noTracer{}

type noTracer struct{}

func (noTracer) Start(ctx context.Context, _ Step) (context.Context, func(error)) {
	return ctx, func(error) {}
}

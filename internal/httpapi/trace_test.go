package httpapi

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/idem/idemtest"
	"github.com/idempotent-payments/idempay/internal/sandbox"
	"github.com/idempotent-payments/idempay/internal/setup"
)

// TestSpansContinueTheGatewayTrace: the request span continues the trace in
// the incoming headers (W3C traceparent or X-Ray's X-Amzn-Trace-Id), and the
// claim, the acquirer call and the completion are its children.
func TestSpansContinueTheGatewayTrace(t *testing.T) {
	t.Parallel()
	for name, hdr := range map[string][2]string{
		"traceparent": {"traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
		"x-ray":       {"x-amzn-trace-id", "Root=1-4bf92f35-77b34da6a3ce929d0e0e4736;Parent=00f067aa0ba902b7;Sampled=1"},
	} {
		rec := tracetest.NewSpanRecorder()
		tracer := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("test")
		store := idemtest.NewMemoryStore()
		guard := idem.NewGuard(store, idem.Config{})
		h := handlerOn(guard, sandbox.New(""), charge.Config{Tracer: setup.Spans(tracer)})
		h.Tracer = tracer
		ev := loadEvent(t, "create-charge.json")
		ev.Headers[hdr[0]] = hdr[1]
		if resp, _ := h.Handle(context.Background(), ev); resp.StatusCode != 201 {
			t.Fatalf("%s: %d", name, resp.StatusCode)
		}
		spans := map[string]sdktrace.ReadOnlySpan{}
		for _, s := range rec.Ended() {
			spans[s.Name()] = s
		}
		root, ok := spans["POST /v1/charges"]
		if !ok || root.SpanKind() != trace.SpanKindServer {
			t.Fatalf("%s: spans %v", name, spans)
		}
		if got := root.SpanContext().TraceID().String(); got != "4bf92f3577b34da6a3ce929d0e0e4736" || root.Parent().SpanID().String() != "00f067aa0ba902b7" {
			t.Fatalf("%s: request span trace %s parent %s: the gateway's trace was not continued", name, got, root.Parent().SpanID())
		}
		for _, child := range []string{"idem.claim", "acquirer.authorize", "ledger.write", "idem.complete"} {
			s, ok := spans[child]
			if !ok || s.Parent().SpanID() != root.SpanContext().SpanID() {
				t.Fatalf("%s: %s missing or not a child of the request span", name, child)
			}
		}
	}
}

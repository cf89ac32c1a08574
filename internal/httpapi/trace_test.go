package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/idem/idemtest"
	"github.com/idempotent-payments/idempay/internal/obs"
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

// TestRequestLineCarriesTheTraceID: the request line (and every line of
// the request) names the invocation's X-Ray trace, as aws-lambda-go
// hands it over in the context, and leaves out what is zero: a first
// execution's line holds its operation, record, outcome, status,
// acquirer and total times, ids, and nothing else, in at most 300 bytes.
func TestRequestLineCarriesTheTraceID(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	h := handlerOn(idem.NewGuard(idemtest.NewMemoryStore(), idem.Config{}), sandbox.New(""), charge.Config{})
	h.Log = obs.NewLogger(&logs, "INFO")
	//lint:ignore SA1029 the key is aws-lambda-go's own, a plain string
	ctx := context.WithValue(context.Background(), lambdaTraceKey,
		"Root=1-4bf92f35-77b34da6a3ce929d0e0e4736;Parent=00f067aa0ba902b7;Sampled=1;Lineage=a87bd80c:1")
	if resp, _ := h.Handle(ctx, loadEvent(t, "create-charge.json")); resp.StatusCode != 201 {
		t.Fatalf("%d %s", resp.StatusCode, resp.Body)
	}
	var line map[string]any
	if err := json.Unmarshal(logs.Bytes(), &line); err != nil {
		t.Fatalf("%v: %s", err, logs.String())
	}
	if line["traceId"] != "1-4bf92f35-77b34da6a3ce929d0e0e4736" {
		t.Errorf("traceId %v, want the header's Root", line["traceId"])
	}
	want := []string{"timestamp", "level", "message", "operation", "record", "outcome", "status", "acquirer_ms", "total_ms", "requestId", "traceId"}
	if got := slices.Sorted(maps.Keys(line)); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Errorf("a first execution's request line holds %v, want %v", got, want)
	}
	// The bound: at most 300 bytes a charge. Its times here are a
	// few microseconds; at 9999.999 ms each the line is longest.
	longest := logs.Len() - len(fmt.Sprint(line["acquirer_ms"])) - len(fmt.Sprint(line["total_ms"])) + 2*len("9999.999")
	if longest > 300 {
		t.Errorf("the request line is %d bytes, %d with the longest times: over 300\n%s", logs.Len(), longest, logs.String())
	}
	t.Logf("request line: %d bytes, %d with the longest times", logs.Len(), longest)
}

// FuzzTraceID: whatever trace header an invocation carries (a client
// may start the trace), traceID never panics, and names either no trace
// or one as X-Ray writes it.
func FuzzTraceID(f *testing.F) {
	f.Add("Root=1-4bf92f35-77b34da6a3ce929d0e0e4736;Parent=00f067aa0ba902b7;Sampled=1")
	f.Add("Root=1-4bf92f35-77b34da6a3ce929d0e0e4736")
	f.Add("Root=;Parent=;")
	f.Add("")
	written := regexp.MustCompile(`^1-[0-9a-f]{8}-[0-9a-f]{24}$`)
	f.Fuzz(func(t *testing.T, header string) {
		if id := traceID(header); id != "" && !written.MatchString(id) {
			t.Fatalf("traceID(%q) = %q", header, id)
		}
	})
}

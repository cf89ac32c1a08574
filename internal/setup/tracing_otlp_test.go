//go:build tracing

package setup

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/idempotent-payments/idempay/internal/acquirer/acquirerhttp"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/charge/chargetest"
	"github.com/idempotent-payments/idempay/internal/httpapi"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/idem/idemtest"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/sandbox"
)

// TestOTLPExport runs the tracing build's exporter against an OTLP/HTTP
// receiver that decodes what arrives (the protobuf the ADOT collector
// reads): one charge's claim, authorize and complete spans reach it, each
// with the invocation's span as parent and one trace id.
func TestOTLPExport(t *testing.T) {
	var mu sync.Mutex
	spans := map[string]*struct{ parent, trace []byte }{} // by name
	var roots [][]byte
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req collectortrace.ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" || proto.Unmarshal(body, &req) != nil {
			http.Error(w, "not OTLP/HTTP protobuf", http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					spans[s.Name] = &struct{ parent, trace []byte }{s.ParentSpanId, s.TraceId}
					if s.Name == "invocation" {
						roots = append(roots, s.SpanId)
					}
				}
			}
		}
		out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	defer receiver.Close()

	ctx := context.Background()
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.URL}
	tracer, flush, err := Tracing(ctx, "charge", func(k string) string { return env[k] })
	if err != nil || tracer == nil {
		t.Fatalf("Tracing: %v, %v", tracer, err)
	}
	sb := sandbox.New("")
	acqSrv := httptest.NewServer(sb)
	defer acqSrv.Close()
	acq, _ := acquirerhttp.NewClient(acqSrv.URL, "", nil)
	store := idemtest.NewMemoryStore()
	svc := chargetest.Service(idem.NewGuard(store, idem.Config{}), acq, httpapi.Render, charge.Config{Tracer: Spans(tracer)})
	invocation, root := tracer.Start(ctx, "invocation")
	res := svc.Charge(invocation, charge.Input{Account: "acct_1", Keys: []string{"traced-key-1"},
		Body: []byte(`{"amount": 100, "currency": "BRL", "order_id": "1", "payment_method": "pm_card_visa"}`)})
	root.End()
	if res.Outcome != op.Executed {
		t.Fatalf("charge: %s", res.Outcome)
	}
	flushCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	flush(flushCtx)

	mu.Lock()
	defer mu.Unlock()
	if len(roots) != 1 {
		t.Fatalf("spans received: %v", spans)
	}
	for _, name := range []string{"idem.claim", "acquirer.authorize", "idem.complete"} {
		s := spans[name]
		switch {
		case s == nil:
			t.Errorf("%s never reached the receiver", name)
		case !bytes.Equal(s.parent, roots[0]):
			t.Errorf("%s: parent %x, want the invocation's %x", name, s.parent, roots[0])
		case !bytes.Equal(s.trace, spans["invocation"].trace):
			t.Errorf("%s: another trace", name)
		}
	}
}

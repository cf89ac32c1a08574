package main

import (
	"context"
	"encoding/base64"
	"log/slog"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"go.opentelemetry.io/contrib/propagators/aws/xray"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/obs"
	"github.com/idempotent-payments/idempay/internal/problem"
)

// Routes of the HTTP API, as API Gateway names them in RouteKey.
const (
	routeCreate = "POST /v1/charges"
	routeGet    = "GET /v1/charges/{id}"
)

// Handler turns API Gateway HTTP API (payload v2) events into charge service
// calls and renders the results. It holds no state of its own.
type Handler struct {
	Service *charge.Service
	// AccountClaim names the JWT claim that identifies the account ("sub").
	AccountClaim string
	// Log gets one line per request and Metrics one EMF line; nil skips them.
	Log     *slog.Logger
	Metrics *obs.Metrics
	// Tracer makes the request span, continuing the trace API Gateway
	// started (X-Amzn-Trace-Id or traceparent); nil makes none.
	Tracer trace.Tracer
}

// propagator reads both trace headers API Gateway may pass on.
var propagator = propagation.NewCompositeTextMapPropagator(xray.Propagator{}, propagation.TraceContext{})

// headerCarrier reads the event's headers whatever their case.
type headerCarrier map[string]string

func (c headerCarrier) Get(key string) string {
	return header(events.APIGatewayV2HTTPRequest{Headers: c}, key)
}
func (c headerCarrier) Set(string, string) {}
func (c headerCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// Handle serves one event. It never returns an error: every failure is an
// HTTP answer, so API Gateway never turns one into a bare 500.
func (h *Handler) Handle(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	start := time.Now()
	var span trace.Span
	if h.Tracer != nil {
		ctx, span = h.Tracer.Start(propagator.Extract(ctx, headerCarrier(ev.Headers)), ev.RouteKey, trace.WithSpanKind(trace.SpanKindServer))
		defer span.End()
	}
	res := h.serve(ctx, ev, h.account(ev))
	if span != nil {
		span.SetAttributes(attribute.String("idem.outcome", res.Outcome), attribute.Int("http.response.status_code", res.StatusCode))
	}
	h.observe(ctx, ev, res, time.Since(start))
	return render(res), nil
}

func (h *Handler) serve(ctx context.Context, ev events.APIGatewayV2HTTPRequest, account string) charge.Result {
	if account == "" {
		return charge.Problem(problem.Details{Code: problem.Unauthenticated, Detail: "a bearer token naming the account is required"})
	}
	switch key, id := route(ev); key {
	case routeCreate:
		body, ok := decodeBody(ev)
		if !ok {
			return charge.Problem(problem.Details{Code: problem.ValidationFailed, Detail: "body: not valid base64"})
		}
		return h.Service.Charge(ctx, account, header(ev, "Idempotency-Key"), body)
	case routeGet:
		return h.Service.Get(ctx, account, id)
	}
	return charge.Problem(problem.Details{Code: problem.NotFound, Detail: "no such route"})
}

// observe writes the request's log line and metrics. The record is named by
// its reference (a hash of operation, account and key), never by the raw
// account, key, token or payment method.
func (h *Handler) observe(ctx context.Context, ev events.APIGatewayV2HTTPRequest, res charge.Result, took time.Duration) {
	if h.Log != nil {
		h.Log.InfoContext(ctx, "request", "requestId", ev.RequestContext.RequestID, "route", ev.RouteKey,
			"operation", charge.Operation, "record", res.Record, "outcome", res.Outcome, "status", res.StatusCode,
			"attempt", res.Attempt, "acquirer_ms", ms(res.AcquirerLatency), "acquirer_errors", res.AcquirerErrors, "total_ms", ms(took))
	}
	if h.Metrics != nil {
		values := map[string]float64{"LatencyMs": ms(took)}
		if res.AcquirerLatency > 0 {
			values["AcquirerLatencyMs"] = ms(res.AcquirerLatency)
			values["AcquirerErrors"] = float64(res.AcquirerErrors)
		}
		h.Metrics.Record(res.Outcome, values)
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// account is the configured claim of the JWT the authorizer verified.
func (h *Handler) account(ev events.APIGatewayV2HTTPRequest) string {
	auth := ev.RequestContext.Authorizer
	if auth == nil || auth.JWT == nil {
		return ""
	}
	return auth.JWT.Claims[h.AccountClaim]
}

// route returns the event's route key and charge id; for a $default route
// both are derived from the method and path.
func route(ev events.APIGatewayV2HTTPRequest) (key, id string) {
	if ev.RouteKey == routeCreate || ev.RouteKey == routeGet {
		return ev.RouteKey, ev.PathParameters["id"]
	}
	method, path := ev.RequestContext.HTTP.Method, strings.TrimSuffix(ev.RawPath, "/")
	switch rest, isCharge := strings.CutPrefix(path, "/v1/charges/"); {
	case method == "POST" && path == "/v1/charges":
		return routeCreate, ""
	case method == "GET" && isCharge && rest != "" && !strings.Contains(rest, "/"):
		return routeGet, rest
	}
	return "", ""
}

// header looks a header up case-insensitively (API Gateway lowercases names).
func header(ev events.APIGatewayV2HTTPRequest, name string) string {
	if v, ok := ev.Headers[strings.ToLower(name)]; ok {
		return v
	}
	for k, v := range ev.Headers {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

func decodeBody(ev events.APIGatewayV2HTTPRequest) ([]byte, bool) {
	if !ev.IsBase64Encoded {
		return []byte(ev.Body), true
	}
	b, err := base64.StdEncoding.DecodeString(ev.Body)
	return b, err == nil
}

func render(r charge.Result) events.APIGatewayV2HTTPResponse {
	headers := make(map[string]string, len(r.Headers)+1)
	for k, v := range r.Headers {
		headers[k] = v
	}
	if r.Replay {
		headers["Idempotent-Replay"] = "true"
	}
	return events.APIGatewayV2HTTPResponse{StatusCode: r.StatusCode, Headers: headers, Body: string(r.Body)}
}

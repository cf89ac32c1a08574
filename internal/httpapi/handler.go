package httpapi

import (
	"context"
	"encoding/base64"
	"errors"
	"log/slog"
	"mime"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"go.opentelemetry.io/contrib/propagators/aws/xray"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/idempotent-payments/idempay/internal/capture"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/event"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/obs"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/refund"
	"github.com/idempotent-payments/idempay/internal/route"
)

// Handler turns API Gateway HTTP API (payload v2) events into calls of the
// charge, the refund and the capture services' doors and renders their
// outcomes. It holds no state.
type Handler struct {
	Service *charge.Service
	// Refunds serves the refund routes.
	Refunds *refund.Service
	// Captures serves the capture and void routes, and the balance the
	// charges' GETs read their figures from.
	Captures *capture.Service
	// AccountClaim names the JWT claim that identifies the account ("sub").
	AccountClaim string
	// Log gets one line per request (requestLine), from which CloudWatch
	// Logs makes the function's metrics (obs.LineMetrics); nil skips it.
	Log *slog.Logger
	// Tracer makes the request span, continuing the trace API Gateway
	// started (X-Amzn-Trace-Id or traceparent); nil makes none.
	Tracer trace.Tracer
}

// propagator reads both trace headers API Gateway may pass on.
var propagator = propagation.NewCompositeTextMapPropagator(xray.Propagator{}, propagation.TraceContext{})

// headerCarrier reads the event's headers whatever their case.
type headerCarrier map[string]string

func (c headerCarrier) Get(key string) string {
	if vs := headerValues(c, key); len(vs) == 1 {
		return vs[0]
	}
	return ""
}
func (c headerCarrier) Set(string, string) {}
func (c headerCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// reply is one HTTP answer, the outcome that produced it, and what its
// log line reports.
type reply struct {
	idem.Response
	replay  bool
	outcome obs.Outcome
	trail   trail
}

// trail is what a request's log line and metrics report beyond its
// outcome: the operation and record it reached, the lease's attempt, and
// its acquirer calls (charge.Result's).
type trail struct {
	operation, record string
	attempt           int
	acquirerLatency   time.Duration
	acquirerErrors    int
	acquirerNotSent   int
	acquirerUnknown   int
}

func chargeTrail(res charge.Result) trail {
	return trail{operation: charge.Operation, record: res.Record, attempt: res.Attempt, acquirerLatency: res.AcquirerLatency,
		acquirerErrors: res.AcquirerErrors, acquirerNotSent: res.AcquirerNotSent, acquirerUnknown: res.AcquirerUnknown}
}

// request is what the handler reads of an API Gateway event, all of it
// read once, at the top of Handle.
type request struct {
	requestID string
	// routeKey is the event's; route is one of the API's routes (route.All)
	// as API Gateway matched it, or "" for any other key (the stack deploys
	// no $default route), and id the route's {id}: a charge's or a
	// refund's.
	routeKey, route, id string
	// account is the configured claim of the JWT the authorizer verified.
	account string
	// keys, contentTypes and contentEncodings are every value of their
	// header, whatever the name's case: API Gateway lowercases names and
	// joins a repeated header's values with commas.
	keys, contentTypes, contentEncodings []string
	rawQuery                             string
	// body is the decoded body; bodyOK is false when it was flagged base64
	// and is not.
	body   []byte
	bodyOK bool
	// headers are the event's, for the trace propagator.
	headers headerCarrier
}

// parse reads ev into a request.
func (h *Handler) parse(ev events.APIGatewayV2HTTPRequest) request {
	r := request{requestID: ev.RequestContext.RequestID, routeKey: ev.RouteKey, rawQuery: ev.RawQueryString, headers: headerCarrier(ev.Headers)}
	for name, value := range ev.Headers { // one pass; a name in two spellings gives two values
		switch {
		case strings.EqualFold(name, "Idempotency-Key"):
			r.keys = append(r.keys, value)
		case strings.EqualFold(name, "Content-Type"):
			r.contentTypes = append(r.contentTypes, value)
		case strings.EqualFold(name, "Content-Encoding"):
			r.contentEncodings = append(r.contentEncodings, value)
		}
	}
	if slices.Contains(route.All, ev.RouteKey) || slices.Contains(route.Public, ev.RouteKey) {
		r.route, r.id = ev.RouteKey, ev.PathParameters["id"]
	}
	if auth := ev.RequestContext.Authorizer; auth != nil && auth.JWT != nil {
		r.account = auth.JWT.Claims[h.AccountClaim]
	}
	r.body, r.bodyOK = []byte(ev.Body), true
	if ev.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(ev.Body)
		r.body, r.bodyOK = b, err == nil
	}
	return r
}

// Handle serves one event. It never returns an error: every failure is an
// HTTP answer, so API Gateway never turns one into a bare 500.
func (h *Handler) Handle(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	start := time.Now()
	req := h.parse(ev)
	ctx = obs.WithAttrs(ctx, requestAttrs(ctx, req.requestID)...)
	var span trace.Span
	if h.Tracer != nil {
		ctx, span = h.Tracer.Start(propagator.Extract(ctx, req.headers), req.routeKey, trace.WithSpanKind(trace.SpanKindServer))
		defer span.End()
	}
	a := h.serve(ctx, req)
	if span != nil {
		span.SetAttributes(attribute.String("idem.outcome", string(a.outcome)), attribute.Int("http.response.status_code", a.StatusCode))
	}
	h.observe(ctx, req, a, time.Since(start))
	return render(a), nil
}

func (h *Handler) serve(ctx context.Context, req request) reply {
	switch req.route {
	case route.Create:
		if a, ok := h.refuseBody(req); !ok {
			return a
		}
		return respond(h.Service.Charge(ctx, charge.Input{
			Account: req.account, Keys: req.keys, Body: req.body, Source: event.SourceHTTP,
		}))
	case route.Get:
		return h.found(ctx, h.Service.Get(ctx, req.account, req.id))
	case route.Lookup:
		key, a, ok := lookupKey(req)
		if !ok {
			return a
		}
		return h.found(ctx, h.Service.ByKey(ctx, req.account, key))
	case route.Refund:
		if a, ok := h.refuseBody(req); !ok {
			return a
		}
		return respondRefund(h.Refunds.Refund(ctx, refund.Input{
			Account: req.account, Keys: req.keys, ChargeID: req.id, Body: req.body, Source: event.SourceHTTP,
		}), "")
	case route.GetRefund:
		return respondRefund(h.Refunds.Get(ctx, req.account, req.id), noSuchRefund)
	case route.LookupRefund:
		key, a, ok := lookupKey(req)
		if !ok {
			return a
		}
		return respondRefund(h.Refunds.ByKey(ctx, req.account, key), noSuchRefund)
	case route.Capture, route.Void:
		if a, ok := h.refuseBody(req); !ok {
			return a
		}
		in := capture.Input{Account: req.account, Keys: req.keys, ChargeID: req.id, Body: req.body, Source: event.SourceHTTP}
		if req.route == route.Void {
			return respondCapture(h.Captures.Void(ctx, in), voidSpeech, "")
		}
		return respondCapture(h.Captures.Capture(ctx, in), captureSpeech, "")
	case route.GetCapture:
		return respondCapture(h.Captures.GetCapture(ctx, req.account, req.id), captureSpeech, noSuchCapture)
	case route.GetVoid:
		return respondCapture(h.Captures.GetVoid(ctx, req.account, req.id), voidSpeech, noSuchVoid)
	case route.LookupCapture, route.LookupVoid:
		key, a, ok := lookupKey(req)
		if !ok {
			return a
		}
		if req.route == route.LookupVoid {
			return respondCapture(h.Captures.VoidByKey(ctx, req.account, key), voidSpeech, noSuchVoid)
		}
		return respondCapture(h.Captures.CaptureByKey(ctx, req.account, key), captureSpeech, noSuchCapture)
	case route.Health:
		err := h.Service.Healthy(ctx)
		if err != nil && h.Log != nil {
			h.Log.WarnContext(ctx, "health check: the table did not answer", "error", err)
		}
		return health(err)
	}
	return refusal(obs.OutcomeNoRoute, op.CodeNotFound, "no such route")
}

// refuseBody is the door's check of a body that moves money: JSON, and
// readable; ok false with the refusal otherwise.
func (h *Handler) refuseBody(req request) (reply, bool) {
	if !jsonBody(req) {
		return refusal(obs.OutcomeUnsupportedMediaType, op.CodeUnsupportedMediaType, detailUnsupportedMediaType), false
	}
	if !req.bodyOK {
		return refusal(obs.OutcomeRequestInvalid, op.CodeValidationFailed, "body: not valid base64"), false
	}
	return reply{}, true
}

// lookupKey is a lookup's key from the query (LookupKey); ok false with the
// refusal otherwise.
func lookupKey(req request) (string, reply, bool) {
	key, err := LookupKey(req.rawQuery)
	switch {
	case errors.Is(err, ErrNoKeyParameter):
		return "", refusal(obs.OutcomeKeyMissing, op.CodeIdempotencyKeyMissing, "send the key as the query parameter "+route.LookupParameter+", percent-encoded"), false
	case err != nil:
		return "", refusal(obs.OutcomeRequestInvalid, op.CodeValidationFailed, err.Error()), false
	}
	return key, reply{}, true
}

// found renders a charge's GET: the charge with its figures (one more
// read, of its balance: what its captures took, what remains capturable,
// how it closed and what its refunds returned), or the problem.
func (h *Handler) found(ctx context.Context, res charge.Result) reply {
	if res.Outcome != op.Found {
		return respond(res)
	}
	b, err := h.Captures.Balance(ctx, res.Charge.ID)
	if err != nil {
		if h.Log != nil {
			h.Log.ErrorContext(ctx, "the charge's balance failed to read", "error", err)
		}
		return respond(charge.Result{Outcome: op.Unavailable, RetryAfter: h.Captures.RetryAfter(), Record: res.Record})
	}
	a := respond(res)
	a.Body = FoundBody(res.Charge, h.Service.Figures(res.Charge, b))
	return a
}

// health is the health check's answer: 200 when the table answered its
// strongly consistent read, 503 when not, and no body or header that says
// more (an unauthenticated caller learns only that).
func health(err error) reply {
	if err != nil {
		return reply{Response: idem.Response{StatusCode: http.StatusServiceUnavailable}, outcome: obs.OutcomeUnhealthy}
	}
	return reply{Response: idem.Response{StatusCode: http.StatusOK}, outcome: obs.OutcomeHealthy}
}

// respond renders a result of the charge service: its stored answer, the
// charge it found, or the problem that answers its outcome (problems).
func respond(res charge.Result) reply {
	a := reply{outcome: res.Outcome.Name(), trail: chargeTrail(res)}
	switch res.Outcome {
	case op.Executed, op.Replayed:
		a.Response, a.replay = res.Response, res.Outcome == op.Replayed
		a.Headers = Headers(res.Response, res.ChargeID)
	case op.Found:
		a.Response = idem.Response{StatusCode: 200, Headers: map[string]string{"Content-Type": "application/json"}, Body: Body(res.Charge)}
	default:
		a.Response = outcomeProblem(res).response()
	}
	return a
}

// noSuchRefund is the detail of a refund's lookups' 404: what is not found
// is a refund (the row's detail names a charge, as a refund's POST means).
const noSuchRefund = "no such refund"

// respondRefund renders a result of the refund service as respond does a
// charge's; notFound, when set, is the detail of a 404.
func respondRefund(res refund.Result, notFound string) reply {
	return respondAction(res, refundSpeech, notFound, RefundHeaders, RefundBody)
}

// The details of the capture's and the void's lookups' 404.
const (
	noSuchCapture = "no such capture"
	noSuchVoid    = "no such void"
)

// speech is how an action on a charge answers: its operation's name, its
// codes and its words.
type speech struct {
	operation string
	codes     op.Codes
	words     words
}

var (
	refundSpeech  = speech{refund.Operation, refund.Codes, refundWords}
	captureSpeech = speech{capture.OperationCapture, capture.CaptureCodes, words{"capture", "captured"}}
	voidSpeech    = speech{capture.OperationVoid, capture.VoidCodes, words{"void", "released"}}
)

// respondCapture renders a result of the capture service as respondRefund
// does a refund's, in the words of sp's operation.
func respondCapture(res capture.Result, sp speech, notFound string) reply {
	return respondAction(res, sp, notFound, CaptureHeaders, CaptureBody)
}

// respondAction renders a result of an action on a charge, in the words
// of sp's operation: its stored answer with headers, the row it found as
// body renders it, or the problem that answers its outcome; notFound,
// when set, is the detail of a 404.
func respondAction[R any](res op.ActionResult[R], sp speech, notFound string, headers func(idem.Response, string) map[string]string, body func(R) []byte) reply {
	a := reply{outcome: res.Outcome.Name(), trail: trail{operation: sp.operation, record: res.Record, attempt: res.Attempt}}
	switch res.Outcome {
	case op.Executed, op.Replayed:
		a.Response, a.replay = res.Response, res.Outcome == op.Replayed
		a.Headers = headers(res.Response, res.ID)
	case op.Found:
		a.Response = idem.Response{StatusCode: 200, Headers: map[string]string{"Content-Type": "application/json"}, Body: body(res.Row)}
	default:
		p := resultProblem(res.Outcome, sp.codes, sp.words, res.RetryAfter, res.Errors, res.Reason)
		if res.Outcome == op.NotFound && notFound != "" {
			p.detail = notFound
		}
		a.Response = p.response()
	}
	return a
}

// refusal is an answer of the handler's own, before the service is asked:
// code's problem with detail, logged as outcome.
func refusal(outcome obs.Outcome, code op.Code, detail string) reply {
	return reply{Response: problem{code: code, detail: detail}.response(), outcome: outcome}
}

// jsonBody reports whether the headers announce a body the service reads:
// exactly one Content-Type, application/json (parameters allowed, charset
// utf-8 if given), and no Content-Encoding but identity.
func jsonBody(req request) bool {
	if len(req.contentTypes) != 1 {
		return false
	}
	mediaType, params, err := mime.ParseMediaType(req.contentTypes[0])
	if err != nil || mediaType != "application/json" {
		return false
	}
	if charset, given := params["charset"]; given && !strings.EqualFold(charset, "utf-8") {
		return false
	}
	switch encodings := req.contentEncodings; {
	case len(encodings) > 1:
		return false
	case len(encodings) == 1 && !strings.EqualFold(strings.TrimSpace(encodings[0]), "identity"):
		return false
	}
	return true
}

// lambdaTraceKey is the context key under which aws-lambda-go keeps the
// invocation's X-Ray trace header (Lambda's Lambda-Runtime-Trace-Id).
const lambdaTraceKey = "x-amzn-trace-id"

// requestAttrs are what every log line of the request carries: its
// request id, and its X-Ray trace id when the invocation has one
// (traceID), so that a line leads to the request's trace.
func requestAttrs(ctx context.Context, requestID string) []slog.Attr {
	attrs := []slog.Attr{slog.String("requestId", requestID)}
	if header, _ := ctx.Value(lambdaTraceKey).(string); header != "" {
		if id := traceID(header); id != "" {
			attrs = append(attrs, slog.String("traceId", id))
		}
	}
	return attrs
}

// traceID is the trace id of an X-Ray trace header, as X-Ray writes it
// (1-xxxxxxxx-xxxxxxxxxxxxxxxxxxxxxxxx), read by the X-Ray propagator;
// "" when the header names no valid trace and parent.
func traceID(header string) string {
	carrier := propagation.MapCarrier{"X-Amzn-Trace-Id": header}
	sc := trace.SpanContextFromContext(xray.Propagator{}.Extract(context.Background(), carrier))
	if !sc.IsValid() {
		return ""
	}
	hex := sc.TraceID().String()
	return "1-" + hex[:8] + "-" + hex[8:]
}

// observe writes the request's log line (requestLine), the one line a
// request writes at INFO and the source of the function's metrics
// (obs.LineMetrics). The record is named by its reference (a hash of
// operation, account and key), never by the raw account, key, token or
// payment method; the request and trace ids come with ctx.
func (h *Handler) observe(ctx context.Context, req request, a reply, took time.Duration) {
	if h.Log != nil {
		h.Log.LogAttrs(ctx, slog.LevelInfo, obs.MessageRequest, requestLine(a.trail, a, took)...)
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// headerValues returns every value of the header name: API Gateway
// lowercases names and joins a repeated header's values with commas, and an
// event that holds the name in two spellings holds two values.
func headerValues(headers map[string]string, name string) []string {
	var values []string
	for k, v := range headers {
		if strings.EqualFold(k, name) {
			values = append(values, v)
		}
	}
	return values
}

func render(a reply) events.APIGatewayV2HTTPResponse {
	headers := make(map[string]string, len(a.Headers)+1)
	for k, v := range a.Headers {
		headers[k] = v
	}
	if a.replay {
		headers["Idempotent-Replay"] = "true"
	}
	return events.APIGatewayV2HTTPResponse{StatusCode: a.StatusCode, Headers: headers, Body: string(a.Body)}
}

package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/idempotent-payments/idempay/internal/acquirer/acquirerhttp"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/idem/idemtest"
	"github.com/idempotent-payments/idempay/internal/refund"
	"github.com/idempotent-payments/idempay/internal/refund/refundtest"
	"github.com/idempotent-payments/idempay/internal/route"
	"github.com/idempotent-payments/idempay/internal/sandbox"
)

// contract is api/openapi.yaml, loaded and validated by kin-openapi, with
// its router.
type contract struct {
	doc    *openapi3.T
	router routers.Router
}

func readSpec(t *testing.T) []byte {
	t.Helper()
	raw, err := os.ReadFile("../../api/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// loadContract loads an OpenAPI document. Its servers are dropped so the
// router matches paths only: the handler is tested without a host.
func loadContract(t *testing.T, raw []byte) *contract {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(raw)
	if err != nil {
		t.Fatalf("openapi.yaml: %v", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		t.Fatalf("openapi.yaml is not a valid document: %v", err)
	}
	doc.Servers = nil
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	return &contract{doc: doc, router: router}
}

// refusedAtTheDoor are the statuses of requests the handler refuses as
// malformed: the document must refuse each of those requests too, and
// accept every other.
var refusedAtTheDoor = map[int]bool{400: true, 415: true}

// exchange validates one request, as API Gateway gave it to the handler,
// and the handler's answer against the document: the request is valid
// exactly when the handler did not refuse it as malformed; the answer's
// status, headers (required ones present, no undocumented one) and body
// are documented.
func (c *contract) exchange(ev events.APIGatewayV2HTTPRequest, resp events.APIGatewayV2HTTPResponse) error {
	ctx := context.Background()
	req, err := http.NewRequestWithContext(ctx, ev.RequestContext.HTTP.Method, ev.RawPath, strings.NewReader(ev.Body))
	if err != nil {
		return err
	}
	req.URL.RawQuery = ev.RawQueryString
	for name, value := range ev.Headers {
		req.Header.Set(name, value)
	}
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, err)
	}
	opts := &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, IncludeResponseStatus: true}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: opts}
	reqErr := openapi3filter.ValidateRequest(ctx, in)
	switch refused := refusedAtTheDoor[resp.StatusCode]; {
	case refused && reqErr == nil:
		return fmt.Errorf("the handler refused with %d a request the document accepts: %s", resp.StatusCode, resp.Body)
	case !refused && reqErr != nil:
		return fmt.Errorf("the handler answered %d to a request the document refuses: %w", resp.StatusCode, reqErr)
	}
	header := http.Header{}
	for name, value := range resp.Headers {
		header.Set(name, value)
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: resp.StatusCode, Header: header, Options: opts}
	if err := openapi3filter.ValidateResponse(ctx, out.SetBodyBytes([]byte(resp.Body))); err != nil {
		return fmt.Errorf("%s %s answered %d %s: %w", req.Method, req.URL.Path, resp.StatusCode, resp.Body, err)
	}
	documented := route.Operation.Responses.Status(resp.StatusCode).Value.Headers
	for name := range header {
		if _, ok := documented[name]; !ok && name != "Content-Type" {
			return fmt.Errorf("%s %s %d: header %s is not documented", req.Method, req.URL.Path, resp.StatusCode, name)
		}
	}
	return nil
}

// TestOpenAPIMatchesHandler drives the handler into every answer it can
// give and checks each against api/openapi.yaml.
func TestOpenAPIMatchesHandler(t *testing.T) {
	t.Parallel()
	c := loadContract(t, readSpec(t))
	ctx := context.Background()
	check := func(ev events.APIGatewayV2HTTPRequest, resp events.APIGatewayV2HTTPResponse) {
		t.Helper()
		if err := c.exchange(ev, resp); err != nil {
			t.Fatal(err)
		}
	}
	sb := sandbox.New("")
	acq, _ := acquirerhttp.NewClient("http://sandbox.invalid", "", sandbox.InProcess(sb))
	store := idemtest.NewMemoryStore()
	guard := idem.NewGuard(store, idem.Config{})
	h := handlerOn(guard, acq, charge.Config{})
	refused, _ := acquirerhttp.NewClient("http://127.0.0.1:1", "", nil)
	hRefused := handlerOn(guard, refused, charge.Config{})

	post := func(h *Handler, key, body string) events.APIGatewayV2HTTPResponse {
		ev := loadEvent(t, "create-charge.json")
		ev.Headers["idempotency-key"], ev.Body = key, body
		if key == "" {
			delete(ev.Headers, "idempotency-key")
		}
		resp, _ := h.Handle(ctx, ev)
		check(ev, resp)
		return resp
	}
	get := func(id, account string) events.APIGatewayV2HTTPResponse {
		ev := loadEvent(t, "create-charge.json")
		ev.RouteKey, ev.Body, ev.PathParameters = route.Get, "", map[string]string{"id": id}
		ev.RawPath, ev.RequestContext.HTTP.Method = route.Location(id), http.MethodGet
		for _, name := range []string{"content-type", "content-length", "idempotency-key"} {
			delete(ev.Headers, name)
		}
		ev.RequestContext.Authorizer.JWT.Claims["sub"] = account
		resp, _ := h.Handle(ctx, ev)
		check(ev, resp)
		return resp
	}
	lookup := func(rawQuery string, want int) {
		ev := loadEvent(t, "create-charge.json")
		ev.RouteKey, ev.Body, ev.RawPath, ev.RawQueryString, ev.RequestContext.HTTP.Method = route.Lookup, "", route.ChargesPath, rawQuery, http.MethodGet
		for _, name := range []string{"content-type", "content-length", "idempotency-key"} {
			delete(ev.Headers, name)
		}
		resp, _ := h.Handle(ctx, ev)
		check(ev, resp)
		if resp.StatusCode != want {
			t.Fatalf("lookup %q: %d %s, want %d", rawQuery, resp.StatusCode, resp.Body, want)
		}
	}
	visa := `{"amount": 25000, "currency": "BRL", "order_id": "123", "payment_method": "pm_card_visa", "description": "x"}`
	created := post(h, "spec-created-1", visa)
	post(h, "spec-created-1", visa) // replay
	get(strings.TrimPrefix(created.Headers["Location"], "/v1/charges/"), "acct_7Hq2")
	get(strings.TrimPrefix(created.Headers["Location"], "/v1/charges/"), "someone_else")
	post(h, "spec-declined-1", `{"amount": 1, "currency": "USD", "order_id": "1", "payment_method": "pm_card_declined"}`)
	// Authorize only: 201 authorized, with what it leaves capturable and
	// its expiry; its GET says nothing captured, all capturable.
	authorized := post(h, "spec-authorized-1", `{"amount": 700, "currency": "BRL", "order_id": "124", "payment_method": "pm_card_visa", "capture": false}`)
	var a struct {
		Status           string `json:"status"`
		AmountCapturable *int64 `json:"amount_capturable"`
		ExpiresAt        string `json:"authorization_expires_at"`
	}
	if err := json.Unmarshal([]byte(authorized.Body), &a); err != nil || authorized.StatusCode != 201 || a.Status != "authorized" ||
		a.AmountCapturable == nil || *a.AmountCapturable != 700 || a.ExpiresAt == "" {
		t.Fatalf("authorize only: %d %s", authorized.StatusCode, authorized.Body)
	}
	if strings.Contains(created.Body, "capturable") || strings.Contains(created.Body, "expires") {
		t.Fatalf("a captured charge's answer changed: %s", created.Body)
	}
	if found := get(strings.TrimPrefix(authorized.Headers["Location"], "/v1/charges/"), "acct_7Hq2"); found.StatusCode != 200 ||
		!strings.HasSuffix(found.Body, `,"amount_captured":0,"amount_capturable":700,"amount_refunded":0}`) || !strings.Contains(found.Body, `"status":"authorized"`) {
		t.Fatalf("GET of the authorization: %d %s", found.StatusCode, found.Body)
	}
	if reused := post(h, "spec-authorized-1", `{"amount": 700, "currency": "BRL", "order_id": "124", "payment_method": "pm_card_visa", "capture": true}`); reused.StatusCode != 422 ||
		!strings.Contains(reused.Body, "IDEMPOTENCY_KEY_REUSED") {
		t.Fatalf(`"capture": true under the key of "capture": false: %d %s, want another request`, reused.StatusCode, reused.Body)
	}
	if invalid := post(h, "spec-invalid-2", `{"amount": 700, "currency": "BRL", "order_id": "124", "payment_method": "pm_card_visa", "capture": "no"}`); invalid.StatusCode != 400 {
		t.Fatalf(`"capture": "no": %d %s, want 400`, invalid.StatusCode, invalid.Body)
	}
	lookup("idempotency_key=spec-authorized-1", 200)
	lookup("idempotency_key=spec-created-1", 200)
	lookup("idempotency_key=spec-declined-1", 200)
	lookup("idempotency_key=spec-unknown-1", 404)
	lookup("", 400)
	lookup("idempotency_key=short", 400)
	post(h, "", visa)
	post(h, "short", visa)
	post(h, "spec-invalid-1", `{"amount": -5}`)
	post(h, "spec-created-1", `{"amount": 1, "currency": "USD", "order_id": "1", "payment_method": "pm_card_visa"}`) // 422
	post(hRefused, "spec-refused-1", visa)                                                                           // 503 ACQUIRER_UNAVAILABLE
	sb.SetFaults(sandbox.Faults{ErrorRate: 1})
	post(h, "spec-pending-1", visa) // 503 CHARGE_OUTCOME_PENDING
	sb.SetFaults(sandbox.Faults{LatencyMS: 300})
	var wg sync.WaitGroup
	wg.Go(func() { post(h, "spec-inflight-1", visa) })
	time.Sleep(100 * time.Millisecond)
	if r := post(h, "spec-inflight-1", visa); r.StatusCode != 409 {
		t.Fatalf("want a 409 while the first is in flight, got %d", r.StatusCode)
	}
	lookup("idempotency_key=spec-inflight-1", 409)
	wg.Wait()
	noAccount := loadEvent(t, "create-charge.json")
	noAccount.RequestContext.Authorizer = nil
	resp, _ := h.Handle(ctx, noAccount)
	check(noAccount, resp)
	notJSON := loadEvent(t, "create-charge.json")
	notJSON.Headers["content-type"] = "text/plain"
	if resp, _ := h.Handle(ctx, notJSON); resp.StatusCode != 415 {
		t.Fatalf("text/plain: %d", resp.StatusCode)
	} else {
		check(notJSON, resp)
	}
}

// TestOpenAPIControls: the check bites. One character changed in the
// document, a required member of the answer renamed (id → iD) or of the
// request (order_id → order_iD), fails the exchange of a real charge.
func TestOpenAPIControls(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := idemtest.NewMemoryStore()
	sb := sandbox.New("")
	acq, _ := acquirerhttp.NewClient("http://sandbox.invalid", "", sandbox.InProcess(sb))
	h := handlerOn(idem.NewGuard(store, idem.Config{}), acq, charge.Config{})
	ev := loadEvent(t, "create-charge.json")
	resp, _ := h.Handle(ctx, ev)
	raw := string(readSpec(t))
	if err := loadContract(t, []byte(raw)).exchange(ev, resp); err != nil {
		t.Fatalf("the real document: %v", err)
	}
	for _, edit := range [][2]string{
		{"required: [id, object, status", "required: [iD, object, status"},
		{"required: [amount, currency, order_id, payment_method]", "required: [amount, currency, order_iD, payment_method]"},
	} {
		if strings.Count(raw, edit[0]) != 1 {
			t.Fatalf("%q is not in the document once", edit[0])
		}
		if err := loadContract(t, []byte(strings.Replace(raw, edit[0], edit[1], 1))).exchange(ev, resp); err == nil {
			t.Errorf("%q → %q: the exchange still passes", edit[0], edit[1])
		}
	}
}

// TestOpenAPILimitsAreTheParsers: every limit the document states is the
// constant the request parser enforces (one fact, two readers).
func TestOpenAPILimitsAreTheParsers(t *testing.T) {
	doc := loadContract(t, readSpec(t)).doc
	request := doc.Components.Schemas["ChargeRequest"].Value
	props := func(field string) *openapi3.Schema { return request.Properties[field].Value }
	maxLength := func(s *openapi3.Schema) any {
		if s.MaxLength == nil {
			return nil
		}
		return int(*s.MaxLength)
	}
	var keyHeader *openapi3.Schema
	for _, p := range doc.Paths.Value(route.ChargesPath).Post.Parameters {
		if p.Value.Name == "Idempotency-Key" {
			keyHeader = p.Value.Schema.Value
		}
	}
	minimum := any(nil)
	if m := props("amount").Min; m != nil {
		minimum = int(*m)
	}
	for name, pair := range map[string][2]any{
		"order_id maxLength":       {maxLength(props("order_id")), charge.MaxOrderIDLen},
		"payment_method maxLength": {maxLength(props("payment_method")), charge.MaxPaymentMethodLen},
		"description maxLength":    {maxLength(props("description")), charge.MaxDescriptionLength},
		"amount minimum":           {minimum, 1},
		"key minLength":            {int(keyHeader.MinLength), idem.MinKeyLen},
		"key maxLength":            {maxLength(keyHeader), 2*idem.MaxKeyLen + 2}, // every character escaped, in quotes
	} {
		if pair[0] != pair[1] {
			t.Errorf("%s: the document says %v, the parser %v", name, pair[0], pair[1])
		}
	}
	if d := props("amount").Description; !strings.Contains(d, strconv.Itoa(charge.DefaultMaxAmount)) {
		t.Errorf("amount's description does not state the default maximum %d: %q", charge.DefaultMaxAmount, d)
	}
	if d := request.Description; !strings.Contains(d, fmt.Sprintf("%d KiB", charge.MaxBodyBytes>>10)) {
		t.Errorf("the request's description does not state %d KiB", charge.MaxBodyBytes>>10)
	}
	refundRequest := doc.Components.Schemas["RefundRequest"].Value
	if d := refundRequest.Description; !strings.Contains(d, fmt.Sprintf("%d KiB", refund.MaxBodyBytes>>10)) {
		t.Errorf("the refund request's description does not state %d KiB", refund.MaxBodyBytes>>10)
	}
	if d := refundRequest.Properties["amount"].Value.Description; !strings.Contains(d, strconv.Itoa(charge.DefaultMaxAmount)) {
		t.Errorf("the refund amount's description does not state the default maximum: %q", d)
	}
	var reasons []string
	for _, v := range refundRequest.Properties["reason"].Value.Enum {
		reasons = append(reasons, v.(string))
	}
	if !slices.Equal(reasons, refund.Reasons()) {
		t.Errorf("the document's reasons %v, the parser's %v", reasons, refund.Reasons())
	}
}

// TestOpenAPIRefunds drives the refund routes into every answer they can
// give and checks each against api/openapi.yaml, with the charge's GET
// and its amount_refunded.
func TestOpenAPIRefunds(t *testing.T) {
	t.Parallel()
	c := loadContract(t, readSpec(t))
	ctx := context.Background()
	sb := sandbox.New("")
	sb.SetRefundBound(false)
	acq, _ := acquirerhttp.NewClient("http://sandbox.invalid", "", sandbox.InProcess(sb))
	guard := idem.NewGuard(idemtest.NewMemoryStore(), idem.Config{})
	h := handlerOn(guard, acq, charge.Config{})
	refused, _ := acquirerhttp.NewClient("http://127.0.0.1:1", "", nil)
	hRefused := &Handler{Service: h.Service, AccountClaim: "sub",
		Refunds: refund.NewService(guard, h.Service, refundtest.NewMemoryBalances(), refundtest.NewLedger(), refused, RenderRefund, charge.Config{})}
	exchange := func(h *Handler, ev events.APIGatewayV2HTTPRequest, want int) events.APIGatewayV2HTTPResponse {
		t.Helper()
		resp, _ := h.Handle(ctx, ev)
		if err := c.exchange(ev, resp); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != want {
			t.Fatalf("%s %s: %d %s, want %d", ev.RequestContext.HTTP.Method, ev.RawPath, resp.StatusCode, resp.Body, want)
		}
		return resp
	}
	charged := func(key, method string) string {
		ev := loadEvent(t, "create-charge.json")
		ev.Headers["idempotency-key"] = key
		ev.Body = `{"amount": 1000, "currency": "BRL", "order_id": "1", "payment_method": "` + method + `"}`
		resp := exchange(h, ev, map[bool]int{true: 402, false: 201}[method == "pm_card_declined"])
		var id string
		if resp.StatusCode == 201 {
			id = strings.TrimPrefix(resp.Headers["Location"], route.ChargesPath+"/")
		} else {
			id = declinedID(t, resp.Body) // a declined charge's id is in its problem
		}
		return id
	}
	refundEv := func(key, chargeID, body string) events.APIGatewayV2HTTPRequest {
		ev := loadEvent(t, "create-charge.json")
		ev.RouteKey, ev.PathParameters = route.Refund, map[string]string{"id": chargeID}
		ev.RawPath, ev.Body = route.ChargesPath+"/"+chargeID+"/refunds", body
		ev.Headers["idempotency-key"] = key
		if key == "" {
			delete(ev.Headers, "idempotency-key")
		}
		return ev
	}
	getEv := func(routeKey, path, rawQuery string, params map[string]string) events.APIGatewayV2HTTPRequest {
		ev := loadEvent(t, "create-charge.json")
		ev.RouteKey, ev.Body, ev.PathParameters = routeKey, "", params
		ev.RawPath, ev.RawQueryString, ev.RequestContext.HTTP.Method = path, rawQuery, http.MethodGet
		for _, name := range []string{"content-type", "content-length", "idempotency-key"} {
			delete(ev.Headers, name)
		}
		return ev
	}
	ch := charged("spec-refund-charge-1", "pm_card_visa")
	made := exchange(h, refundEv("spec-refund-1", ch, `{"amount": 300, "reason": "requested_by_customer"}`), 201)
	if again := exchange(h, refundEv("spec-refund-1", ch, `{"amount": 300, "reason": "requested_by_customer"}`), 201); again.Body != made.Body || again.Headers["Idempotent-Replay"] != "true" {
		t.Fatalf("replay %v %s", again.Headers, again.Body)
	}
	refundID := strings.TrimPrefix(made.Headers["Location"], route.RefundsPath+"/")
	exchange(h, getEv(route.GetRefund, made.Headers["Location"], "", map[string]string{"id": refundID}), 200)
	exchange(h, getEv(route.GetRefund, route.RefundLocation(ch), "", map[string]string{"id": ch}), 404)
	exchange(h, getEv(route.LookupRefund, route.RefundsPath, "idempotency_key=spec-refund-1", nil), 200)
	exchange(h, getEv(route.LookupRefund, route.RefundsPath, "idempotency_key=spec-refund-none", nil), 404)
	exchange(h, getEv(route.LookupRefund, route.RefundsPath, "", nil), 400)
	got := exchange(h, getEv(route.Get, route.Location(ch), "", map[string]string{"id": ch}), 200)
	if !strings.HasSuffix(got.Body, `"amount_refunded":300}`) {
		t.Fatalf("the charge's GET: %s", got.Body)
	}
	exceeds := exchange(h, refundEv("spec-refund-2", ch, `{"amount": 800}`), 422)
	if !strings.Contains(exceeds.Body, `"refundable":700`) || !strings.Contains(exceeds.Body, "REFUND_EXCEEDS_CHARGE") {
		t.Fatalf("exceeds: %s", exceeds.Body)
	}
	exchange(h, refundEv("spec-refund-2", ch, `{}`), 422) // IDEMPOTENCY_KEY_REUSED
	sb.SetFaults(sandbox.Faults{DeclineRefunds: true})
	exchange(h, refundEv("spec-refund-3", ch, `{}`), 402)
	// The decline released its entry and raised the balance's watermark to
	// its claim's millisecond: an intent claimed in that same millisecond
	// would be refused (503 SERVICE_UNAVAILABLE, design.md §7), so the next
	// one is claimed after it.
	time.Sleep(2 * time.Millisecond)
	sb.SetFaults(sandbox.Faults{ErrorRate: 1})
	pending := exchange(h, refundEv("spec-refund-4", ch, `{"amount": 1}`), 503)
	if !strings.Contains(pending.Body, "REFUND_OUTCOME_PENDING") {
		t.Fatalf("pending: %s", pending.Body)
	}
	sb.SetFaults(sandbox.Faults{LatencyMS: 300})
	var wg sync.WaitGroup
	wg.Go(func() { exchange(h, refundEv("spec-refund-5", ch, `{"amount": 1}`), 201) })
	time.Sleep(100 * time.Millisecond)
	exchange(h, refundEv("spec-refund-5", ch, `{"amount": 1}`), 409)
	exchange(h, getEv(route.LookupRefund, route.RefundsPath, "idempotency_key=spec-refund-5", nil), 409)
	wg.Wait()
	sb.SetFaults(sandbox.Faults{})
	exchange(hRefused, refundEv("spec-refund-6", ch, `{"amount": 1}`), 503)
	exchange(h, refundEv("spec-refund-7", charge.ID(strings.Repeat("0", 40)), `{}`), 404)
	exchange(h, refundEv("spec-refund-8", charged("spec-refund-charge-2", "pm_card_declined"), `{}`), 422)
	authorize := loadEvent(t, "create-charge.json")
	authorize.Headers["idempotency-key"] = "spec-refund-charge-4"
	authorize.Body = `{"amount": 1000, "currency": "BRL", "order_id": "1", "payment_method": "pm_card_visa", "capture": false}`
	authorized := exchange(h, authorize, 201).Headers["Location"]
	// Nothing captured yet: nothing refundable, stored, as the bound's.
	if nothing := exchange(h, refundEv("spec-refund-11", strings.TrimPrefix(authorized, "/v1/charges/"), `{}`), 422); !strings.Contains(nothing.Body, "REFUND_EXCEEDS_CHARGE") ||
		!strings.Contains(nothing.Body, `"refundable":0`) {
		t.Fatalf("a refund of an authorization, nothing captured: %s", nothing.Body)
	}
	exchange(h, refundEv("", ch, `{}`), 400)
	exchange(h, refundEv("spec-refund-9", ch, `{"amount": 0}`), 400)
	exchange(h, refundEv("spec-refund-9", ch, `{"amount": 1, "AMOUNT": 1}`), 400)
	notJSON := refundEv("spec-refund-9", ch, `{}`)
	notJSON.Headers["content-type"] = "text/plain"
	exchange(h, notJSON, 415)
	small := charged("spec-refund-charge-3", "pm_card_visa")
	// MaxEntries refunds in flight at once on the charge, as other
	// instances' reservations: the next is refused.
	inFlight := refundtest.NewMemoryBalances()
	if err := refundtest.PlantInFlight(ctx, inFlight, small, 1000, time.Now(), refund.MaxEntries); err != nil {
		t.Fatal(err)
	}
	hLimited := &Handler{Service: h.Service, AccountClaim: "sub",
		Refunds: refund.NewService(guard, h.Service, inFlight, refundtest.NewLedger(), acq, RenderRefund, charge.Config{})}
	if limit := exchange(hLimited, refundEv("spec-refund-10", small, `{"amount": 1}`), 422); !strings.Contains(limit.Body, "REFUND_LIMIT_REACHED") {
		t.Fatalf("limit: %s", limit.Body)
	}
}

// declinedID is the charge id a declined charge's problem names.
func declinedID(t *testing.T, body string) string {
	t.Helper()
	var p struct {
		ChargeID string `json:"charge_id"`
	}
	if err := json.Unmarshal([]byte(body), &p); err != nil || p.ChargeID == "" {
		t.Fatalf("declined: %s", body)
	}
	return p.ChargeID
}

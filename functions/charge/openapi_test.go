package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/santhosh-tekuri/jsonschema/v5"
	"gopkg.in/yaml.v3"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/charge/chargetest"
	"github.com/idempotent-payments/idempay/internal/httpapi"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/idem/idemtest"
	"github.com/idempotent-payments/idempay/internal/route"
	"github.com/idempotent-payments/idempay/internal/sandbox"
)

// spec is api/openapi.yaml, decoded.
type spec struct {
	mu       sync.Mutex // the compiler is not safe for concurrent use
	doc      map[string]any
	compiler *jsonschema.Compiler
}

const specURL = "file:///openapi.json"

func loadSpec(t *testing.T) *spec {
	t.Helper()
	raw, err := os.ReadFile("../../api/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("openapi.yaml: %v", err)
	}
	asJSON, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	if err := c.AddResource(specURL, bytes.NewReader(asJSON)); err != nil {
		t.Fatal(err)
	}
	return &spec{doc: doc, compiler: c}
}

func dig(v any, path ...string) any {
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

// check validates one real answer against the spec's response for route.
func (s *spec) check(t *testing.T, path, method string, resp events.APIGatewayV2HTTPResponse) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	status := strconv.Itoa(resp.StatusCode)
	ptr := []string{"paths", path, method, "responses", status}
	r, _ := dig(s.doc, ptr...).(map[string]any)
	if r == nil {
		t.Fatalf("%s %s answered %d, which the spec does not document", method, path, resp.StatusCode)
	}
	if ref, ok := r["$ref"].(string); ok {
		ptr = strings.Split(strings.TrimPrefix(ref, "#/"), "/")
		r, _ = dig(s.doc, ptr...).(map[string]any)
	}
	ct := strings.Split(resp.Headers["Content-Type"], ";")[0]
	if dig(r, "content", ct) == nil {
		t.Fatalf("%s %s %d: content type %q not documented", method, path, resp.StatusCode, ct)
	}
	var pointer strings.Builder
	for _, seg := range append(ptr, "content", ct, "schema") {
		pointer.WriteString("/" + strings.NewReplacer("~", "~0", "/", "~1", "{", "%7B", "}", "%7D").Replace(seg))
	}
	schema, err := s.compiler.Compile(specURL + "#" + pointer.String())
	if err != nil {
		t.Fatalf("compile schema: %v", err)
	}
	var body any
	if err := json.Unmarshal([]byte(resp.Body), &body); err != nil {
		t.Fatalf("%d body is not JSON: %s", resp.StatusCode, resp.Body)
	}
	if err := schema.Validate(body); err != nil {
		t.Fatalf("%s %s %d body %s: %v", method, path, resp.StatusCode, resp.Body, err)
	}
	headers, _ := r["headers"].(map[string]any)
	for name, h := range headers {
		h := h.(map[string]any)
		if ref, ok := h["$ref"].(string); ok {
			h = dig(s.doc, strings.Split(strings.TrimPrefix(ref, "#/"), "/")...).(map[string]any)
		}
		if h["required"] == true && resp.Headers[name] == "" {
			t.Fatalf("%s %s %d: required header %s missing", method, path, resp.StatusCode, name)
		}
	}
	for name := range resp.Headers {
		if name != "Content-Type" && headers[name] == nil {
			t.Fatalf("%s %s %d: header %s not documented", method, path, resp.StatusCode, name)
		}
	}
}

// TestOpenAPIMatchesHandler drives the handler into every answer it can
// give and checks each against api/openapi.yaml.
func TestOpenAPIMatchesHandler(t *testing.T) {
	t.Parallel()
	s := loadSpec(t)
	ctx := context.Background()
	sb := sandbox.New("")
	acq, _ := acquirer.NewClient("http://sandbox.invalid", "", sandbox.InProcess(sb))
	store := idemtest.NewMemoryStore()
	guard := idem.NewGuard(store, idem.Config{})
	h := &Handler{Service: charge.NewService(guard, chargetest.NewLedger(store), acq, httpapi.Answer, charge.Config{}), AccountClaim: "sub"}
	refused, _ := acquirer.NewClient("http://127.0.0.1:1", "", nil)
	hRefused := &Handler{Service: charge.NewService(guard, chargetest.NewLedger(store), refused, httpapi.Answer, charge.Config{}), AccountClaim: "sub"}

	post := func(h *Handler, key, body string) events.APIGatewayV2HTTPResponse {
		ev := loadEvent(t, "create-charge.json")
		ev.Headers["idempotency-key"], ev.Body = key, body
		if key == "" {
			delete(ev.Headers, "idempotency-key")
		}
		resp, _ := h.Handle(ctx, ev)
		s.check(t, "/v1/charges", "post", resp)
		return resp
	}
	get := func(id, account string) {
		ev := loadEvent(t, "create-charge.json")
		ev.RouteKey, ev.Body, ev.PathParameters = route.Get, "", map[string]string{"id": id}
		ev.RequestContext.Authorizer.JWT.Claims["sub"] = account
		resp, _ := h.Handle(ctx, ev)
		s.check(t, "/v1/charges/{id}", "get", resp)
	}
	visa := `{"amount": 25000, "currency": "BRL", "order_id": "123", "payment_method": "pm_card_visa", "description": "x"}`
	created := post(h, "spec-created-1", visa)
	post(h, "spec-created-1", visa) // replay
	get(strings.TrimPrefix(created.Headers["Location"], "/v1/charges/"), "acct_7Hq2")
	get(strings.TrimPrefix(created.Headers["Location"], "/v1/charges/"), "someone_else")
	post(h, "spec-declined-1", `{"amount": 1, "currency": "USD", "order_id": "1", "payment_method": "pm_card_declined"}`)
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
	wg.Wait()
	noAccount := loadEvent(t, "create-charge.json")
	noAccount.RequestContext.Authorizer = nil
	resp, _ := h.Handle(ctx, noAccount)
	s.check(t, "/v1/charges", "post", resp)
	notJSON := loadEvent(t, "create-charge.json")
	notJSON.Headers["content-type"] = "text/plain"
	if resp, _ := h.Handle(ctx, notJSON); resp.StatusCode != 415 {
		t.Fatalf("text/plain: %d", resp.StatusCode)
	} else {
		s.check(t, "/v1/charges", "post", resp)
	}
}

// TestOpenAPILimitsAreTheParsers: every limit the document states is the
// constant the request parser enforces (one fact, two readers).
func TestOpenAPILimitsAreTheParsers(t *testing.T) {
	raw, err := os.ReadFile("../../api/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	at := func(path ...string) any {
		var v any = doc
		for _, p := range path {
			m, _ := v.(map[string]any)
			v = m[p]
		}
		return v
	}
	props := func(field, limit string) any {
		return at("components", "schemas", "ChargeRequest", "properties", field, limit)
	}
	var keyHeader map[string]any
	for _, p := range at("paths", "/v1/charges", "post", "parameters").([]any) {
		if p.(map[string]any)["name"] == "Idempotency-Key" {
			keyHeader = p.(map[string]any)["schema"].(map[string]any)
		}
	}
	for name, pair := range map[string][2]any{
		"order_id maxLength":       {props("order_id", "maxLength"), charge.MaxOrderIDLen},
		"payment_method maxLength": {props("payment_method", "maxLength"), charge.MaxPaymentMethodLen},
		"description maxLength":    {props("description", "maxLength"), charge.MaxDescriptionLength},
		"amount minimum":           {props("amount", "minimum"), 1},
		"key minLength":            {keyHeader["minLength"], idem.MinKeyLen},
		"key maxLength":            {keyHeader["maxLength"], 2*idem.MaxKeyLen + 2}, // every character escaped, in quotes
	} {
		if pair[0] != pair[1] {
			t.Errorf("%s: the document says %v, the parser %v", name, pair[0], pair[1])
		}
	}
	if d, _ := props("amount", "description").(string); !strings.Contains(d, strconv.Itoa(charge.DefaultMaxAmount)) {
		t.Errorf("amount's description does not state the default maximum %d: %q", charge.DefaultMaxAmount, d)
	}
	if d, _ := at("components", "schemas", "ChargeRequest", "description").(string); !strings.Contains(d, fmt.Sprintf("%d KiB", charge.MaxBodyBytes>>10)) {
		t.Errorf("the request's description does not state %d KiB", charge.MaxBodyBytes>>10)
	}
}

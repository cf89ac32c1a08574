package httpapi

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/acquirer/acquirerhttp"
	"github.com/idempotent-payments/idempay/internal/capture"
	"github.com/idempotent-payments/idempay/internal/capture/capturetest"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/idem/idemtest"
	"github.com/idempotent-payments/idempay/internal/refund/refundtest"
	"github.com/idempotent-payments/idempay/internal/route"
	"github.com/idempotent-payments/idempay/internal/sandbox"
)

// TestOpenAPICaptures drives the capture and void routes into their
// answers (each status of each route, and the codes of the table's rows
// that one in-process handler can reach) and checks each against
// api/openapi.yaml.
func TestOpenAPICaptures(t *testing.T) {
	t.Parallel()
	c := loadContract(t, readSpec(t))
	ctx := context.Background()
	sb := sandbox.New("")
	acq, _ := acquirerhttp.NewClient("http://sandbox.invalid", "", sandbox.InProcess(sb))
	guard := idem.NewGuard(idemtest.NewMemoryStore(), idem.Config{})
	h := handlerOn(guard, acq, charge.Config{})
	refused, _ := acquirerhttp.NewClient("http://127.0.0.1:1", "", nil)
	down := capture.NewService(guard, h.Service, refundtest.NewMemoryBalances().Captures(), capturetest.NewLedger(), capturetest.NewLedger(),
		refused, RenderCapture, charge.Config{})
	hRefused := &Handler{Service: h.Service, Refunds: h.Refunds, Captures: down, AccountClaim: "sub"}
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
	charged := func(key, members string) string {
		ev := loadEvent(t, "create-charge.json")
		ev.Headers["idempotency-key"] = key
		ev.Body = `{"amount": 1000, "currency": "BRL", "order_id": "1", "payment_method": "pm_card_visa"` + members + `}`
		return strings.TrimPrefix(exchange(h, ev, 201).Headers["Location"], route.ChargesPath+"/")
	}
	post := func(routeKey, key, chargeID, body string) events.APIGatewayV2HTTPRequest {
		ev := loadEvent(t, "create-charge.json")
		ev.RouteKey, ev.PathParameters = routeKey, map[string]string{"id": chargeID}
		ev.RawPath, ev.Body = route.ChargesPath+"/"+chargeID+"/captures", body
		if routeKey == route.Void {
			ev.RawPath = route.ChargesPath + "/" + chargeID + "/void"
		}
		ev.Headers["idempotency-key"] = key
		if key == "" {
			delete(ev.Headers, "idempotency-key")
		}
		return ev
	}
	get := func(routeKey, path, rawQuery string, params map[string]string) events.APIGatewayV2HTTPRequest {
		ev := loadEvent(t, "create-charge.json")
		ev.RouteKey, ev.Body, ev.PathParameters = routeKey, "", params
		ev.RawPath, ev.RawQueryString, ev.RequestContext.HTTP.Method = path, rawQuery, http.MethodGet
		for _, name := range []string{"content-type", "content-length", "idempotency-key"} {
			delete(ev.Headers, name)
		}
		return ev
	}
	ch := charged("spec-capture-charge-1", `, "capture": false`)
	made := exchange(h, post(route.Capture, "spec-capture-1", ch, `{"amount": 300, "final": false}`), 201)
	if again := exchange(h, post(route.Capture, "spec-capture-1", ch, `{"amount": 300, "final": false}`), 201); again.Body != made.Body || again.Headers["Idempotent-Replay"] != "true" {
		t.Fatalf("replay %v %s", again.Headers, again.Body)
	}
	captureID := strings.TrimPrefix(made.Headers["Location"], route.CapturesPath+"/")
	if !capture.ValidCaptureID(captureID) || !strings.Contains(made.Body, `"final":false`) {
		t.Fatalf("the capture: %v %s", made.Headers, made.Body)
	}
	exchange(h, get(route.GetCapture, made.Headers["Location"], "", map[string]string{"id": captureID}), 200)
	exchange(h, get(route.GetCapture, route.CaptureLocation(ch), "", map[string]string{"id": ch}), 404)
	exchange(h, get(route.LookupCapture, route.CapturesPath, "idempotency_key=spec-capture-1", nil), 200)
	exchange(h, get(route.LookupCapture, route.CapturesPath, "idempotency_key=spec-capture-none", nil), 404)
	exchange(h, get(route.LookupCapture, route.CapturesPath, "", nil), 400)
	exceeds := exchange(h, post(route.Capture, "spec-capture-2", ch, `{"amount": 800}`), 422)
	if !strings.Contains(exceeds.Body, `"capturable":700`) || !strings.Contains(exceeds.Body, "CAPTURE_EXCEEDS_AUTHORIZATION") {
		t.Fatalf("exceeds: %s", exceeds.Body)
	}
	exchange(h, post(route.Capture, "spec-capture-2", ch, `{}`), 422) // IDEMPOTENCY_KEY_REUSED
	sb.SetFaults(sandbox.Faults{ErrorRate: 1})
	if pending := exchange(h, post(route.Capture, "spec-capture-3", ch, `{"amount": 1, "final": false}`), 503); !strings.Contains(pending.Body, "CAPTURE_OUTCOME_PENDING") {
		t.Fatalf("pending: %s", pending.Body)
	}
	// The capture in flight stops a void (409 CAPTURE_IN_FLIGHT).
	if waits := exchange(h, post(route.Void, "spec-void-1", ch, `{}`), 409); !strings.Contains(waits.Body, "CAPTURE_IN_FLIGHT") {
		t.Fatalf("a void behind a capture: %s", waits.Body)
	}
	sb.SetFaults(sandbox.Faults{LatencyMS: 300})
	var wg sync.WaitGroup
	wg.Go(func() { exchange(h, post(route.Capture, "spec-capture-4", ch, `{"amount": 1, "final": false}`), 201) })
	time.Sleep(100 * time.Millisecond)
	exchange(h, post(route.Capture, "spec-capture-4", ch, `{"amount": 1, "final": false}`), 409)
	exchange(h, get(route.LookupCapture, route.CapturesPath, "idempotency_key=spec-capture-4", nil), 409)
	wg.Wait()
	sb.SetFaults(sandbox.Faults{})
	exchange(hRefused, post(route.Capture, "spec-capture-5", ch, `{"amount": 1, "final": false}`), 503)
	exchange(h, post(route.Capture, "spec-capture-6", charge.ID(strings.Repeat("0", 40)), `{}`), 404)
	exchange(h, post(route.Capture, "spec-capture-7", charged("spec-capture-charge-2", ""), `{}`), 422) // captured at creation
	exchange(h, post(route.Capture, "", ch, `{}`), 400)
	exchange(h, post(route.Capture, "spec-capture-8", ch, `{"amount": 0}`), 400)
	exchange(h, post(route.Void, "spec-capture-8", ch, `{"reason": "bored"}`), 400)
	notJSON := post(route.Capture, "spec-capture-8", ch, `{}`)
	notJSON.Headers["content-type"] = "text/plain"
	exchange(h, notJSON, 415)

	// A void of another authorization, then its lookups; after it,
	// nothing is capturable.
	other := charged("spec-capture-charge-3", `, "capture": false`)
	time.Sleep(2 * time.Millisecond) // past the released intents' millisecond (design.md §7)
	voided := exchange(h, post(route.Void, "spec-void-2", other, `{"reason": "abandoned"}`), 201)
	voidID := strings.TrimPrefix(voided.Headers["Location"], route.VoidsPath+"/")
	if !capture.ValidVoidID(voidID) || !strings.Contains(voided.Body, `"amount":1000`) {
		t.Fatalf("the void: %v %s", voided.Headers, voided.Body)
	}
	exchange(h, get(route.GetVoid, voided.Headers["Location"], "", map[string]string{"id": voidID}), 200)
	exchange(h, get(route.LookupVoid, route.VoidsPath, "idempotency_key=spec-void-2", nil), 200)
	exchange(h, get(route.LookupVoid, route.VoidsPath, "idempotency_key=spec-void-none", nil), 404)
	exchange(h, post(route.Capture, "spec-capture-9", other, `{}`), 422) // CHARGE_NOT_CAPTURABLE

	// The acquirer declines what it has closed behind the service's back.
	third := charged("spec-capture-charge-4", `, "capture": false`)
	auths := sb.Authorizations()
	auth := auths[len(auths)-1]
	if _, err := sb.Void(ctx, "behind-the-back", acquirer.VoidRequest{AuthorizationID: auth.ID, Amount: 1000, Currency: "BRL"}); err != nil {
		t.Fatal(err)
	}
	if declined := exchange(h, post(route.Capture, "spec-capture-10", third, `{"amount": 100, "final": false}`), 402); !strings.Contains(declined.Body, "CAPTURE_DECLINED") {
		t.Fatalf("declined: %s", declined.Body)
	}
	time.Sleep(2 * time.Millisecond)
	if declined := exchange(h, post(route.Void, "spec-void-3", third, `{}`), 402); !strings.Contains(declined.Body, "VOID_DECLINED") {
		t.Fatalf("declined: %s", declined.Body)
	}
	exchange(h, get(route.LookupVoid, route.VoidsPath, "idempotency_key=spec-void-3", nil), 200)
}

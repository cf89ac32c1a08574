package httpapi

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/idempotent-payments/idempay/internal/strictjson"
)

// invoke is h.Invoke of payload, its answer decoded.
func invoke(t testing.TB, h *Handler, payload []byte) events.APIGatewayV2HTTPResponse {
	t.Helper()
	out, err := h.Invoke(context.Background(), payload)
	if err != nil {
		t.Fatalf("Invoke(%q): %v", payload, err)
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatalf("Invoke(%q) wrote %q: %v", payload, out, err)
	}
	return resp
}

// TestInvokeServesTheEvent: Invoke reads API Gateway's event and answers as
// Handle does (a charge, then its replay with the same body), in the bytes
// aws-lambda-go writes for a typed handler.
func TestInvokeServesTheEvent(t *testing.T) {
	t.Parallel()
	var _ lambda.Handler = (*Handler)(nil)
	h, sb := newHandler(t)
	payload, err := os.ReadFile("testdata/create-charge.json")
	if err != nil {
		t.Fatal(err)
	}
	first := invoke(t, h, payload)
	if first.StatusCode != 201 || len(sb.Authorizations()) != 1 {
		t.Fatalf("first: %d %s, %d authorizations", first.StatusCode, first.Body, len(sb.Authorizations()))
	}
	replay, _ := h.Handle(context.Background(), loadEvent(t, "create-charge.json"))
	if replay.StatusCode != 201 || replay.Body != first.Body || replay.Headers["Idempotent-Replay"] != "true" {
		t.Fatalf("replay by Handle: %d %s %v, want the first's body %s", replay.StatusCode, replay.Body, replay.Headers, first.Body)
	}
	out, err := h.Invoke(context.Background(), payload)
	if err != nil {
		t.Fatal(err)
	}
	typed := lambda.NewHandler(func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		return replay, nil
	})
	want, err := typed.Invoke(context.Background(), payload)
	if err != nil || string(out) != string(want) {
		t.Fatalf("Invoke wrote %s, want what aws-lambda-go writes for a typed handler: %s, %v", out, want, err)
	}
}

// TestInvokeRefusesAnAmbiguousEvent: an event with a duplicate member or an
// invalid byte, which encoding/json would have read as one of its
// meanings, is answered 400 and charges nothing.
func TestInvokeRefusesAnAmbiguousEvent(t *testing.T) {
	t.Parallel()
	h, sb := newHandler(t)
	raw, err := os.ReadFile("testdata/create-charge.json")
	if err != nil {
		t.Fatal(err)
	}
	for name, payload := range map[string]string{
		"two keys":                strings.Replace(string(raw), `"idempotency-key": "order-123-attempt",`, `"idempotency-key": "order-123-attempt", "idempotency-key": "order-124",`, 1),
		"two bodies":              strings.Replace(string(raw), `"body": `, `"body": "{}", "body": `, 1),
		"an invalid byte":         strings.Replace(string(raw), `"order_id\": \"123\"`, "\"order_id\\\": \\\"12\xff\\\"", 1),
		"a lone surrogate":        strings.Replace(string(raw), `"order_id\": \"123\"`, `"order_id\": \"12\ud800\"`, 1),
		"two events":              string(raw) + "{}",
		"no event":                "null",
		"the claims twice":        strings.Replace(string(raw), `"sub": "acct_7Hq2"`, `"sub": "acct_7Hq2", "sub": "acct_other"`, 1),
		"a body that is a number": strings.Replace(string(raw), `"body": "{`, `"body": 1, "x": "{`, 1),
	} {
		if payload == string(raw) {
			t.Fatalf("%s: the event is unchanged", name)
		}
		resp := invoke(t, h, []byte(payload))
		if resp.StatusCode != 400 || !strings.Contains(resp.Body, `"code":"VALIDATION_FAILED"`) || resp.Headers["Content-Type"] != ProblemContentType {
			t.Errorf("%s: %d %v %s, want a 400 problem", name, resp.StatusCode, resp.Headers, resp.Body)
		}
	}
	if n := len(sb.Authorizations()); n != 0 {
		t.Fatalf("%d authorizations", n)
	}
}

// FuzzInvoke: whatever the payload, Invoke never panics, never errors and
// answers JSON with a status of 2xx to 4xx.
func FuzzInvoke(f *testing.F) {
	raw, err := os.ReadFile("testdata/create-charge.json")
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{string(raw), `{}`, `null`, `{"headers":{"a":"1","a":"2"}}`, "{\"body\":\"\xff\"}", `{"routeKey":"GET /v1/charges/{id}","pathParameters":{"id":"ch_1"}}`} {
		f.Add([]byte(s))
	}
	h, _ := newHandler(f)
	f.Fuzz(func(t *testing.T, payload []byte) {
		resp := invoke(t, h, payload)
		if resp.StatusCode < 200 || resp.StatusCode >= 500 {
			t.Fatalf("Invoke(%q) = %d %s", payload, resp.StatusCode, resp.Body)
		}
	})
}

// BenchmarkReadEvent: reading API Gateway's event as aws-lambda-go does
// for a typed handler (encoding/json) and as Invoke does.
func BenchmarkReadEvent(b *testing.B) {
	payload, err := os.ReadFile("testdata/create-charge.json")
	if err != nil {
		b.Fatal(err)
	}
	for name, read := range map[string]func([]byte, any) error{"encoding-json": json.Unmarshal, "strictjson": strictjson.UnmarshalEvent} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var ev events.APIGatewayV2HTTPRequest
				if err := read(payload, &ev); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

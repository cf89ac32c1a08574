package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idempotent-payments/idempay/internal/obs"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/strictjson"
)

// Invoke implements aws-lambda-go's lambda.Handler: it reads the API
// Gateway event with strictjson.UnmarshalEvent, serves it with Handle and
// writes the answer as aws-lambda-go would (encoding/json, HTML left
// unescaped). It spares the reflective call and encoding/json's reading of
// the event, a third of the event's cost, and refuses what encoding/json
// would have guessed at: an event with a duplicate member or invalid
// UTF-8 is answered 400 (request_invalid) and serves nothing. Like
// Handle, it never returns an error but for an answer it cannot encode.
func (h *Handler) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	var ev events.APIGatewayV2HTTPRequest
	var resp events.APIGatewayV2HTTPResponse
	if err := strictjson.UnmarshalEvent(payload, &ev); err != nil {
		start := time.Now()
		a := refusal(obs.OutcomeRequestInvalid, op.CodeValidationFailed, "the request could not be read: "+err.Error())
		h.observe(ctx, request{}, a, time.Since(start))
		resp = render(a)
	} else {
		resp, _ = h.Handle(ctx, ev)
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(resp); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

package httpapi

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/capture"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/route"
)

// RenderCapture is the stored answer of a capture or a void (a
// capture.Renderer): 201 with the capture or the void when it succeeded;
// 402 CAPTURE_DECLINED or VOID_DECLINED with its id (capture_id,
// void_id) and the decline code
// when the acquirer declined it, or 422 AUTHORIZATION_EXPIRED when its
// decline states the authorization expired; 422
// CAPTURE_EXCEEDS_AUTHORIZATION with capturable when the bound refused
// the amount; 422 CHARGE_NOT_CAPTURABLE or AUTHORIZATION_EXPIRED when the
// charge's state refused it (Answer.Refused), as the problem of that
// outcome. A status and a body only, as Render's: CaptureHeaders
// rebuilds the headers.
func RenderCapture(a capture.Answer) idem.Response {
	var p problem
	switch row := a.Row; {
	case row != nil && row.Succeeded():
		return idem.Response{StatusCode: 201, Body: CaptureBody(*row)}
	case row != nil:
		idMember := "capture_id"
		if row.Kind == capture.Void {
			idMember = "void_id"
		}
		p = problem{code: a.Refusal(), detail: detailCaptureDeclined(*row), extensions: map[string]any{idMember: row.ID, "decline_code": row.DeclineCode}}
	case a.Refused != 0:
		p = problem{code: a.Refusal(), detail: detailOf(a.Refused, captureSpeech.words)}
	default:
		p = problem{code: op.CodeCaptureExceedsAuthorization, detail: detailCaptureExceeds, extensions: map[string]any{"capturable": a.Capturable}}
	}
	r := p.response()
	return idem.Response{StatusCode: r.StatusCode, Body: r.Body}
}

// detailCaptureDeclined is what a declined capture's or void's problem
// says.
func detailCaptureDeclined(row capture.Row) string {
	switch {
	case row.DeclineCode == acquirer.DeclineAuthorizationExpired:
		return "the acquirer says the authorization has expired; nothing was captured"
	case row.Kind == capture.Void:
		return "the acquirer declined the void; the authorization stays capturable"
	}
	return "the acquirer declined the capture; nothing was captured, and the amount stays capturable"
}

const detailCaptureExceeds = "capturable is what remained when this capture was decided; a smaller capture needs a new Idempotency-Key"

// CaptureHeaders are the HTTP headers of a capture's or a void's stored
// answer: for 201 the JSON content type and the row's Location, else the
// problem content type.
func CaptureHeaders(resp idem.Response, id string) map[string]string {
	if resp.StatusCode != 201 {
		return map[string]string{"Content-Type": ProblemContentType}
	}
	location := route.CaptureLocation(id)
	if strings.HasPrefix(id, capture.VoidIDPrefix) {
		location = route.VoidLocation(id)
	}
	return map[string]string{"Content-Type": "application/json", "Location": location}
}

// captureJSON is the public shape of a capture and of a void: a void has
// no final, and the amount it released.
type captureJSON struct {
	ID          string `json:"id"`
	Object      string `json:"object"`
	ChargeID    string `json:"charge_id"`
	Amount      int64  `json:"amount"`
	Currency    string `json:"currency"`
	Final       *bool  `json:"final,omitempty"`
	Status      string `json:"status"`
	DeclineCode string `json:"decline_code,omitempty"`
	Reason      string `json:"reason,omitempty"`
	CreatedAt   string `json:"created_at"`
}

// CaptureBody is the capture's or the void's JSON, as the 201 answer and
// GET return it.
func CaptureBody(r capture.Row) []byte {
	v := captureJSON{
		ID: r.ID, Object: "capture", ChargeID: r.ChargeID, Amount: r.Amount, Currency: r.Currency, Status: r.Status,
		DeclineCode: r.DeclineCode, Reason: r.Reason, CreatedAt: r.CreatedAt.Format(time.RFC3339Nano),
	}
	if r.Kind == capture.Void {
		v.Object = "void"
	} else {
		final := r.Final()
		v.Final = &final
	}
	b, err := json.Marshal(v)
	if err != nil { // cannot happen: strings, numbers and a boolean
		panic(err)
	}
	return b
}

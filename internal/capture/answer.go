package capture

import (
	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/op"
)

// CaptureCodes and VoidCodes are how a capture's and a void's outcomes
// read: each its own pending code.
var (
	CaptureCodes = op.Codes{Pending: op.CodeCaptureOutcomePending}
	VoidCodes    = op.Codes{Pending: op.CodeVoidOutcomePending}
)

// Answer is what a capture's or a void's record stores as its answer: a
// row the acquirer decided, the bound's refusal of a capture's amount, or
// a refusal the state of the charge decided. The HTTP adapter renders it
// (Renderer).
type Answer struct {
	// Row is the capture's or the void's row, when the acquirer decided.
	Row *Row
	// Exceeded: the capture's amount exceeded what remained capturable;
	// Capturable is what remained at that moment.
	Exceeded   bool
	Capturable int64
	// Refused is the refusal the charge's state decided, final for the
	// key: NotCapturable (no authorization of this acquirer, or one closed
	// or wholly captured) or AuthorizationExpired. Each state it reads
	// only ever moves on to another refusal, so it is stored: a retry of
	// the key, or another client's copy of it, gets this answer, not the
	// later state's.
	Refused op.Outcome
}

// Refusal is the code of a's stored refusal: Refused's code,
// CAPTURE_EXCEEDS_AUTHORIZATION,
// or, for an acquirer's answer, its decline's code (CAPTURE_DECLINED,
// VOID_DECLINED, or AUTHORIZATION_EXPIRED for a decline that states the
// authorization expired); "" for a success.
func (a Answer) Refusal() op.Code {
	switch {
	case a.Refused != 0:
		return CaptureCodes.Of(a.Refused)
	case a.Exceeded:
		return op.CodeCaptureExceedsAuthorization
	case a.Row == nil || a.Row.Succeeded():
		return ""
	case a.Row.DeclineCode == acquirer.DeclineAuthorizationExpired:
		return op.CodeAuthorizationExpired
	case a.Row.Kind == Void:
		return op.CodeVoidDeclined
	}
	return op.CodeCaptureDeclined
}

// Result is the typed result a's record stores beside its answer
// (op.Result): the row's id, the answer's code, whether a row answers it
// and, for an amount over what remained, Capturable.
func (a Answer) Result(id string) op.Result {
	r := op.Result{ID: id, Code: a.Refusal(), Rowless: a.Row == nil}
	if a.Exceeded {
		r.Capturable = &a.Capturable
	}
	return r
}

// Renderer renders a stored answer: what the first request receives and
// every replay returns, byte for byte. The service stores it and never
// reads it.
type Renderer func(Answer) idem.Response

// Input is one capture or void request as an entry point received it.
type Input = op.ActionInput

// Result is what one call came to: the capture's or the void's row (Row)
// is what a lookup found.
type Result = op.ActionResult[Row]

// endedEarly is the result of a call that ended before its answer.
func endedEarly(e op.Early) Result { return op.Ended[Row](e) }

// refusalOf is the refusal a stored answer carries, for a replay: its
// typed result's code. Every capture's and void's answer is stored with
// one.
func refusalOf(resp idem.Response) op.Code {
	r, _ := op.ResultOf(resp)
	return r.Code
}

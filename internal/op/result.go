package op

import (
	"strconv"

	"github.com/idempotent-payments/idempay/internal/idem"
)

// Result is the typed result a completed record stores beside its
// answer's bytes (idem.Response.Result, the attribute response_result on
// the table): the answer's code ("" for a success), the id of the row it
// answers with, and what a refusal carried (a refund bound's Refundable,
// a capture bound's Capturable). Adapters act on it without reading
// another adapter's bytes.
type Result struct {
	Code       Code
	ID         string
	Refundable *int64
	Capturable *int64
	// Rowless: the service refused the action before the acquirer (its
	// bound, or the state of its charge), so no row answers it and no
	// row's event tells it; ID is then the id the row would have had.
	Rowless bool
}

// The keys of a stored result.
const (
	resultCode       = "code"
	resultID         = "id"
	resultRefundable = "refundable"
	resultCapturable = "capturable"
	resultRowless    = "rowless"
)

// Stored is r as a record stores it.
func (r Result) Stored() map[string]string {
	out := map[string]string{resultID: r.ID}
	if r.Code != "" {
		out[resultCode] = string(r.Code)
	}
	if r.Refundable != nil {
		out[resultRefundable] = strconv.FormatInt(*r.Refundable, 10)
	}
	if r.Capturable != nil {
		out[resultCapturable] = strconv.FormatInt(*r.Capturable, 10)
	}
	if r.Rowless {
		out[resultRowless] = "true"
	}
	return out
}

// With is resp carrying r.
func (r Result) With(resp idem.Response) idem.Response {
	resp.Result = r.Stored()
	return resp
}

// ResultOf reads the typed result resp carries; ok is false for an answer
// stored without one (written before results were stored, so until its
// retention has passed), whose operation derives it from the answer
// itself.
func ResultOf(resp idem.Response) (r Result, ok bool) {
	if resp.Result == nil {
		return Result{}, false
	}
	r = Result{Code: Code(resp.Result[resultCode]), ID: resp.Result[resultID]}
	r.Refundable = figure(resp.Result, resultRefundable)
	r.Capturable = figure(resp.Result, resultCapturable)
	r.Rowless = resp.Result[resultRowless] == "true"
	return r, true
}

// figure is the stored result's figure name, nil when it has none.
func figure(stored map[string]string, name string) *int64 {
	v, has := stored[name]
	if !has {
		return nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil
	}
	return &n
}

package chargetest

import (
	"encoding/json"
	"net/http"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/idem"
)

// Service is the charge service most tests need: guard, acq, a ledger in
// memory, answer to render the stored answers (the HTTP API's, where a
// test looks at them over HTTP; Render otherwise); cfg tunes it.
func Service(guard *idem.Guard, acq charge.Acquirer, answer charge.Renderer, cfg charge.Config) *charge.Service {
	return ServiceWith(guard, NewLedger(), acq, answer, cfg)
}

// ServiceWith is Service on a ledger of the caller's.
func ServiceWith(guard *idem.Guard, ledger charge.Ledger, acq charge.Acquirer, answer charge.Renderer, cfg charge.Config) *charge.Service {
	return charge.NewService(guard, ledger, acq, answer, cfg)
}

// Render is a stored answer for the suites here, which compare answers
// with ledger rows and never read them over HTTP: 201 for a captured
// charge, 402 for a declined one, the row as JSON.
func Render(c charge.Charge) idem.Response {
	status := http.StatusCreated
	if c.Status == acquirer.StatusDeclined {
		status = http.StatusPaymentRequired
	}
	body, err := json.Marshal(c)
	if err != nil {
		panic(err) // strings, numbers and a time
	}
	return idem.Response{StatusCode: status, Body: body}
}

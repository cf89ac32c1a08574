package chargetest

import (
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/httpapi"
	"github.com/idempotent-payments/idempay/internal/idem"
)

// Service is the charge service most tests need: guard, acq, a ledger in
// memory and the HTTP API's stored answers; cfg tunes it.
func Service(guard *idem.Guard, acq charge.Acquirer, cfg charge.Config) *charge.Service {
	return ServiceWith(guard, NewLedger(), acq, cfg)
}

// ServiceWith is Service on a ledger of the caller's.
func ServiceWith(guard *idem.Guard, ledger charge.Ledger, acq charge.Acquirer, cfg charge.Config) *charge.Service {
	return charge.NewService(guard, ledger, acq, httpapi.Render, cfg)
}

package chargetest

import (
	"fmt"
	"time"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/event"
	"github.com/idempotent-payments/idempay/internal/op"
)

// RowIn is the nth of distinct captured ledger rows, written in
// region (empty: no region) at at.
func RowIn(region string, at time.Time, n int) charge.Charge {
	return charge.Charge{
		Origin: op.Origin{ID: charge.ID(fmt.Sprintf("%040x", n+1)), Account: "acct_t",
			IdempotencyKey: "row-key", Source: event.SourceHTTP, CreatedAt: at, Region: region},
		Status: "captured", Amount: 100, Currency: "BRL", AuthorizationID: "auth",
	}
}

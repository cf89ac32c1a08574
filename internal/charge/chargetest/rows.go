package chargetest

import (
	"time"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/event"
)

// RowIn is the nth (0 to 15) of distinct captured ledger rows, written in
// region (empty: no region) at at.
func RowIn(region string, at time.Time, n int) charge.Charge {
	return charge.Charge{ID: charge.ID(string(rune('a'+n)) + "123456789abcdef0123456789abcdef0123456"), Account: "acct_t", IdempotencyKey: "row-key",
		Source: event.SourceHTTP, Status: "captured", Amount: 100, Currency: "BRL", AuthorizationID: "auth", CreatedAt: at, Region: region}
}

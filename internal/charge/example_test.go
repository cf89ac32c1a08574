package charge_test

import (
	"context"
	"fmt"

	"github.com/idempotent-payments/idempay/internal/acquirer/acquirerhttp"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/charge/chargetest"
	"github.com/idempotent-payments/idempay/internal/httpapi"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/idem/idemtest"
	"github.com/idempotent-payments/idempay/internal/sandbox"
)

// Both entry points call Service.Charge with what they received: the
// account, the Idempotency-Key values and the body. A retry replays the
// first answer and charges nothing more.
func ExampleService_Charge() {
	ctx := context.Background()
	sb := sandbox.New("")
	acq, _ := acquirerhttp.NewClient("http://sandbox.invalid", "", sandbox.InProcess(sb))
	store := idemtest.NewMemoryStore()
	svc := charge.NewService(idem.NewGuard(store, idem.Config{}), chargetest.NewLedger(), acq, httpapi.Render, charge.Config{})

	in := charge.Input{
		Account: "acct_1",
		Keys:    []string{"order-123-attempt"},
		Body:    []byte(`{"amount": 25000, "currency": "BRL", "order_id": "123", "payment_method": "pm_card_visa"}`),
	}
	first := svc.Charge(ctx, in)
	retry := svc.Charge(ctx, in)
	fmt.Println(first.Outcome, first.Response.StatusCode)
	fmt.Println(retry.Outcome, retry.Response.StatusCode, string(retry.Response.Body) == string(first.Response.Body))
	fmt.Println("authorizations:", len(sb.ByKey()))

	in.Keys = nil
	fmt.Println(svc.Charge(ctx, in).Outcome)
	// Output:
	// executed 201
	// replayed 201 true
	// authorizations: 1
	// key_missing
}

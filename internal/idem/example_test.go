package idem_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/idem/idemtest"
)

// A first request claims the key and completes it with its answer; a retry
// of the same request gets that answer back; the same key with another
// request is refused.
func ExampleGuard() {
	ctx := context.Background()
	guard := idem.NewGuard(idemtest.NewMemoryStore(), idem.Config{})
	scope := idem.Scope{Operation: "charge", Account: "acct_1", Key: "order-123-attempt"}
	req := idem.Canonical{{Name: "amount", Value: "25000"}, {Name: "currency", Value: "BRL"}}

	claim, err := guard.Begin(ctx, scope, req)
	if err != nil {
		panic(err)
	}
	// The owner does the work once, sending claim.Lease.DownstreamKey()
	// downstream, then stores the answer.
	fmt.Println("owner, attempt", claim.Lease.Attempt())
	if err := claim.Lease.Complete(ctx, idem.Response{StatusCode: 201, Body: []byte(`{"id":"ch_1"}`)}); err != nil {
		panic(err)
	}

	retry, err := guard.Begin(ctx, scope, req)
	if err != nil {
		panic(err)
	}
	fmt.Println("retry:", retry.Replay.StatusCode, string(retry.Replay.Body))

	other := idem.Canonical{{Name: "amount", Value: "1"}, {Name: "currency", Value: "BRL"}}
	_, err = guard.Begin(ctx, scope, other)
	fmt.Println("another request:", errors.Is(err, idem.ErrKeyReused))
	// Output:
	// owner, attempt 1
	// retry: 201 {"id":"ch_1"}
	// another request: true
}

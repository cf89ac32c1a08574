package dynamo_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/acquirer/acquirerhttp"
	"github.com/idempotent-payments/idempay/internal/capture"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/charge/chargetest"
	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/dynamo/dynamotest"
	"github.com/idempotent-payments/idempay/internal/httpapi"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/sandbox"
)

// TestFinalCaptureAgainstVoidInTwoRegions races, for each of a number of
// authorizations of 1,000, a final capture of the whole amount in one
// region against a void of it in the other, at the same instant, on one
// strongly consistent table. Each region reaches the table through a proxy
// that refuses a share of its writes as a global table refuses a write
// racing another region's (ReplicatedWriteConflictException): the balance
// steps retry them. A caller that is told to wait (409 CAPTURE_IN_FLIGHT
// or VOID_IN_FLIGHT, 503) retries with its key until it has an answer
// that ends: 201, or 422 CHARGE_NOT_CAPTURABLE. For every authorization
// exactly one of the two succeeds and the other is refused; the acquirer
// (the sandbox, which enforces no bound of its own here) moved exactly one
// of them; the balance is closed with nothing reserved. Each call has a
// deadline, as a function's invocation has, so a record that a write
// refused on every try left in flight is taken over once its lease
// (callTimeout plus the lease margin) ends, well inside the caller's
// patience of three leases.
func TestFinalCaptureAgainstVoidInTwoRegions(t *testing.T) {
	t.Parallel()
	const races = 20
	ctx := context.Background()
	client := dynamotest.Client(t)
	table := dynamotest.NewTable(t, client)
	sb := sandbox.New("")
	sb.SetCaptureBound(false)
	acq, _ := acquirerhttp.NewClient("http://sandbox.invalid", "", sandbox.InProcess(sb))

	var conflicts atomic.Int64
	region := func(name string, seed uint64) *capture.Service {
		var mu sync.Mutex
		r := rand.New(rand.NewPCG(seed, seed))
		proxy := dynamotest.NewConflictProxy(t, os.Getenv("AWS_ENDPOINT_URL_DYNAMODB"), func(op string) bool {
			mu.Lock()
			defer mu.Unlock()
			if op == "UpdateItem" && r.Float64() < 0.2 {
				conflicts.Add(1)
				return true
			}
			return false
		})
		tbl := dynamo.Open(dynamotest.Client(t, proxy.Option), table)
		guard := idem.NewGuard(tbl.Store(), idem.Config{})
		cfg := charge.Config{Region: name, Logger: slog.New(slog.DiscardHandler)}
		charges := chargetest.ServiceWith(guard, tbl.Ledger(), acq, httpapi.Render, cfg)
		return capture.NewService(guard, charges, tbl.Captures(), tbl.CaptureRows(), tbl.VoidRows(), acq, httpapi.RenderCapture, cfg)
	}
	east, west := region("us-east-1", 1), region("us-west-2", 2)

	direct := dynamo.Open(client, table)
	authorizer := chargetest.ServiceWith(idem.NewGuard(direct.Store(), idem.Config{}), direct.Ledger(), acq, httpapi.Render, charge.Config{})
	charges := make([]string, races)
	for i := range charges {
		made := authorizer.Charge(ctx, charge.Input{Account: "acct_regions", Keys: []string{fmt.Sprintf("regions-auth-%d", i)},
			Body: []byte(`{"amount": 1000, "currency": "BRL", "order_id": "1", "payment_method": "pm_card_visa", "capture": false}`)})
		if made.Outcome != op.Executed {
			t.Fatalf("authorize %d: %s", i, made.Outcome)
		}
		charges[i] = made.ChargeID
	}

	// untilItEnds sends call with its key until the answer ends the
	// intent, counting the answers that told it to wait.
	const callTimeout = 10 * time.Second
	patience := 3 * (callTimeout + idem.DefaultLeaseMargin)
	var waits atomic.Int64
	untilItEnds := func(call func(ctx context.Context) capture.Result) capture.Result {
		deadline := time.Now().Add(patience)
		for {
			callCtx, cancel := context.WithTimeout(ctx, callTimeout)
			res := call(callCtx)
			cancel()
			switch res.Outcome {
			case op.CaptureInFlight, op.VoidInFlight, op.InFlight, op.Pending, op.Released, op.Unavailable:
				if time.Now().After(deadline) {
					return res
				}
				waits.Add(1)
				time.Sleep(50 * time.Millisecond)
				continue
			}
			return res
		}
	}
	captured, voided := make([]capture.Result, races), make([]capture.Result, races)
	var wg sync.WaitGroup
	for i, ch := range charges {
		wg.Go(func() {
			captured[i] = untilItEnds(func(ctx context.Context) capture.Result {
				return east.Capture(ctx, capture.Input{Account: "acct_regions", Keys: []string{fmt.Sprintf("regions-capture-%d", i)}, ChargeID: ch,
					Body: []byte(`{"amount": 1000}`)})
			})
		})
		wg.Go(func() {
			voided[i] = untilItEnds(func(ctx context.Context) capture.Result {
				return west.Void(ctx, capture.Input{Account: "acct_regions", Keys: []string{fmt.Sprintf("regions-void-%d", i)}, ChargeID: ch,
					Body: []byte(`{}`)})
			})
		})
	}
	wg.Wait()

	succeeded := func(r capture.Result) bool {
		return (r.Outcome == op.Executed || r.Outcome == op.Replayed) && r.Response.StatusCode == 201
	}
	moved := map[string]int{}
	for _, c := range sb.Captures() {
		if c.Status == acquirer.CaptureSucceeded {
			moved[c.AuthorizationID]++
		}
	}
	for _, v := range sb.Voids() {
		if v.Status == acquirer.VoidSucceeded {
			moved[v.AuthorizationID]++
		}
	}
	wins := map[string]int{}
	for i, ch := range charges {
		c, v := captured[i], voided[i]
		loser := v
		switch {
		case succeeded(c) && !succeeded(v):
			wins["capture"]++
		case succeeded(v) && !succeeded(c):
			wins["void"]++
			loser = c
		default:
			t.Fatalf("authorization %d: the capture %s %d, the void %s %d; want exactly one 201", i, c.Outcome, c.Response.StatusCode, v.Outcome, v.Response.StatusCode)
		}
		// Replayed: a try cut off by its deadline after the refusal was
		// stored, and the retry under the key given the stored answer.
		if (loser.Outcome != op.Executed && loser.Outcome != op.Replayed) || loser.Refusal != op.CodeChargeNotCapturable {
			t.Fatalf("authorization %d: the loser answered %s %s, want a stored %s", i, loser.Outcome, loser.Refusal, op.CodeChargeNotCapturable)
		}
		row, err := direct.Ledger().Get(ctx, ch)
		if err != nil {
			t.Fatal(err)
		}
		if moved[row.AuthorizationID] != 1 {
			t.Fatalf("authorization %d: the acquirer moved %d captures and voids, want 1", i, moved[row.AuthorizationID])
		}
		b, err := direct.Captures().Get(ctx, ch)
		if err != nil || b.Closed == "" || b.Reserved != 0 || b.Captured+b.Released != 1000 {
			t.Fatalf("authorization %d: balance %+v, %v", i, b, err)
		}
	}
	if conflicts.Load() == 0 {
		t.Fatal("no write conflicted: the test proved nothing about conflicts")
	}
	t.Logf("%d races: %d final captures won, %d voids won; %d writes conflicted and were retried; %d answers said wait",
		races, wins["capture"], wins["void"], conflicts.Load(), waits.Load())
}

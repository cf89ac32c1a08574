package dynamo_test

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/dynamo/dynamotest"
	"github.com/idempotent-payments/idempay/internal/idem"
)

// TestWriteConflicts: a global table's ReplicatedWriteConflictException,
// as DynamoDB sends it, is idem.ErrWriteConflict on every write of the
// store, the SDK does not retry it (the engine does: the claim's two tries
// are two requests), and a conflicted write changes nothing.
func TestWriteConflicts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	endpoint := os.Getenv("AWS_ENDPOINT_URL_DYNAMODB")
	if endpoint == "" {
		endpoint = os.Getenv("AWS_ENDPOINT_URL")
	}
	client := dynamotest.Client(t)
	table := dynamotest.NewTable(t, client)
	var mu sync.Mutex
	refusing, refused := false, map[string]int{}
	proxy := dynamotest.NewConflictProxy(t, endpoint, func(op string) bool {
		mu.Lock()
		defer mu.Unlock()
		if refusing {
			refused[op]++
		}
		return refusing
	})
	refuse := func(on bool) {
		mu.Lock()
		defer mu.Unlock()
		refusing = on
	}
	now := time.Now()
	clock := func() time.Time { return now }
	plain := idem.NewGuard(dynamo.Open(client, table).Store(), idem.Config{Now: clock})
	store := dynamo.Open(dynamotest.Client(t, proxy.Option), table).Store()
	guard := idem.NewGuard(store, idem.Config{Now: clock})

	refuse(true)
	scope := idem.Scope{Operation: "charge", Account: "acct_c", Key: "conflict-key-1"}
	_, err := guard.Begin(ctx, scope, idem.Canonical{{Name: "amount", Value: "1"}})
	var inFlight *idem.InFlightError
	if !errors.As(err, &inFlight) || refused["PutItem"] != 2 {
		t.Fatalf("a claim that conflicts: %v after %d PutItems; want in flight after 2 (the engine's two tries, none by the SDK)", err, refused["PutItem"])
	}
	if _, err := plain.Lookup(ctx, scope.PK()); !errors.Is(err, idem.ErrNotFound) {
		t.Fatalf("a conflicted claim wrote: %v", err)
	}

	refuse(false)
	claim, err := guard.Begin(ctx, scope, idem.Canonical{{Name: "amount", Value: "1"}})
	if err != nil {
		t.Fatal(err)
	}
	rec := claim.Lease.Record()
	refuse(true)
	for name, write := range map[string]func() error{
		"SetLease": func() error { return store.SetLease(ctx, rec.PK, rec.LeaseToken, now) },
		"Complete": func() error {
			return store.Complete(ctx, rec.PK, rec.LeaseToken, idem.Response{StatusCode: 201}, nil, rec.ExpiresAt)
		},
		"Release": func() error { return store.Release(ctx, rec.PK, rec.LeaseToken) },
		"Hold": func() error {
			return store.Hold(ctx, rec.PK, rec.LeaseToken, "held-token", idem.Hold{Reason: "amount_differs", At: now}, now)
		},
		"TakeOver": func() error {
			_, err := store.TakeOver(ctx, idem.Handover{PK: rec.PK, OldToken: rec.LeaseToken, NewToken: "t2", LeaseExpiresAt: now.Add(time.Minute), Now: now.Add(time.Hour)})
			return err
		},
		"Flag": func() error { return store.Flag(ctx, idem.InFlight{PK: rec.PK, LeaseToken: rec.LeaseToken}, now) },
	} {
		if err := write(); !errors.Is(err, idem.ErrWriteConflict) || !dynamo.IsWriteConflict(err) {
			t.Errorf("%s met a conflict: %v, want idem.ErrWriteConflict", name, err)
		}
	}
	after, err := plain.Lookup(ctx, rec.PK)
	if err != nil || after.Status != idem.StatusInProgress || after.LeaseToken != rec.LeaseToken || after.Held() || after.Attempt != 1 || after.ReconcileAttempts != 0 {
		t.Fatalf("conflicted writes changed the record: %+v, %v", after, err)
	}
}

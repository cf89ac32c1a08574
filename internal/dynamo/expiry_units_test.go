package dynamo_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/capture"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/dynamo/dynamotest"
	"github.com/idempotent-payments/idempay/internal/op"
)

// TestUnitsOfAnExpiry: what the sweeper's close of one lapsed
// authorization costs on DynamoDB Local: the index's page (read units),
// the balance's close (its opening write: 1 unit) and the unlisting (the
// row's update 1, the index entry's delete 1).
func TestUnitsOfAnExpiry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	meter := &dynamotest.Meter{Client: dynamotest.Client(t)}
	table := dynamotest.NewTable(t, meter.Client)
	tbl := dynamo.Open(meter, table)
	now := time.Now().UTC().Truncate(time.Millisecond)
	id := charge.ID(strings.Repeat("d", 40))
	if _, err := tbl.Ledger().Write(ctx, charge.Charge{Origin: op.Origin{ID: id, Account: "acct_units", CreatedAt: now.Add(-time.Hour)},
		Status: acquirer.StatusAuthorized, Amount: 25000, Currency: "BRL", OrderID: "o", AuthorizationID: "auth_1",
		AuthorizationExpiresAt: now.Add(-time.Minute)}); err != nil {
		t.Fatal(err)
	}
	meter.Take()
	r, err := capture.Expiry{Authorizations: tbl.Authorizations(), Balances: tbl.Captures(), Now: func() time.Time { return now }}.Run(ctx)
	if err != nil || r.Closed != 1 {
		t.Fatalf("the run: %+v, %v", r, err)
	}
	u := meter.Take()
	t.Logf("table WRU %.1f, index WRU %.1f, RRU %.1f", u.TableWrite, u.IndexWrite, u.Read)
	if u.TableWrite != 2 || u.IndexWrite != 1 {
		t.Fatalf("write units: table %.1f, index %.1f; want 2 (the close, the unlisting) and 1 (the index entry's delete)", u.TableWrite, u.IndexWrite)
	}
}

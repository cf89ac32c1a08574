package charge

import (
	"context"
	"errors"
	"time"

	"github.com/idempotent-payments/idempay/internal/idem"
)

// Ledger keeps the charges: one row per charge, written with the
// completion that answers its intent and never changed after. Its
// implementations sit beside the stores (dynamoledger on DynamoDB,
// chargetest in memory); only they know the row's layout and key.
type Ledger interface {
	// Entry is the row that records c, for the completion to write
	// atomically with the answer, and only if no row for c.ID exists.
	Entry(c Charge) idem.Item
	// Get returns charge id, ErrNoCharge when there is none, or a store
	// error.
	Get(ctx context.Context, id string) (Charge, error)
}

// ErrNoCharge: the ledger has no charge with that id.
var ErrNoCharge = errors.New("no such charge")

// Charge is the ledger row of one charge. Its public JSON is the HTTP API's
// (httpapi.Body).
type Charge struct {
	ID              string
	Account         string
	Status          string
	Amount          int64
	Currency        string
	OrderID         string
	Description     string
	DeclineCode     string
	AuthorizationID string
	CreatedAt       time.Time
}

// ChargeID derives the charge id from the record's downstream key: the same
// for every attempt of one intent.
func ChargeID(downstreamKey string) string { return "ch_" + downstreamKey }

func validChargeID(id string) bool {
	if len(id) != 3+40 || id[:3] != "ch_" {
		return false
	}
	for _, c := range id[3:] {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

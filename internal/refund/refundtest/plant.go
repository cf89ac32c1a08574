package refundtest

import (
	"context"
	"fmt"
	"time"

	"github.com/idempotent-payments/idempay/internal/refund"
)

// PlantInFlight reserves n refunds of 1 on chargeID's balance (a charge
// of chargeAmount), as other instances' first attempts in flight would,
// each stamped at stamp and claimed at its millisecond: tests of the
// limit on refunds in flight fill it with these.
func PlantInFlight(ctx context.Context, b refund.Balances, chargeID string, chargeAmount int64, stamp time.Time, n int) error {
	for i := range n {
		r := refund.Reservation{ChargeID: chargeID, ChargeAmount: chargeAmount, Fence: 1, Amount: 1, Stamp: stamp,
			Intent: refund.Intent{Key: fmt.Sprintf("%040x", i), Claimed: stamp.Truncate(time.Millisecond)}}
		if _, err := b.Reserve(ctx, r); err != nil {
			return fmt.Errorf("in flight %d: %w", i, err)
		}
	}
	return nil
}

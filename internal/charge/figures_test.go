package charge_test

import (
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/charge"
)

// TestFiguresOf: a captured charge captured its amount; an authorization
// leaves it capturable until its expiry and is expired from then on; a
// declined charge has neither.
func TestFiguresOf(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	auth := charge.Charge{Status: acquirer.StatusAuthorized, Amount: 700, AuthorizationExpiresAt: now.Add(time.Millisecond)}
	lapsed := auth
	lapsed.AuthorizationExpiresAt = now
	for _, tc := range []struct {
		name string
		ch   charge.Charge
		want charge.Figures
	}{
		{"captured", charge.Charge{Status: acquirer.StatusCaptured, Amount: 500}, charge.Figures{Status: acquirer.StatusCaptured, Captured: 500, Refunded: 30}},
		{"authorized", auth, charge.Figures{Status: acquirer.StatusAuthorized, Capturable: 700, Refunded: 30}},
		{"authorized, at its expiry", lapsed, charge.Figures{Status: charge.StatusExpired, Refunded: 30}},
		{"declined", charge.Charge{Status: acquirer.StatusDeclined, Amount: 500}, charge.Figures{Status: acquirer.StatusDeclined, Refunded: 30}},
	} {
		if got := charge.FiguresOf(tc.ch, 30, now); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

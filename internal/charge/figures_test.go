package charge_test

import (
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/charge"
)

// TestFiguresOf: a captured charge captured its amount; an authorization
// is authorized while open, even after partial captures, with what
// remains capturable; closed, or past its expiry, it is captured when its
// captures took something, else voided or expired; a declined charge has
// neither. Refunds are the balance's whatever the status.
func TestFiguresOf(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	auth := charge.Charge{Status: acquirer.StatusAuthorized, Amount: 700, AuthorizationExpiresAt: now.Add(time.Millisecond)}
	lapsed := auth
	lapsed.AuthorizationExpiresAt = now
	untouched := charge.Balance{Refunded: 30}
	partial := charge.Balance{Opened: true, Captured: 300, Capturable: 250, Refunded: 30} // 150 in flight
	for _, tc := range []struct {
		name string
		ch   charge.Charge
		b    charge.Balance
		want charge.Figures
	}{
		{"captured", charge.Charge{Status: acquirer.StatusCaptured, Amount: 500}, untouched, charge.Figures{Status: acquirer.StatusCaptured, Captured: 500, Refunded: 30}},
		{"authorized", auth, untouched, charge.Figures{Status: acquirer.StatusAuthorized, Capturable: 700, Refunded: 30}},
		{"authorized, at its expiry", lapsed, untouched, charge.Figures{Status: charge.StatusExpired, Refunded: 30}},
		{"partly captured", auth, partial, charge.Figures{Status: acquirer.StatusAuthorized, Captured: 300, Capturable: 250, Refunded: 30}},
		{"partly captured, at its expiry", lapsed, partial, charge.Figures{Status: acquirer.StatusCaptured, Captured: 300, Refunded: 30}},
		{"finally captured", auth, charge.Balance{Opened: true, Captured: 700, Closed: acquirer.StatusCaptured}, charge.Figures{Status: acquirer.StatusCaptured, Captured: 700}},
		{"voided", auth, charge.Balance{Opened: true, Closed: charge.StatusVoided}, charge.Figures{Status: charge.StatusVoided}},
		{"voided after a capture", auth, charge.Balance{Opened: true, Captured: 100, Closed: charge.StatusVoided}, charge.Figures{Status: acquirer.StatusCaptured, Captured: 100}},
		{"closed at its expiry", auth, charge.Balance{Opened: true, Closed: charge.StatusExpired}, charge.Figures{Status: charge.StatusExpired}},
		{"declined", charge.Charge{Status: acquirer.StatusDeclined, Amount: 500}, untouched, charge.Figures{Status: acquirer.StatusDeclined, Refunded: 30}},
	} {
		if got := charge.FiguresOf(tc.ch, tc.b, now); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

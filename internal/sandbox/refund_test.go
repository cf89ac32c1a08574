package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/acquirer/acquirerhttp"
	"github.com/idempotent-payments/idempay/internal/sandbox"
)

// refundClient is the real acquirer client on a fresh sandbox, with one
// captured authorization of 1,000 BRL made with method.
func refundClient(t *testing.T, method string) (*sandbox.Server, *acquirerhttp.Client, acquirer.Authorization) {
	t.Helper()
	sb := sandbox.New("")
	srv := httptest.NewServer(sb)
	t.Cleanup(srv.Close)
	c, err := acquirerhttp.NewClient(srv.URL, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	auth, err := c.Authorize(t.Context(), "charge-key", acquirer.Request{Amount: 1000, Currency: "BRL", PaymentMethod: method, OrderID: "1"})
	if err != nil {
		t.Fatal(err)
	}
	return sb, c, auth
}

// TestRefundBound: refunds of one authorization succeed until they would
// exceed it; the one that would is declined exceeds_authorization and
// counted; one key is one refund; with the bound off, nothing is refused.
func TestRefundBound(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	sb, c, auth := refundClient(t, "pm_card_visa")
	ask := acquirer.RefundRequest{AuthorizationID: auth.ID, Amount: 600, Currency: "BRL"}
	first, err := c.Refund(ctx, "refund-1", ask)
	if err != nil || first.Status != acquirer.RefundSucceeded || acquirer.CheckRefundTerms(first, "refund-1", ask) != nil {
		t.Fatalf("first refund: %+v, %v", first, err)
	}
	again, err := c.Refund(ctx, "refund-1", ask)
	if err != nil || again != first {
		t.Fatalf("the same key again: %+v, %v; want the first refund", again, err)
	}
	over, err := c.Refund(ctx, "refund-2", ask)
	if err != nil || over.Status != acquirer.RefundDeclined || over.DeclineCode != sandbox.DeclineExceedsAuthorization {
		t.Fatalf("a refund beyond the authorization: %+v, %v; want declined", over, err)
	}
	if got, err := c.LookupRefund(ctx, "refund-2"); err != nil || got != over {
		t.Fatalf("lookup: %+v, %v", got, err)
	}
	if _, err := c.LookupRefund(ctx, "refund-3"); !errors.Is(err, acquirer.ErrNotFound) {
		t.Fatalf("lookup of a refund never asked: %v", err)
	}
	if sb.RefundsRefused() != 1 || sb.Refunded(auth.ID) != 600 || len(sb.Refunds()) != 2 || sb.RefundsReceived() != 3 {
		t.Fatalf("refused %d, refunded %d, refunds %d, received %d", sb.RefundsRefused(), sb.Refunded(auth.ID), len(sb.Refunds()), sb.RefundsReceived())
	}
	sb.SetRefundBound(false)
	if r, err := c.Refund(ctx, "refund-4", ask); err != nil || r.Status != acquirer.RefundSucceeded {
		t.Fatalf("with the bound off: %+v, %v", r, err)
	}
	if sb.RefundsRefused() != 1 || sb.Refunded(auth.ID) != 1200 {
		t.Fatalf("with the bound off: refused %d, refunded %d", sb.RefundsRefused(), sb.Refunded(auth.ID))
	}
}

// TestRefundDeclines: a refund of an unknown authorization or in another
// currency is declined, and refunds nothing.
func TestRefundDeclines(t *testing.T) {
	t.Parallel()
	sb, c, auth := refundClient(t, "pm_card_visa")
	for i, c2 := range []struct {
		ask  acquirer.RefundRequest
		code string
	}{
		{acquirer.RefundRequest{AuthorizationID: "auth_none", Amount: 100, Currency: "BRL"}, sandbox.DeclineNoSuchAuthorization},
		{acquirer.RefundRequest{AuthorizationID: auth.ID, Amount: 100, Currency: "JPY"}, sandbox.DeclineCurrency},
	} {
		r, err := c.Refund(t.Context(), fmt.Sprintf("declined-%d", i), c2.ask)
		if err != nil || r.Status != acquirer.RefundDeclined || r.DeclineCode != c2.code {
			t.Errorf("%+v: %+v, %v; want declined %s", c2.ask, r, err, c2.code)
		}
	}
	if sb.Refunded(auth.ID) != 0 || sb.RefundsRefused() != 0 {
		t.Fatalf("refunded %d, refused %d", sb.Refunded(auth.ID), sb.RefundsRefused())
	}
}

// TestRefundsTenfold: a refund of a pm_card_refunds_tenfold authorization
// is made for ten times the amount asked, and its answer is a mismatch.
func TestRefundsTenfold(t *testing.T) {
	t.Parallel()
	sb, c, auth := refundClient(t, sandbox.PaymentMethodRefundsTenfold)
	sb.SetRefundBound(false)
	ask := acquirer.RefundRequest{AuthorizationID: auth.ID, Amount: 100, Currency: "BRL"}
	r, err := c.Refund(t.Context(), "tenfold-refund", ask)
	if err != nil || r.Amount != 1000 {
		t.Fatalf("%+v, %v", r, err)
	}
	var m *acquirer.RefundMismatchError
	if err := acquirer.CheckRefundTerms(r, "tenfold-refund", ask); !errors.As(err, &m) || m.Reason != acquirer.ReasonAmount {
		t.Fatalf("terms: %v, want an amount mismatch", err)
	}
}

// TestRefundFaults: faults apply to refunds as to authorizations: a
// dropped answer is "outcome unknown" and the refund exists; an injected
// error processes nothing.
func TestRefundFaults(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sb, c, auth := refundClient(t, "pm_card_visa")
	ask := acquirer.RefundRequest{AuthorizationID: auth.ID, Amount: 100, Currency: "BRL"}
	sb.SetFaults(sandbox.Faults{DropRate: 1})
	if _, err := c.Refund(ctx, "dropped-refund", ask); !errors.Is(err, acquirer.ErrOutcomeUnknown) {
		t.Fatalf("dropped: %v, want outcome unknown", err)
	}
	sb.SetFaults(sandbox.Faults{ErrorRate: 1})
	if _, err := c.Refund(ctx, "errored-refund", ask); !errors.Is(err, acquirer.ErrOutcomeUnknown) {
		t.Fatalf("500: %v, want outcome unknown", err)
	}
	sb.SetFaults(sandbox.Faults{})
	if r, err := c.LookupRefund(ctx, "dropped-refund"); err != nil || r.Status != acquirer.RefundSucceeded {
		t.Fatalf("the dropped refund: %+v, %v; want it made", r, err)
	}
	if _, err := c.LookupRefund(ctx, "errored-refund"); !errors.Is(err, acquirer.ErrNotFound) {
		t.Fatalf("the errored refund: %v; want none", err)
	}
	if _, _, drops := sb.Injected(); drops != 1 || sb.Refunded(auth.ID) != 100 {
		t.Fatalf("drops %d, refunded %d", drops, sb.Refunded(auth.ID))
	}
}

// TestClearingFaultsKeepsTheRefundBound: DELETE /_sandbox/faults clears
// the faults and nothing else: the refund bound stays off once turned off
// over HTTP.
func TestClearingFaultsKeepsTheRefundBound(t *testing.T) {
	t.Parallel()
	sb, c, auth := refundClient(t, "pm_card_visa")
	srv := httptest.NewServer(sb)
	t.Cleanup(srv.Close)
	for _, r := range []*http.Request{
		httptest.NewRequestWithContext(t.Context(), http.MethodPut, srv.URL+"/_sandbox/refund-bound", strings.NewReader(`{"enforced":false}`)),
		httptest.NewRequestWithContext(t.Context(), http.MethodDelete, srv.URL+"/_sandbox/faults", nil),
	} {
		r.RequestURI = ""
		resp, err := http.DefaultClient.Do(r)
		if err != nil || resp.StatusCode >= 300 {
			t.Fatalf("%s %s: %v, %v", r.Method, r.URL.Path, resp, err)
		}
		resp.Body.Close()
	}
	ask := acquirer.RefundRequest{AuthorizationID: auth.ID, Amount: 1000, Currency: "BRL"}
	for _, key := range []string{"all-of-it", "all-of-it-again"} {
		if r, err := c.Refund(t.Context(), key, ask); err != nil || r.Status != acquirer.RefundSucceeded {
			t.Fatalf("%s, the bound off after the faults were cleared: %+v, %v", key, r, err)
		}
	}
}

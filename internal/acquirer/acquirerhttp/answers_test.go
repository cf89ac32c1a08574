package acquirerhttp_test

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
)

// TestAnswerTable: each endpoint's pairings of HTTP status and body status
// (evidence.go), as the client reads them: an outcome, a mismatch, or
// unknown.
func TestAnswerTable(t *testing.T) {
	t.Parallel()
	const (
		ok       = "outcome"
		mismatch = "mismatch"
		unknown  = "unknown"
	)
	body := func(status string) string {
		return fmt.Sprintf(`{"id":"auth_1","status":%q,"amount":100,"currency":"BRL","idempotency_key":"k-1"}`, status)
	}
	for _, c := range []struct {
		endpoint, answer string
		status           int
		want             string
	}{
		{acquirer.EndpointAuthorize, body(acquirer.StatusCaptured), 201, ok},
		{acquirer.EndpointAuthorize, body(acquirer.StatusCaptured), 200, ok},
		{acquirer.EndpointAuthorize, body(acquirer.StatusDeclined), 402, ok},
		{acquirer.EndpointAuthorize, body(acquirer.StatusDeclined), 201, mismatch},
		{acquirer.EndpointAuthorize, body(acquirer.StatusDeclined), 200, mismatch},
		{acquirer.EndpointAuthorize, body(acquirer.StatusCaptured), 402, mismatch},
		{acquirer.EndpointAuthorize, body("pending"), 201, unknown},
		{acquirer.EndpointAuthorize, body(acquirer.StatusCaptured), 202, unknown},
		{acquirer.EndpointAuthorize, body(acquirer.StatusCaptured), 500, unknown},
		{acquirer.EndpointLookup, body(acquirer.StatusCaptured), 200, ok},
		{acquirer.EndpointLookup, body(acquirer.StatusDeclined), 200, ok},
		{acquirer.EndpointLookup, body(acquirer.StatusCaptured), 201, unknown},
		{acquirer.EndpointLookup, body(acquirer.StatusDeclined), 402, unknown},
		{acquirer.EndpointLookup, body("refunded"), 200, unknown},
	} {
		client, srv := answering(t, c.status, c.answer)
		var err error
		var a acquirer.Authorization
		if c.endpoint == acquirer.EndpointAuthorize {
			a, err = client.Authorize(context.Background(), "k-1", acquirer.Request{Amount: 100, Currency: "BRL"})
		} else {
			a, err = client.Lookup(context.Background(), "k-1")
		}
		srv.Close()
		var m *acquirer.MismatchError
		got := ok
		switch {
		case errors.As(err, &m):
			got = mismatch
			if !errors.Is(err, acquirer.ErrMismatch) || m.Endpoint != c.endpoint || m.HTTPStatus != c.status || m.Reason != acquirer.ReasonStatusPairing || m.Stated.ID != "auth_1" {
				t.Errorf("%s %d %s: mismatch %+v", c.endpoint, c.status, c.answer, m)
			}
		case errors.Is(err, acquirer.ErrOutcomeUnknown):
			got = unknown
		case err != nil:
			got = err.Error()
		}
		if got != c.want || (got == ok && a.ID != "auth_1") {
			t.Errorf("%s answered %d %s: %s (%v), want %s", c.endpoint, c.status, c.answer, got, err, c.want)
		}
	}
}

// TestRefundAnswerTable: the refund endpoints' pairings, as the client
// reads them.
func TestRefundAnswerTable(t *testing.T) {
	t.Parallel()
	body := func(status string) string {
		return fmt.Sprintf(`{"id":"rf_1","status":%q,"authorization_id":"auth_1","amount":100,"currency":"BRL","idempotency_key":"k-1"}`, status)
	}
	for _, c := range []struct {
		endpoint, answer string
		status           int
		want             string // "outcome", "mismatch" or "unknown"
	}{
		{acquirer.EndpointRefund, body(acquirer.RefundSucceeded), 201, "outcome"},
		{acquirer.EndpointRefund, body(acquirer.RefundSucceeded), 200, "outcome"},
		{acquirer.EndpointRefund, body(acquirer.RefundDeclined), 402, "outcome"},
		{acquirer.EndpointRefund, body(acquirer.RefundDeclined), 201, "mismatch"},
		{acquirer.EndpointRefund, body(acquirer.RefundSucceeded), 402, "mismatch"},
		{acquirer.EndpointRefund, body(acquirer.StatusCaptured), 201, "unknown"},
		{acquirer.EndpointRefund, body(acquirer.RefundSucceeded), 202, "unknown"},
		{acquirer.EndpointRefund, body(acquirer.RefundSucceeded), 500, "unknown"},
		{acquirer.EndpointRefundLookup, body(acquirer.RefundSucceeded), 200, "outcome"},
		{acquirer.EndpointRefundLookup, body(acquirer.RefundDeclined), 200, "outcome"},
		{acquirer.EndpointRefundLookup, body(acquirer.RefundSucceeded), 201, "unknown"},
		{acquirer.EndpointRefundLookup, body("pending"), 200, "unknown"},
	} {
		client, srv := answering(t, c.status, c.answer)
		var err error
		var r acquirer.Refund
		if c.endpoint == acquirer.EndpointRefund {
			r, err = client.Refund(context.Background(), "k-1", acquirer.RefundRequest{AuthorizationID: "auth_1", Amount: 100, Currency: "BRL"})
		} else {
			r, err = client.LookupRefund(context.Background(), "k-1")
		}
		srv.Close()
		var m *acquirer.RefundMismatchError
		got := "outcome"
		switch {
		case errors.As(err, &m):
			got = "mismatch"
			if !errors.Is(err, acquirer.ErrMismatch) || m.Endpoint != c.endpoint || m.HTTPStatus != c.status || m.Reason != acquirer.ReasonStatusPairing || m.Stated.ID != "rf_1" {
				t.Errorf("%s %d %s: mismatch %+v", c.endpoint, c.status, c.answer, m)
			}
		case errors.Is(err, acquirer.ErrOutcomeUnknown):
			got = "unknown"
		case err != nil:
			got = err.Error()
		}
		if got != c.want || (got == "outcome" && r.ID != "rf_1") {
			t.Errorf("%s answered %d %s: %s (%v), want %s", c.endpoint, c.status, c.answer, got, err, c.want)
		}
	}
}

// TestCaptureAndVoidAnswerTables: the capture and void endpoints'
// pairings, as the client reads them; an acquirer that accepts an action
// for later (202) is read as an unknown outcome, never as done.
func TestCaptureAndVoidAnswerTables(t *testing.T) {
	t.Parallel()
	body := func(id, status string) string {
		return fmt.Sprintf(`{"id":%q,"status":%q,"authorization_id":"auth_1","amount":100,"currency":"BRL","idempotency_key":"k-1"}`, id, status)
	}
	ctx := context.Background()
	calls := map[string]func(c *acquirerhttp.Client) (string, error){
		acquirer.EndpointCapture: func(c *acquirerhttp.Client) (string, error) {
			got, err := c.Capture(ctx, "k-1", acquirer.CaptureRequest{AuthorizationID: "auth_1", Amount: 100, Currency: "BRL"})
			return got.ID, err
		},
		acquirer.EndpointCaptureLookup: func(c *acquirerhttp.Client) (string, error) {
			got, err := c.LookupCapture(ctx, "k-1")
			return got.ID, err
		},
		acquirer.EndpointVoid: func(c *acquirerhttp.Client) (string, error) {
			got, err := c.Void(ctx, "k-1", acquirer.VoidRequest{AuthorizationID: "auth_1", Amount: 100, Currency: "BRL"})
			return got.ID, err
		},
		acquirer.EndpointVoidLookup: func(c *acquirerhttp.Client) (string, error) {
			got, err := c.LookupVoid(ctx, "k-1")
			return got.ID, err
		},
	}
	for _, c := range []struct {
		endpoint, answer string
		status           int
		want             string // "outcome", "mismatch" or "unknown"
	}{
		{acquirer.EndpointCapture, body("cp_1", acquirer.CaptureSucceeded), 201, "outcome"},
		{acquirer.EndpointCapture, body("cp_1", acquirer.CaptureDeclined), 402, "outcome"},
		{acquirer.EndpointCapture, body("cp_1", acquirer.CaptureDeclined), 201, "mismatch"},
		{acquirer.EndpointCapture, body("cp_1", acquirer.CaptureSucceeded), 202, "unknown"},
		{acquirer.EndpointCapture, body("cp_1", "pending"), 201, "unknown"},
		{acquirer.EndpointCaptureLookup, body("cp_1", acquirer.CaptureDeclined), 200, "outcome"},
		{acquirer.EndpointCaptureLookup, body("cp_1", acquirer.CaptureSucceeded), 404, "unknown"},
		{acquirer.EndpointVoid, body("vd_1", acquirer.VoidSucceeded), 200, "outcome"},
		{acquirer.EndpointVoid, body("vd_1", acquirer.VoidSucceeded), 402, "mismatch"},
		{acquirer.EndpointVoid, body("vd_1", acquirer.VoidSucceeded), 202, "unknown"},
		{acquirer.EndpointVoidLookup, body("vd_1", acquirer.VoidSucceeded), 200, "outcome"},
		{acquirer.EndpointVoidLookup, body("vd_1", acquirer.VoidSucceeded), 500, "unknown"},
	} {
		client, srv := answering(t, c.status, c.answer)
		id, err := calls[c.endpoint](client)
		srv.Close()
		got := "outcome"
		switch {
		case errors.Is(err, acquirer.ErrMismatch):
			got = "mismatch"
			if !strings.Contains(err.Error(), acquirer.ReasonStatusPairing) || !strings.Contains(err.Error(), c.endpoint) {
				t.Errorf("%s %d: mismatch %v", c.endpoint, c.status, err)
			}
		case errors.Is(err, acquirer.ErrOutcomeUnknown), errors.Is(err, acquirer.ErrNotFound):
			got = "unknown"
		case err != nil:
			got = err.Error()
		}
		if got != c.want || (got == "outcome" && id == "") {
			t.Errorf("%s answered %d %s: %s (%v), want %s", c.endpoint, c.status, c.answer, got, err, c.want)
		}
	}
}

// answering is a client of an acquirer that answers every request with
// status and the JSON body; the caller closes srv once it has asked.
func answering(t *testing.T, status int, body string) (*acquirerhttp.Client, *httptest.Server) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}))
	client, err := acquirerhttp.NewClient(srv.URL, "", nil)
	if err != nil {
		srv.Close()
		t.Fatal(err)
	}
	return client, srv
}

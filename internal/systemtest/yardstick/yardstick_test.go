package yardstick

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// TestHandlerMakesTheRoundTripsAsked: as many POSTs as the header says,
// then a 201; a missing count is an error, not a guess.
func TestHandlerMakesTheRoundTripsAsked(t *testing.T) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { calls.Add(1) }))
	defer srv.Close()
	h := Handler(srv.URL)
	resp, err := h(context.Background(), events.APIGatewayV2HTTPRequest{Headers: map[string]string{CallsHeader: "4"}})
	if err != nil || resp.StatusCode != http.StatusCreated || calls.Load() != 4 {
		t.Fatalf("status %d, %d calls, %v; want 201 after 4", resp.StatusCode, calls.Load(), err)
	}
	if _, err := h(context.Background(), events.APIGatewayV2HTTPRequest{}); err == nil {
		t.Fatal("no count: no error")
	}
}

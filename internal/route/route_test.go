package route_test

import (
	"testing"

	"github.com/idempotent-payments/idempay/internal/route"
)

// TestPath: a route's path, with the id in place of {id}.
func TestPath(t *testing.T) {
	for routeKey, want := range map[string]string{
		route.Create:  "/v1/charges",
		route.Capture: "/v1/charges/ch_1/captures",
		route.Void:    "/v1/charges/ch_1/void",
		route.Refund:  "/v1/charges/ch_1/refunds",
	} {
		if got := route.Path(routeKey, "ch_1"); got != want {
			t.Errorf("Path(%q) = %q, want %q", routeKey, got, want)
		}
	}
}

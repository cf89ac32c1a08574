// Package route names the API's routes as API Gateway does (its
// RouteKey, "METHOD /path"): the function, the local gateway and the CDK app
// all read them here. It imports nothing, so the CDK app can.
package route

// The API's paths and routes.
const (
	ChargesPath = "/v1/charges"
	Create      = "POST " + ChargesPath
	Get         = "GET " + ChargesPath + "/{id}"
	// Lookup finds the caller's charge by its idempotency key, the query
	// parameter LookupParameter.
	Lookup = "GET " + ChargesPath

	RefundsPath = "/v1/refunds"
	// Refund refunds the charge {id}: all of what remains, or part of it.
	Refund    = "POST " + ChargesPath + "/{id}/refunds"
	GetRefund = "GET " + RefundsPath + "/{id}"
	// LookupRefund finds the caller's refund by its idempotency key, the
	// query parameter LookupParameter, as Lookup finds a charge.
	LookupRefund = "GET " + RefundsPath
)

// LookupParameter is the one query parameter of Lookup and LookupRefund:
// the client's idempotency key.
const LookupParameter = "idempotency_key"

// All are every route of the API that needs a token (Scopes).
var All = []string{Create, Get, Lookup, Refund, GetRefund, LookupRefund}

// Health is the one route without the authorizer, for the health checks
// that route clients between regions, which cannot carry a token. It makes
// one strongly consistent read of the table and says only whether it
// succeeded (200 or 503, no body).
const Health = "GET /health"

// Public are the routes without the authorizer: Health alone.
var Public = []string{Health}

// Scopes are the OAuth scopes a token must carry for each route: the
// deployed JWT authorizer and the local gateway both refuse a token without
// its route's scope (403).
var Scopes = map[string]string{
	Create: "charges:write", Get: "charges:read", Lookup: "charges:read",
	Refund: "refunds:write", GetRefund: "charges:read", LookupRefund: "charges:read",
}

// Location is where the charge id is read (Get).
func Location(id string) string { return ChargesPath + "/" + id }

// RefundLocation is where the refund id is read (GetRefund).
func RefundLocation(id string) string { return RefundsPath + "/" + id }

// Package route names the charge API's routes as API Gateway does (its
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
)

// LookupParameter is Lookup's one query parameter: the client's
// idempotency key.
const LookupParameter = "idempotency_key"

// All are every route of the API that needs a token (Scopes).
var All = []string{Create, Get, Lookup}

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
var Scopes = map[string]string{Create: "charges:write", Get: "charges:read", Lookup: "charges:read"}

// Location is where the charge id is read (Get).
func Location(id string) string { return ChargesPath + "/" + id }

// Package route names the API's routes as API Gateway does (its
// RouteKey, "METHOD /path"): the function, the local gateway and the CDK app
// all read them here. It imports only the standard library, so the CDK app
// can.
package route

import "strings"

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

	CapturesPath = "/v1/captures"
	VoidsPath    = "/v1/voids"
	// Capture captures part or all of the authorization of charge {id},
	// and Void releases what remains of it.
	Capture = "POST " + ChargesPath + "/{id}/captures"
	Void    = "POST " + ChargesPath + "/{id}/void"
	// GetCapture, GetVoid and their lookups by idempotency key, as a
	// refund's.
	GetCapture    = "GET " + CapturesPath + "/{id}"
	LookupCapture = "GET " + CapturesPath
	GetVoid       = "GET " + VoidsPath + "/{id}"
	LookupVoid    = "GET " + VoidsPath
)

// LookupParameter is the one query parameter of every lookup (Lookup,
// LookupRefund, LookupCapture, LookupVoid): the client's idempotency key.
const LookupParameter = "idempotency_key"

// All are every route of the API that needs a token (Scopes).
var All = []string{Create, Get, Lookup, Refund, GetRefund, LookupRefund, Capture, Void, GetCapture, LookupCapture, GetVoid, LookupVoid}

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
	Capture: "captures:write", Void: "captures:write", GetCapture: "charges:read", LookupCapture: "charges:read",
	GetVoid: "charges:read", LookupVoid: "charges:read",
}

// Path is the path of routeKey ("METHOD /path") with id in place of
// its {id}: where a client sends it.
func Path(routeKey, id string) string {
	_, path, _ := strings.Cut(routeKey, " ")
	return strings.Replace(path, "{id}", id, 1)
}

// Location is where the charge id is read (Get).
func Location(id string) string { return ChargesPath + "/" + id }

// RefundLocation is where the refund id is read (GetRefund).
func RefundLocation(id string) string { return RefundsPath + "/" + id }

// CaptureLocation is where the capture id is read (GetCapture), and
// VoidLocation the void id (GetVoid).
func CaptureLocation(id string) string { return CapturesPath + "/" + id }

// VoidLocation is where the void id is read (GetVoid).
func VoidLocation(id string) string { return VoidsPath + "/" + id }

package deploy

// A TableMode is how the table is replicated, and what that mode allows.
type TableMode string

// The table modes.
const (
	// SingleRegion is one region's table: its conditional writes hold for
	// every caller, and TTL deletes expired records.
	SingleRegion TableMode = "single-region"
	// MultiRegionStrong is a global table with multi-region strong
	// consistency: a claim in any region holds in all of them. DynamoDB
	// offers it neither TTL deletion nor transactions, and a write that
	// races another region's fails, retryable, without effect.
	MultiRegionStrong TableMode = "multi-region-strong"
)

// TTL reports whether the table deletes expired records by TTL. Expiry
// never depends on it (every read and condition checks expires_at); a
// mode without it needs a purge of its own to reclaim the space.
func (m TableMode) TTL() bool { return m == SingleRegion }

// A Scope is where a resource lives.
type Scope string

// The scopes.
const (
	Regional Scope = "regional" // one per region the system runs in
	Global   Scope = "global"   // one for every region
)

// The resources whose scope the mode decides or names.
const (
	ResourceFunctions = "functions"
	ResourceQueues    = "queues"
	ResourceTopic     = "outcome topic"
	ResourceSecret    = "acquirer secret"
	ResourceAPI       = "HTTP API"
	ResourceTable     = "table"
	ResourceDomain    = "domain"
)

// Scopes says where each resource lives in mode m: everything a region
// runs is regional, so a region that fails takes only itself down; the
// table is global in a multi-region mode, and the domain that routes
// clients to a region always is.
func (m TableMode) Scopes() map[string]Scope {
	table := Regional
	if m == MultiRegionStrong {
		table = Global
	}
	return map[string]Scope{
		ResourceFunctions: Regional, ResourceQueues: Regional, ResourceTopic: Regional, ResourceSecret: Regional,
		ResourceAPI: Regional, ResourceTable: table, ResourceDomain: Global,
	}
}

// Package tabledef describes the one DynamoDB table in plain Go: its key, its
// in-flight index, its stream, its TTL attribute and the prefix of the
// ledger's keys. The store builds CreateTable from it
// (dynamo.TableInput) and the CDK app its CloudFormation table, so the
// tests, `make run` and AWS use one definition. It imports nothing of AWS,
// so the CDK app reads it without linking the SDK.
package tabledef

// The attribute and index names the definition and the stream filters use.
// The item layouts' struct tags spell the attributes too (Go's tags are
// literals), and tests hold them equal (dynamo's TestAttributeNames and
// TestRowAttributeNames).
const (
	// KeyAttribute is every item's partition key: a record's, a ledger row's.
	KeyAttribute = "pk"
	// TTLAttribute is a record's logical expiry, in epoch seconds.
	TTLAttribute = "expires_at"
	// InflightIndex is the sparse index of the records in progress.
	InflightIndex = "inflight"
	// InflightShardAttribute is the index's partition key, set only while a
	// record is in progress.
	InflightShardAttribute = "inflight_shard"
	// LeaseExpiresAttribute is the index's sort key: the lease's end, in
	// epoch milliseconds.
	LeaseExpiresAttribute = "lease_expires_at"
	// ExpiryIndex is the sparse index of the records that will expire, by
	// the hour they expire in, for a table without TTL: the purge lists it.
	ExpiryIndex = "expiry"
	// ExpiryBucketAttribute is its partition key: the hour of expires_at
	// and a shard, written with expires_at in every mode and so absent while
	// a record is held (it never expires); only a table without TTL has the
	// index that lists it.
	ExpiryBucketAttribute = "expiry_bucket"
	// UnpublishedIndex is the sparse index of the ledger rows whose event
	// no region has published yet, in a multi-region table: a region takes
	// over the rows of a region that stopped from it.
	UnpublishedIndex = "unpublished"
	// UnpublishedShardAttribute is its partition key and
	// UnpublishedSinceAttribute its sort key (the row's creation, in epoch
	// milliseconds): both written with a row that has a region, and removed
	// once its event is published.
	UnpublishedShardAttribute = "unpublished_shard"
	UnpublishedSinceAttribute = "unpublished_since"
	// AuthorizationIndex is the sparse index of the authorizations (ledger
	// rows of charges authorized without their capture) whose balance the
	// sweeper has not seen closed, by expiry: it closes those whose expiry
	// has passed (capture.Expiry), never by a Scan.
	AuthorizationIndex = "authorizations"
	// AuthorizationShardAttribute is its partition key, written with an
	// authorization's row and removed once its balance is closed; the
	// row's AuthorizationExpiresAttribute (its expiry, in epoch
	// milliseconds) is its sort key. It projects the row's AmountAttribute.
	AuthorizationShardAttribute   = "authorization_shard"
	AuthorizationExpiresAttribute = "authorization_expires_at"
	// ExpiredAttribute marks an authorization's row once the sweeper has
	// closed its balance at its expiry: when it unlisted the row, in epoch
	// milliseconds. Its appearance is the stream change that makes the
	// charge.expired event (whose time is the row's expiry).
	ExpiredAttribute = "expired_at"
	AmountAttribute  = "amount"
	// DayIndex is the sparse index of every operation's rows by the UTC
	// day they were written: the daily match reads one day's rows from
	// it, never by a Scan. DayShardAttribute is its partition key, the
	// day and a shard ("2026-12-07#05"), and DayAtAttribute its sort key,
	// the row's creation in epoch milliseconds; a row is written with both
	// and keeps them (a marker has neither). It projects what the match
	// compares: DayProjected.
	DayIndex          = "day"
	DayShardAttribute = "day_shard"
	DayAtAttribute    = "day_at"
	// StatusAttribute, CurrencyAttribute and ChargeIDAttribute are a
	// row's outcome, its currency and, for a refund, capture or void, the
	// charge it acts on.
	StatusAttribute   = "status"
	CurrencyAttribute = "currency"
	ChargeIDAttribute = "charge_id"
	// RegionAttribute is the region that wrote a ledger row (multi-region
	// mode), which the index projects, or whose heartbeat an item is.
	RegionAttribute = "region"
	// BeatAttribute is a heartbeat's time, in epoch milliseconds.
	BeatAttribute = "beat_at"
	// HoldAttribute is a held record's hold (a map), and HoldReasonAttribute
	// its member every hold has: the stream filters pass a record whose
	// hold's reason appears or whose held image is deleted.
	HoldAttribute       = "hold"
	HoldReasonAttribute = "reason"
	// TypeAttribute says what an item under a row's key is: a row
	// (ChargeRowType, RefundRowType) or a marker (HeldMarkerType,
	// VoidedMarkerType). The stream filters pass rows only.
	TypeAttribute = "type"
)

// The types of the items under a row's key (TypeAttribute).
const (
	// ChargeRowType is a ledger row's, RefundRowType a refund row's.
	ChargeRowType = "charge"
	RefundRowType = "refund"
	// CaptureRowType is a capture row's, VoidRowType a void row's.
	CaptureRowType = "capture"
	VoidRowType    = "void"
	// HeldMarkerType is the held marker's: a charge whose record is held
	// for an operator, before it has a row, naming the record's account
	// and key. A row write replaces it.
	HeldMarkerType = "held"
	// VoidedMarkerType is the voided marker's: an operator confirmed the
	// intent void, and no row of it may be written, ever.
	VoidedMarkerType = "voided"
)

// LedgerPrefix begins the key of every ledger row, and of the markers
// that stand at a row's key until, or instead of, the row (a held
// marker, a voided marker; TypeAttribute tells them apart). Nothing else
// is written under it (a record's key begins with idem.RecordPrefix), so
// the reconciler's role may put only such items.
const LedgerPrefix = "CHARGE#"

// ReleasePrefix begins the key of each release marker (idem.ReleaseMarker),
// followed by the released intent's downstream key: the operator's
// function alone writes them.
const ReleasePrefix = "RELEASE#"

// HeartbeatPrefix begins the key of each region's heartbeat item, in a
// multi-region table: the region's sweeper writes it every run, and the
// other regions read it to tell a stopped region (dynamo.Books).
const HeartbeatPrefix = "HEARTBEAT#"

// BalancePrefix begins the key of each charge's refund balance (DESIGN
// §7), followed by the charge id: never expires, never streamed as an
// event, and written only by conditional updates.
const BalancePrefix = "BALANCE#"

// RefundPrefix begins the key of each refund row, followed by the refund
// id: written once, never expires; or of the voided marker that stands
// there instead of a row an operator voided.
const RefundPrefix = "REFUND#"

// CapturePrefix and VoidPrefix begin the key of each capture row and
// each void row, followed by its id, as RefundPrefix a refund's: written
// once, never expire, or the voided marker in their place.
const (
	CapturePrefix = "CAPTURE#"
	VoidPrefix    = "VOID#"
)

// Row is how the table stores one operation's rows: the prefix of their
// keys and their items' type.
type Row struct{ Prefix, Type string }

// Rows are every operation's rows, which the stream filters pass; the
// operations' registrations are held equal to them
// (operations.TestRowsAreTheTables).
func Rows() []Row {
	return []Row{{LedgerPrefix, ChargeRowType}, {RefundPrefix, RefundRowType}, {CapturePrefix, CaptureRowType}, {VoidPrefix, VoidRowType}}
}

// RowPrefixes are the prefixes of every operation's rows' keys.
func RowPrefixes() []string {
	var prefixes []string
	for _, r := range Rows() {
		prefixes = append(prefixes, r.Prefix)
	}
	return prefixes
}

// DayProjected are the attributes the day index projects beside its
// keys and the table's: what the match compares of a row.
func DayProjected() []string {
	return []string{StatusAttribute, AmountAttribute, CurrencyAttribute, ChargeIDAttribute}
}

// MatchPrefix begins the key of the daily match's items: one per day
// (its claim, and once matched its counts), followed by the day
// (YYYY-MM-DD), and one per line the match kept, followed by the day, the
// line's kind and its ref. Only the match's function writes them.
const MatchPrefix = "MATCH#"

// MatchLinesShard is the day index's shard of a day's kept lines: their
// items carry DayShardAttribute as the day, "#" and it, so the lines of a
// day are listed by one Query and never among the rows (whose shards are
// numbers).
const MatchLinesShard = "match"

// Type is an attribute's DynamoDB scalar type.
type Type string

// The scalar types the keys use.
const (
	String Type = "S"
	Number Type = "N"
)

// Attribute is a key attribute: its name and type.
type Attribute struct {
	Name string
	Type Type
}

// Index is a global secondary index: its keys and the attributes it
// projects beside them (none: only the keys).
type Index struct {
	Name            string
	Partition, Sort Attribute
	Projected       []string
}

// Projection is DynamoDB's projection type of the index: INCLUDE when it
// projects attributes beside the keys, KEYS_ONLY when not.
func (ix Index) Projection() string {
	if len(ix.Projected) == 0 {
		return "KEYS_ONLY"
	}
	return "INCLUDE"
}

// Definition is the table: billed on demand, keyed by Partition, with the
// Indexes, and a stream of new and old images (the outbox the outcome events
// are published from: a hold is a change that needs the old image). TTL is
// not part of it: whether the table deletes by TTL is a property of the
// deployment's table mode (deploy.TableMode.TTL), on TTLAttribute.
type Definition struct {
	BillingMode string
	StreamView  string
	Partition   Attribute
	Indexes     []Index
}

// Table is the one definition of a table that deletes expired records by
// TTL.
func Table() Definition { return For(true) }

// For is the definition of the table, deleting expired records by TTL
// (ttl, deploy.TableMode.TTL) or not. A table without TTL is the
// multi-region one: it has the expiry index too, which its purge lists, so
// no purge scans the table, and the unpublished index, which a region
// takes over a stopped region's events from.
func For(ttl bool) Definition {
	d := Definition{
		BillingMode: "PAY_PER_REQUEST",
		StreamView:  "NEW_AND_OLD_IMAGES",
		Partition:   Attribute{KeyAttribute, String},
		Indexes: []Index{{
			Name:      InflightIndex,
			Partition: Attribute{InflightShardAttribute, String},
			Sort:      Attribute{LeaseExpiresAttribute, Number},
			Projected: []string{"lease_token", "attempt", "stale_at", "reconcile_attempts"},
		}, {
			Name:      AuthorizationIndex,
			Partition: Attribute{AuthorizationShardAttribute, String},
			Sort:      Attribute{AuthorizationExpiresAttribute, Number},
			Projected: []string{AmountAttribute},
		}, {
			Name:      DayIndex,
			Partition: Attribute{DayShardAttribute, String},
			Sort:      Attribute{DayAtAttribute, Number},
			Projected: DayProjected(),
		}},
	}
	if !ttl {
		d.Indexes = append(d.Indexes, Index{
			Name:      ExpiryIndex,
			Partition: Attribute{ExpiryBucketAttribute, String},
			Sort:      Attribute{TTLAttribute, Number},
		}, Index{
			Name:      UnpublishedIndex,
			Partition: Attribute{UnpublishedShardAttribute, String},
			Sort:      Attribute{UnpublishedSinceAttribute, Number},
			Projected: []string{RegionAttribute},
		})
	}
	return d
}

// Attributes are the attributes a key of the table or of an index names,
// each once, the table's first: what CreateTable's attribute definitions
// must list, and no more.
func (d Definition) Attributes() []Attribute {
	out := []Attribute{d.Partition}
	seen := map[string]bool{d.Partition.Name: true}
	for _, ix := range d.Indexes {
		for _, a := range []Attribute{ix.Partition, ix.Sort} {
			if a.Name != "" && !seen[a.Name] {
				seen[a.Name] = true
				out = append(out, a)
			}
		}
	}
	return out
}

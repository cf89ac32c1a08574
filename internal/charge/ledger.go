package charge

import (
	"context"
	"errors"
	"iter"
	"time"

	"github.com/idempotent-payments/idempay/internal/idem"
)

// Ledger keeps the charges: one row per charge, written before the
// completion that answers its intent and never changed after. A charge's
// id is derived from its intent's downstream key, so every attempt of one
// intent names the same row, and a row always has the acquirer's
// authorization behind it. Its implementations sit beside the stores
// (dynamo on DynamoDB, chargetest in memory); only they know the
// row's layout and key.
type Ledger interface {
	// Write writes c's row unless a row for c.ID exists, and returns the
	// row as stored: c, or the existing row, which an earlier attempt of
	// the same intent wrote from the same authorization and which wins.
	// Not fenced by any lease: a late writer finds the row and changes
	// nothing. It may fail with idem.ErrWriteConflict, without effect (the
	// service retries it, idem.RetryConflicts).
	Write(ctx context.Context, c Charge) (Charge, error)
	// Get returns charge id, ErrNoCharge when there is none,
	// ErrUnreadableCharge when its row does not decode, or a store error.
	Get(ctx context.Context, id string) (Charge, error)
}

// Books keep the books of the ledger rows' events in the
// multi-region mode, where each row's event is published once, by the
// region that wrote it (Charge.Region), and another region takes over only
// when that one has stopped. A row written with a region is unpublished
// until MarkPublished; each region's heartbeat tells whether it runs. Its
// implementations sit beside the ledgers (dynamo.Books, chargetest.Ledger).
type Books interface {
	// MarkPublished records that charge id's event is published, so no
	// region takes it over; again changes nothing. ErrNoCharge when there
	// is no such row; it may fail with idem.ErrWriteConflict, without
	// effect.
	MarkPublished(ctx context.Context, id string) error
	// Unpublished lists the rows written before before whose event is not
	// marked published. An entry that cannot be read is yielded with its
	// error and the listing goes on; an error reading the listing ends
	// it.
	Unpublished(ctx context.Context, before time.Time) iter.Seq2[Unpublished, error]
	// Beat records that region runs at at. It may fail with
	// idem.ErrWriteConflict, without effect.
	Beat(ctx context.Context, region string, at time.Time) error
	// LastBeat is region's last heartbeat: the zero time when it has none.
	LastBeat(ctx context.Context, region string) (time.Time, error)
}

// Errors of a Ledger.
var (
	// ErrNoCharge: the ledger has no charge with that id.
	ErrNoCharge = errors.New("no such charge")
	// ErrUnreadableCharge: the row under that id is not a charge this code
	// can read. Retrying does not help; an operator should look.
	ErrUnreadableCharge = errors.New("unreadable ledger row")
)

// Charge is the ledger row of one charge. Its public JSON is the HTTP API's
// (httpapi.Body).
type Charge struct {
	ID      string
	Account string
	// IdempotencyKey and Source are who asked: the client's key and the
	// entry point (Input.Source) its record was claimed with. Rows written
	// before they were kept have neither.
	IdempotencyKey  string
	Source          string
	Status          string
	Amount          int64
	Currency        string
	OrderID         string
	Description     string
	DeclineCode     string
	AuthorizationID string
	// AcquirerID is the id of the acquirer that authorized the charge (the
	// record's idem.Protocol.Downstream). A refund is sent only to that
	// acquirer. Rows written before rows carried it have none, and count
	// as the deployment's acquirer's (OfAcquirer).
	AcquirerID string
	CreatedAt  time.Time
	// Region is the region whose service wrote the row, in the
	// multi-region mode (Config.Region); empty in one region. That region
	// publishes the row's event, and until some region has, the ledger
	// lists the row as unpublished.
	Region string
}

// OfAcquirer reports whether acquirer authorized the charge: a row without
// an acquirer id was written by a deployment before rows carried it, and
// counts as acquirer's.
func (c Charge) OfAcquirer(acquirer string) bool {
	return c.AcquirerID == "" || c.AcquirerID == acquirer
}

// Unpublished is a row whose event no region has published yet, as the
// books list it in the multi-region mode: the row's id (a charge's, or a
// refund's, whose rows are listed beside them: refund.IDPrefix), the
// region that wrote the row and when.
type Unpublished struct {
	ID, Region string
	Since      time.Time
}

// ID is the id of the charge sent under downstreamKey (a record's): the
// same for every attempt of one intent.
func ID(downstreamKey string) string { return "ch_" + downstreamKey }

// IDPattern is the shape of a charge id, as api/openapi.yaml and
// docs/events.schema.json state it (TestIDPattern holds them equal).
const IDPattern = "^ch_[0-9a-f]{40}$"

// ValidID reports whether id has IDPattern's shape: a charge id the
// ledger may hold.
func ValidID(id string) bool { return idem.IsDerivedID("ch_", id) }

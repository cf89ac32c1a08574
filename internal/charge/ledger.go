package charge

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/op"
)

// Ledger keeps the charges: one row per charge, written before the
// completion that answers its intent and never changed after. A charge's
// id is derived from its intent's downstream key, so every attempt of one
// intent names the same row, and a row always has the acquirer's
// authorization behind it. Its implementations sit beside the stores
// (dynamo on DynamoDB, chargetest in memory); only they know the
// row's layout and key.
//
// Two markers may stand at a row's key instead of the row (DESIGN §4):
// the held marker (Hold), written before a record is held for an
// operator, so the charge's id leads to its record before it has a row;
// and the voided marker (Void), written by an operator's void-confirmed
// before the record is released, after which no row of the charge can be
// written. Neither is a charge: Get reads either as ErrNoCharge, and
// neither makes an event.
type Ledger interface {
	// The rows (op.Rows): a voided marker is ErrNoCharge and ErrVoided to
	// Get, a held marker a *HeldMarkerError, which is ErrNoCharge too; a
	// late Write that meets the voided marker fails with ErrVoided, one
	// that meets a held marker removes it, if it is still one, and writes
	// the row as any other; Void is refused by a row with
	// ErrLedgerRowExists.
	op.Rows[Charge]
	// Hold writes charge id's held marker, m, unless the key holds
	// anything (a row, or a marker): then it writes nothing and returns
	// nil. It may fail with idem.ErrWriteConflict, without effect.
	Hold(ctx context.Context, id string, m HeldMarker) error
}

// HeldMarker is what a charge's held marker says: the account and the
// idempotency key of its record, which is held for an operator (or about
// to be), so a lookup by the charge's id finds the record.
type HeldMarker struct {
	Account, Key string
}

// HeldMarkerError is Get's error for a charge whose key holds the held
// marker: no row (it is ErrNoCharge), and the record Marker names.
type HeldMarkerError struct {
	ID     string
	Marker HeldMarker
}

func (e *HeldMarkerError) Error() string {
	return fmt.Sprintf("charge %s: no row; the held marker names its record", idem.Ref(e.ID))
}

// Unwrap makes it ErrNoCharge.
func (e *HeldMarkerError) Unwrap() error { return ErrNoCharge }

// Books keep the books of the rows' events of every operation (a charge's
// ledger row, a refund's row: operations.ByRowID tells them apart by their
// id) in the multi-region mode, where each row's event is published once,
// by the region that wrote it (Charge.Region, refund.Refund.Region), and
// another region takes over only when that one has stopped. A row written with a region is unpublished
// until MarkPublished; each region's heartbeat tells whether it runs. Its
// implementations sit beside the ledgers (dynamo.Books, chargetest.Ledger).
type Books interface {
	// MarkPublished records that row id's event is published, so no
	// region takes it over; again changes nothing. ErrNoCharge when there
	// is no such row, of any operation; it may fail with idem.ErrWriteConflict, without
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
	// ErrVoided: an operator's void-confirmed put the voided marker at
	// the charge's key: its row is never written (Write writes nothing),
	// and it reads as no charge (Get, with ErrNoCharge). A writer that
	// meets it leaves the record as it is: the void releases it.
	ErrVoided = errors.New("the charge was confirmed void by an operator")
)

// Charge is the ledger row of one charge. Its public JSON is the HTTP API's
// (httpapi.Body). Its acquirer (Origin.AcquirerID) is the one a refund is
// sent to; a row written before rows carried it counts as the
// deployment's acquirer's (OfAcquirer).
type Charge struct {
	op.Origin
	Status          string
	Amount          int64
	Currency        string
	OrderID         string
	Description     string
	DeclineCode     string
	AuthorizationID string
	// AuthorizationExpiresAt is when an authorization made without its
	// capture (Status acquirer.StatusAuthorized) lapses: the acquirer's
	// stated expiry, else the intent's claim (before its first request)
	// plus the deployment's window (Config.AuthorizationWindow), to the
	// millisecond. Zero for any other status.
	AuthorizationExpiresAt time.Time
	// Expired is set once the sweeper has closed the authorization at its
	// expiry, with what remained capturable released
	// (capture.Authorizations.Unlist): the row's one later change, which
	// makes the charge.expired event.
	Expired bool
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
func ID(downstreamKey string) string { return IDPrefix + downstreamKey }

// IDPrefix starts every charge id.
const IDPrefix = "ch_"

// IDPattern is the shape of a charge id, as api/openapi.yaml and
// docs/events.schema.json state it (TestIDPattern holds them equal).
const IDPattern = "^ch_[0-9a-f]{40}$"

// ValidID reports whether id has IDPattern's shape: a charge id the
// ledger may hold.
func ValidID(id string) bool { return idem.IsDerivedID("ch_", id) }

// Figures are what a charge's GETs say of its money beside its row: its
// status as it stands and what was captured, what remains capturable and
// what its refunds returned.
type Figures struct {
	Status                         string
	Captured, Capturable, Refunded int64
}

// The statuses a GET gives an authorization made without its capture once
// it is closed with nothing captured: released by a void, or lapsed at
// its expiry (whether or not the sweeper has closed its balance yet).
// Closed with something captured, it is acquirer.StatusCaptured.
const (
	StatusVoided  = "voided"
	StatusExpired = "expired"
)

// Balance is what a charge's balance says, as its GET reads it in one
// read: whether a capture or a void ever stepped on it (Opened), what its
// captures took, what remains capturable (not reserved by one in flight),
// how it closed ("", or StatusVoided, StatusExpired, or
// acquirer.StatusCaptured for a final capture), and what its refunds
// returned.
type Balance struct {
	Opened               bool
	Captured, Capturable int64
	Closed               string
	Refunded             int64
}

// FiguresOf are ch's figures at now, as its balance b says. A charge
// captured at creation captured its amount; a declined one has neither.
// An authorization made without its capture is authorized while it is
// open (even after partial captures), with what remains capturable, until
// its expiry; once closed, or past its expiry, nothing remains capturable,
// and it is acquirer.StatusCaptured if its captures took something, else
// StatusVoided or StatusExpired. Rows never change: the status comes from
// the balance.
func FiguresOf(ch Charge, b Balance, now time.Time) Figures {
	f := Figures{Status: ch.Status, Refunded: b.Refunded}
	switch {
	case ch.Status == acquirer.StatusCaptured:
		f.Captured = ch.Amount
		return f
	case ch.Status != acquirer.StatusAuthorized:
		return f
	}
	capturable, closed := ch.Amount, b.Closed
	if b.Opened {
		f.Captured, capturable = b.Captured, b.Capturable
	}
	if closed == "" && !now.Before(ch.AuthorizationExpiresAt) {
		closed = StatusExpired
	}
	switch {
	case closed == "":
		f.Capturable = capturable
	case f.Captured > 0:
		f.Status = acquirer.StatusCaptured
	default:
		f.Status = closed
	}
	return f
}

// Figures are ch's figures now, by the service's clock (FiguresOf).
func (s *Service) Figures(ch Charge, b Balance) Figures {
	return FiguresOf(ch, b, s.cfg.Now())
}

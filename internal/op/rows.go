package op

import (
	"context"
	"errors"
	"time"

	"github.com/idempotent-payments/idempay/internal/idem"
)

// Origin is what every operation's row has from its intent's record:
// its id (which derives from the record's downstream key) and account;
// who asked, the client's idempotency key and the entry point
// (idem.Record.Source) its record was claimed with; the acquirer that
// decided it (the record's idem.Protocol.Downstream); when it was written;
// and the region whose service wrote it, in the multi-region mode (empty
// in one region): that region publishes the row's event, and until one
// has, the books list the row as unpublished. An operation's row embeds
// it beside its own fields. Charge rows written before rows kept the key,
// the source or the acquirer have none of them.
type Origin struct {
	ID             string
	Account        string
	IdempotencyKey string
	Source         string
	AcquirerID     string
	CreatedAt      time.Time
	Region         string
}

// OriginOf is the origin of the row id that the lease's attempt writes at
// time at (to the millisecond, in UTC), in region.
func OriginOf(lease *idem.Lease, id string, at time.Time, region string) Origin {
	rec := lease.Record()
	return Origin{
		ID: id, Account: rec.Account, IdempotencyKey: rec.Key, Source: rec.Source, AcquirerID: rec.Protocol.Downstream,
		CreatedAt: at.UTC().Truncate(time.Millisecond), Region: region,
	}
}

// Rows keep one operation's ledger rows, R: each written once, before the
// completion that answers its intent, and never changed after; its id
// derives from the intent's downstream key, so every attempt of one
// intent names the same row. Implementations sit beside the stores (the
// table's adapter, and memory ones for tests); only they know a row's
// layout and key. An operator's void-confirmed puts the voided marker at
// a row's key before it releases the intent (Void): after it no row of
// that intent is ever written. Each operation names its own errors
// (no such row, an unreadable row, a voided intent, a row that refuses a
// void).
type Rows[R any] interface {
	// Write writes r's row unless a row of its id exists, and returns the
	// row as stored: r, or the existing row, which an earlier attempt of
	// the same intent wrote from the same acquirer's answer and which
	// wins. Fenced by no lease, it may land at any time after the acquirer
	// answered: a late writer finds the row and changes nothing, or finds
	// the voided marker and writes nothing. It may fail with
	// idem.ErrWriteConflict, without effect (the service retries it,
	// idem.RetryConflicts).
	Write(ctx context.Context, r R) (R, error)
	// Get returns row id: the operation's "no such row" when there is
	// none or a marker stands at its key, its "unreadable" when the row
	// does not decode, or a store error.
	Get(ctx context.Context, id string) (R, error)
	// Void writes id's voided marker, over nothing, a held marker or a
	// voided marker (a void again), unless the row is there: the
	// operation's "row exists", nothing written. Once it returns nil, no
	// row of the intent is ever written. It may fail with
	// idem.ErrWriteConflict, without effect.
	Void(ctx context.Context, id string) error
}

// RowOf reads the row of an intent from rows, as a Settler reads it: the
// row of id(downstreamKey), found false when there is none (errors.Is
// none), else the read's error.
func RowOf[R any](rows Rows[R], id func(downstreamKey string) string, none error) func(ctx context.Context, downstreamKey string) (R, bool, error) {
	return func(ctx context.Context, downstreamKey string) (R, bool, error) {
		row, err := rows.Get(ctx, id(downstreamKey))
		if errors.Is(err, none) {
			var zero R
			return zero, false, nil
		}
		return row, err == nil, err
	}
}

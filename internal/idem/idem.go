package idem

import (
	"context"
	"time"
)

// Status is the state of an idempotency record.
type Status string

const (
	// StatusInProgress: a lease owner is (or was) executing the operation.
	StatusInProgress Status = "IN_PROGRESS"
	// StatusCompleted: the response is stored and is the answer for the key
	// until the record expires.
	StatusCompleted Status = "COMPLETED"
)

// Response is the stored answer replayed to every retry.
type Response struct {
	StatusCode int
	Headers    map[string]string
	Body       []byte
}

// Record is one idempotency record. Stores persist every field; the Guard
// alone decides their values.
type Record struct {
	PK        string
	Operation string
	Account   string
	Key       string

	Status      Status
	Fingerprint string
	// Request is the canonical request (Canonical.Encode), kept so an
	// in-flight record can be reconciled without the client.
	Request []byte

	LeaseToken     string
	LeaseExpiresAt time.Time
	// Attempt counts how many times the lease was taken: 1 for the claim.
	Attempt int
	// DownstreamKey is sent to the downstream system on every attempt.
	DownstreamKey string

	// Response is set once Status is StatusCompleted.
	Response *Response

	CreatedAt time.Time
	// ExpiresAt is the logical end of retention. A record whose ExpiresAt has
	// passed is treated as absent by every read and condition.
	ExpiresAt time.Time

	// StaleAt and ReconcileAttempts are set by the sweeper.
	StaleAt           time.Time
	ReconcileAttempts int
}

// Live reports whether the record is within retention at now.
func (r *Record) Live(now time.Time) bool {
	return now.Unix() <= r.ExpiresAt.Unix()
}

// Store persists records. Every method is one round trip to the database.
// Conditions that compare times use the now the caller passes, so a store
// has no clock of its own. A record whose ExpiresAt is before now (by whole
// seconds) counts as absent.
type Store interface {
	// Claim writes rec if no live record exists under rec.PK. If one exists
	// it is returned, with ok false and nothing written.
	Claim(ctx context.Context, rec Record, now time.Time) (existing *Record, ok bool, err error)
	// Get returns the live record under pk, or ErrNotFound.
	Get(ctx context.Context, pk string, now time.Time) (*Record, error)
	// TakeOver gives an in-progress record whose lease (token oldToken)
	// expired before now to a new owner: token newToken until leaseExpiresAt,
	// Attempt incremented. It returns the updated record, or ErrLeaseLost if
	// the record is not in progress under oldToken with an expired lease.
	TakeOver(ctx context.Context, pk, oldToken, newToken string, leaseExpiresAt, now time.Time) (*Record, error)
	// SetLease moves the lease expiry of the in-progress record held under
	// token, or returns ErrLeaseLost.
	SetLease(ctx context.Context, pk, token string, leaseExpiresAt time.Time) error
	// Complete stores resp and marks the record completed, leaving the
	// in-flight listing, fenced on token and in-progress status
	// (ErrLeaseLost). It also drops the stored canonical request, which
	// only a reconciliation of an in-flight record needs.
	Complete(ctx context.Context, pk, token string, resp Response) error
	// Release deletes the in-progress record held under token, or returns
	// ErrLeaseLost. When a release is allowed is the Guard's rule, not the
	// store's.
	Release(ctx context.Context, pk, token string) error

	// ListInFlight returns up to q.Limit in-progress records of shard
	// q.Shard whose lease ended before q.EndedBefore, by lease end, after
	// q.After. more false means the listing is done; true means another
	// call may return more. The listing may lag the writes (on DynamoDB it
	// is an eventually consistent index): a record just completed may still
	// be listed, and Flag's fence refuses it. Retention is not checked: a
	// record past ExpiresAt that is still stored is listed.
	ListInFlight(ctx context.Context, q InFlightQuery) (page []InFlight, more bool, err error)
	// Flag marks the in-progress record e stale at now and counts one more
	// reconcile attempt, fenced on the lease token and the StaleAt e was
	// listed with: of two sweepers that listed the same entry, one flags
	// it. It returns ErrLeaseLost when the record changed since.
	Flag(ctx context.Context, e InFlight, now time.Time) error
}

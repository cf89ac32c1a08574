package idem

import (
	"context"
	"errors"
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
	// Result is what the answer says, typed, beside its bytes: the keys
	// and values of the operation that stored it, for whoever acts on the
	// answer without reading its bytes. Nil for an answer stored without
	// one (records written before results were stored).
	Result map[string]string
}

// Record is one idempotency record. Stores persist every field; the Guard
// alone decides their values.
type Record struct {
	PK        string
	Operation string
	Account   string
	Key       string
	// Source is the claim's Scope.Source: where the request that claimed
	// the key came from. A take-over does not change it.
	Source string

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
	// Protocol is what the claim was made under: the in-transit bound, the
	// skew and the downstream system's id. Zero in records written before
	// records carried it.
	Protocol Protocol
	// Hold is set while the record is held for an operator, and kept with
	// the operator's settlement once it is completed.
	Hold *Hold

	// Response is set once Status is StatusCompleted.
	Response *Response

	// CreatedAt is when the key was claimed, to the millisecond.
	CreatedAt time.Time
	// ExpiresAt is the logical end of retention. A record whose ExpiresAt has
	// passed is treated as absent by every read and condition. A held record
	// has none: it never expires.
	ExpiresAt time.Time

	// StaleAt and ReconcileAttempts are set by the sweeper.
	StaleAt           time.Time
	ReconcileAttempts int
}

// Live reports whether the record is within retention at now. A held
// record is always live.
func (r *Record) Live(now time.Time) bool {
	return r.Held() || now.Unix() <= r.ExpiresAt.Unix()
}

// Held reports whether the record is held for an operator: in progress
// with a Hold. No claim, take-over or reconciliation touches it; only an
// operator's step ([Guard.TakeOverHeld]) settles it.
func (r *Record) Held() bool { return r.Status == StatusInProgress && r.Hold != nil }

// Handover is one take-over as a store writes it.
type Handover struct {
	PK, OldToken, NewToken string
	LeaseExpiresAt, Now    time.Time
	// Protocol replaces the record's: the larger T and skew of the
	// record's and the taker's (Protocol.Merge), since the taker's
	// requests are bounded by its own.
	Protocol Protocol
	// Settling, on an operator's take-over of a held record
	// (Store.TakeOverHeld), is written as the hold's Settling.
	Settling *Settlement
}

// Protocol is what the safety of a take-over depends on (DESIGN §4 rule
// 3), stored on every record at its claim, so a deploy that changes it
// cannot shorten the wait for records already in flight.
type Protocol struct {
	// InTransitBound (T) is the longest the downstream system may take to
	// process a request it received.
	InTransitBound time.Duration
	// ClockSkew is the margin added to T for clocks that disagree.
	ClockSkew time.Duration
	// Downstream is the logical id of the downstream system the record's
	// attempts send to (configured, the same wherever that system is
	// reached; never a URL). Only a guard configured with the same id takes
	// the record over: another system cannot say what this one received.
	Downstream string
}

// WaitOut is how long after a lease ends a request sent under it may still
// be in transit: the larger T of p and rec, plus the larger skew. A zero
// field of rec (an older record) counts as p's.
func (p Protocol) WaitOut(rec Protocol) time.Duration {
	m := p.Merge(rec)
	return m.InTransitBound + m.ClockSkew
}

// Merge is the protocol a record has once p's holder takes it over from
// rec: the larger T and skew of the two, and rec's downstream system (p's
// for an older record that names none).
func (p Protocol) Merge(rec Protocol) Protocol {
	m := Protocol{InTransitBound: max(p.InTransitBound, rec.InTransitBound), ClockSkew: max(p.ClockSkew, rec.ClockSkew), Downstream: rec.Downstream}
	if m.Downstream == "" {
		m.Downstream = p.Downstream
	}
	return m
}

// Hold is why a record is held for an operator: its downstream answer
// disagreed with the request, so money may have moved on terms nobody
// asked for and the engine cannot know which side is right.
type Hold struct {
	// Reason is a short machine-readable cause.
	Reason string
	// Evidence is what was asked and what downstream said, as the caller
	// recorded it (JSON for charges).
	Evidence []byte
	// At is when the record was held.
	At time.Time
	// Settling is the operator's decision being carried out: the settling
	// take-over (Guard.TakeOverHeld) writes it with the take-over, so a
	// void's release carries its decision and its time in the record it
	// deletes (the stream's old image, the same in every region), and a
	// retry of the decision tells its own take-over from another's. A
	// record still held with a Settling is one whose decision did not
	// finish; the next settling take-over writes its own.
	Settling *Settlement
	// Settlement is the operator's decision, once an accept completed the
	// record.
	Settlement *Settlement
}

// Settlement is an operator's decision on a held record.
type Settlement struct {
	// Action names the decision (SettleAccept, SettleVoidConfirmed).
	Action string
	// By names who decided: the principal the operator's channel
	// authenticated.
	By string
	// Decision is the decision's id, the same on every retry of one
	// decision: what a retry reads back to learn whether its decision took
	// effect.
	Decision string
	// At is when: the settling take-over's time, and an accept's
	// completion's.
	At time.Time
}

// Probe makes one strongly consistent read of store, of SentinelPK, and
// returns nil when the store answered (the key is never found), or the
// store's error. It reads no account's data and writes nothing: the one
// question a health check asks of the table.
func Probe(ctx context.Context, store Store, now time.Time) error {
	if _, err := store.Get(ctx, SentinelPK, now); err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	return nil
}

// ValidDecisionID reports whether id can name a decision
// (Settlement.Decision): 8 to 64 ASCII letters, digits, '-' and '_'.
func ValidDecisionID(id string) bool {
	if len(id) < 8 || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// ReleaseMarker records which decision voided a held record, and when. A
// void writes it before it deletes the record, and it outlives the delete:
// one small item per void, kept, under the record's downstream key (the
// intent), so whoever asks after an error or a retry learns which
// decision released it (Guard.ReleaseMarker).
type ReleaseMarker struct {
	// DownstreamKey names the released intent; PK its record.
	DownstreamKey, PK string
	// Attempt is the record's attempt under the void's settling take-over.
	// Every take-over raises it and only the last one's lease can delete
	// the record, so of two markers of one intent the one with the higher
	// attempt is the void that can still, or did, release it.
	Attempt int
	// Decision is the void's settlement (SettleVoidConfirmed, by, id, at).
	Decision Settlement
}

// The operator's decisions on a held record.
const (
	// SettleAccept completes the record with downstream's own terms.
	SettleAccept = "accept"
	// SettleVoidConfirmed releases the record: the operator voided the
	// effect downstream, and the client's retry executes anew.
	SettleVoidConfirmed = "void_confirmed"
)

// Store persists records. Every method is one round trip to the database.
// Conditions that compare times use the now the caller passes, so a store
// has no clock of its own. A record whose ExpiresAt is before now (by whole
// seconds) counts as absent. Any write may fail with ErrWriteConflict
// (another region wrote the item at the same moment): it then had no
// effect at all.
type Store interface {
	// Claim writes rec if no live record exists under rec.PK. If one exists
	// it is returned, with ok false and nothing written.
	Claim(ctx context.Context, rec Record, now time.Time) (existing *Record, ok bool, err error)
	// Get returns the live record under pk, or ErrNotFound.
	Get(ctx context.Context, pk string, now time.Time) (*Record, error)
	// TakeOver gives an in-progress record whose lease (h.OldToken) expired
	// before h.Now to a new owner: token h.NewToken until h.LeaseExpiresAt,
	// Attempt incremented, its T and skew set to h.Protocol's (and its
	// downstream system, when h.Protocol names one). The caller gives the
	// merged protocol (Protocol.Merge), never a lower one. It returns the
	// updated record, or ErrLeaseLost if the record is not in progress
	// under h.OldToken with an expired lease, or is held.
	TakeOver(ctx context.Context, h Handover) (*Record, error)
	// TakeOverHeld is TakeOver for an operator: the record must be held
	// (and stays held), and h.Settling becomes its hold's Settling.
	// ErrLeaseLost otherwise.
	TakeOverHeld(ctx context.Context, h Handover) (*Record, error)
	// Hold marks the in-progress record held under token with hold: its
	// lease ends at leaseExpiresAt and its token becomes heldToken, which no
	// lease knows (only TakeOverHeld gives the record a writer again); it
	// loses its end of retention (it never expires), and it leaves the
	// in-flight listing's shards for the held listing (InFlightQuery.Held).
	// ErrLeaseLost if token does not hold it, or it is held already.
	Hold(ctx context.Context, pk, token, heldToken string, hold Hold, leaseExpiresAt time.Time) error
	// SetLease moves the lease expiry of the in-progress record held under
	// token, or returns ErrLeaseLost.
	SetLease(ctx context.Context, pk, token string, leaseExpiresAt time.Time) error
	// Complete stores resp and marks the record completed, leaving the
	// in-flight listing, fenced on token and in-progress status
	// (ErrLeaseLost). It also drops the stored canonical request, which
	// only a reconciliation of an in-flight record needs. Without settled
	// the record must not be held; with settled (an operator's accept) it
	// must be, the settlement is stored on the hold and the record's
	// retention ends at expiresAt. Either way ErrLeaseLost otherwise.
	Complete(ctx context.Context, pk, token string, resp Response, settled *Settlement, expiresAt time.Time) error
	// Release deletes the in-progress record held under token, or returns
	// ErrLeaseLost. When a release is allowed is the Guard's rule, not the
	// store's.
	Release(ctx context.Context, pk, token string) error
	// MarkRelease writes m, the release marker of m.DownstreamKey, unless
	// one exists with a higher Attempt (a later take-over's void, whose
	// lease fenced this one's out): ErrOtherDecision, with nothing written.
	// A marker of a lower or the same attempt is written over: an earlier
	// void that never deleted, or this void's own write again.
	MarkRelease(ctx context.Context, m ReleaseMarker) error
	// ReleaseMarker returns the release marker of downstreamKey, or
	// ErrNotFound.
	ReleaseMarker(ctx context.Context, downstreamKey string) (*ReleaseMarker, error)

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

	// ListExpired returns up to q.Limit records of bucket q.Bucket
	// (ExpiryBucket) whose ExpiresAt is before q.Before, after q.After;
	// more as ListInFlight. A held record has no ExpiresAt and is never
	// listed. The listing may lag the writes (on DynamoDB, an index).
	ListExpired(ctx context.Context, q ExpiredQuery) (page []Expired, more bool, err error)
	// Purge deletes the record e lists if it is still that expired record:
	// its ExpiresAt is still e's and before now, and it is not held. A key
	// claimed afresh since the listing has a later ExpiresAt, so its new
	// record is never deleted. ErrNotExpired otherwise, with nothing
	// deleted.
	Purge(ctx context.Context, e Expired, now time.Time) error
}

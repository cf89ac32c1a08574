package idem

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Defaults for the zero fields of Config. The CDK app deploys these
// values, and an operator's tool, which takes none from its shell, uses
// them where a record carries none. They are written twice, here and in
// deploy.Deployed().Protocol, because the engine imports nothing of this
// module and deploy, the system's description, imports nothing either:
// deploy's TestProtocolIsTheCodes holds the two equal, and infra's
// TestProtocolDefaults the deployed stack.
const (
	DefaultRetention      = 90 * 24 * time.Hour
	DefaultLeaseMargin    = 10 * time.Second
	DefaultLease          = 60 * time.Second
	DefaultMaxRetryAfter  = 2 * time.Second
	DefaultInTransitBound = 5 * time.Second
	DefaultClockSkew      = time.Second
)

// Config tunes a Guard. The zero value is usable: every zero field takes the
// default named next to it.
type Config struct {
	// Retention is how long a key is remembered from its first request
	// (DefaultRetention, 90 days). After that the same key is a new operation.
	Retention time.Duration
	// LeaseMargin is added to the context deadline to make the lease
	// (DefaultLeaseMargin). It must cover the time a worker needs, after its
	// deadline, to be surely gone, plus clock skew.
	LeaseMargin time.Duration
	// DefaultLease is the lease length when the context has no deadline
	// (DefaultLease, 60 s).
	DefaultLease time.Duration
	// MaxRetryAfter caps the retry delay given for an in-flight key
	// (DefaultMaxRetryAfter, 2 s): the owner usually finishes long before its
	// lease ends, so clients poll rather than wait for the whole lease.
	MaxRetryAfter time.Duration
	// CacheSize bounds the warm cache of completed records; 0 disables it.
	// In-flight records are never cached.
	CacheSize int
	// Protocol is stamped on every record this guard claims. Its zero
	// durations take DefaultInTransitBound and DefaultClockSkew. Wherever T
	// and the skew decide something, the larger of the record's and this
	// guard's is used (Protocol.WaitOut); a take-over needs the same
	// Downstream as the record's (records without one are taken over by
	// any guard).
	Protocol Protocol
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Guard runs the claim / complete / release / take-over state machine over a
// Store. It is safe for concurrent use; correctness never depends on its
// memory (the cache holds only completed, immutable answers).
type Guard struct {
	store Store
	cfg   Config
	cache *cache
}

// NewGuard returns a Guard over store with cfg's zero fields defaulted.
func NewGuard(store Store, cfg Config) *Guard {
	if cfg.Retention <= 0 {
		cfg.Retention = DefaultRetention
	}
	if cfg.LeaseMargin <= 0 {
		cfg.LeaseMargin = DefaultLeaseMargin
	}
	if cfg.DefaultLease <= 0 {
		cfg.DefaultLease = DefaultLease
	}
	if cfg.MaxRetryAfter <= 0 {
		cfg.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if cfg.Protocol.InTransitBound <= 0 {
		cfg.Protocol.InTransitBound = DefaultInTransitBound
	}
	if cfg.Protocol.ClockSkew <= 0 {
		cfg.Protocol.ClockSkew = DefaultClockSkew
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Guard{store: store, cfg: cfg, cache: newCache(cfg.CacheSize)}
}

// Protocol is the protocol this guard claims records under, defaulted.
func (g *Guard) Protocol() Protocol { return g.cfg.Protocol }

// Claim is the successful outcome of Begin: exactly one of Lease and Replay
// is set.
type Claim struct {
	// Lease is set when the caller owns the key and must do the work.
	Lease *Lease
	// Replay is the stored response when the key already completed, and
	// DownstreamKey the key its completed attempt was sent under; Source
	// and ClaimedAt are the record's (Record.Source, Record.CreatedAt):
	// where its first request came from, and when that claimed the key.
	Replay        *Response
	DownstreamKey string
	Source        string
	ClaimedAt     time.Time
}

// Begin claims scope for the request req in one round trip (zero when the
// warm cache holds the completed record).
//
// It returns a Claim with a Lease when the key was absent or expired, or when
// the previous owner's lease expired (a take-over: one more round trip,
// Lease.TakenOver is true); a Claim with Replay when the key completed for the
// same request. Errors: ErrKeyInvalid, ErrKeyMissing or ErrAccountInvalid for
// a bad scope (nothing written); ErrKeyReused when the key holds a different
// request; an *InFlightError (errors.Is ErrInFlight) when another attempt
// holds a live lease, and also when the claim conflicted with another
// region's write on both of its tries, or the take-over on its one
// (ErrWriteConflict: the other region's attempt may hold the key now); ErrHeld when the record is held for an
// operator; ErrOtherDownstream when its lease expired but it was claimed for
// another downstream system; otherwise a wrapped store error. None of these
// writes.
func (g *Guard) Begin(ctx context.Context, scope Scope, req Canonical) (Claim, error) {
	if err := scope.Validate(); err != nil {
		return Claim{}, err
	}
	pk := scope.PK()
	encoded := req.Encode()
	fp := fingerprintEncoded(scope.Operation, encoded)
	now := g.cfg.Now()
	if rec := g.cache.get(pk); rec != nil && rec.Live(now) {
		return answerCompleted(rec, fp)
	}

	rec := Record{
		PK:             pk,
		Operation:      scope.Operation,
		Account:        scope.Account,
		Key:            scope.Key,
		Source:         scope.Source,
		Status:         StatusInProgress,
		Fingerprint:    fp,
		Request:        encoded,
		LeaseToken:     newToken(),
		LeaseExpiresAt: g.leaseUntil(ctx, now),
		Attempt:        1,
		DownstreamKey:  downstreamKey(pk, now),
		Protocol:       g.cfg.Protocol,
		CreatedAt:      now.Truncate(time.Millisecond), // as stores keep it, so the lease's copy equals a later read
		ExpiresAt:      now.Add(g.cfg.Retention),
	}
	var existing *Record
	var ok bool
	err := retryConflicts(ctx, 2, func() (err error) {
		existing, ok, err = g.store.Claim(ctx, rec, now)
		return err
	})
	if errors.Is(err, ErrWriteConflict) {
		return Claim{}, g.conflicted(rec.LeaseExpiresAt, now)
	}
	if err != nil {
		return Claim{}, fmt.Errorf("claim %s: %w", Ref(pk), err)
	}
	if ok {
		return Claim{Lease: &Lease{g: g, rec: rec}}, nil
	}
	if existing.Fingerprint != fp {
		return Claim{}, ErrKeyReused
	}
	if existing.Status == StatusCompleted {
		g.cache.put(existing)
		return replayOf(*existing), nil
	}
	if existing.Held() {
		return Claim{}, fmt.Errorf("claim %s: %w", Ref(pk), ErrHeld)
	}
	if existing.LeaseExpiresAt.After(now) {
		return Claim{}, g.inFlight(existing.LeaseExpiresAt, existing.Protocol, now)
	}
	return g.takeOver(ctx, existing, now)
}

func (g *Guard) inFlight(leaseEnd time.Time, rec Protocol, now time.Time) *InFlightError {
	return &InFlightError{
		RetryAfter: g.retryAfter(leaseEnd.Sub(now)), LeaseExpiresAt: leaseEnd,
		WaitOut: leaseEnd.Sub(now) + g.cfg.Protocol.WaitOut(rec),
	}
}

// conflicted is the answer to a claim that conflicted with another
// region's write, which returned no record: in flight, as if that region's
// attempt held the key until the lease this guard would have taken (until),
// waited out with this guard's own T and skew.
func (g *Guard) conflicted(until, now time.Time) *InFlightError {
	e := g.inFlight(until, Protocol{}, now)
	e.RetryAfter = time.Second
	return e
}

// takeOver takes the expired lease of rec. If another worker changed the
// record first, or the write conflicted with another region's, the key is
// reported in flight: a retry a second later sees whatever that worker did.
func (g *Guard) takeOver(ctx context.Context, rec *Record, now time.Time) (Claim, error) {
	if err := g.sameDownstream(rec); err != nil {
		return Claim{}, err
	}
	until := g.leaseUntil(ctx, now)
	taken, err := g.store.TakeOver(ctx, g.handover(rec, until, now))
	if errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrWriteConflict) {
		e := g.inFlight(until, rec.Protocol, now)
		e.RetryAfter = time.Second
		return Claim{}, e
	}
	if err != nil {
		return Claim{}, fmt.Errorf("take over %s: %w", Ref(rec.PK), err)
	}
	return Claim{Lease: &Lease{g: g, rec: *taken, tookOver: rec.LeaseExpiresAt}}, nil
}

func (g *Guard) sameDownstream(rec *Record) error {
	if rec.Protocol.Downstream != "" && rec.Protocol.Downstream != g.cfg.Protocol.Downstream {
		return fmt.Errorf("take over %s (claimed for %q, this guard sends to %q): %w",
			Ref(rec.PK), rec.Protocol.Downstream, g.cfg.Protocol.Downstream, ErrOtherDownstream)
	}
	return nil
}

// TakeOverStale takes the lease of the in-progress record under pk for a
// reconciler, which has no client request: the record's own canonical
// request is the one to finish. The lease must have ended more than the
// wait-out ago (Protocol.WaitOut of this guard's and the record's), so no
// request of an earlier attempt can still be in transit (DESIGN §4 rule 3)
// and ReleaseReconciled is safe. It returns ErrNotFound when there is no live
// record, ErrLeaseLost when the record is completed, its lease ended too
// recently, or another worker took it first; ErrHeld or ErrOtherDownstream
// as Begin does. Only the take-over writes.
func (g *Guard) TakeOverStale(ctx context.Context, pk string) (*Lease, error) {
	now := g.cfg.Now()
	rec, err := g.store.Get(ctx, pk, now)
	if err != nil {
		return nil, fmt.Errorf("take over %s: %w", Ref(pk), err)
	}
	// The token fence below keeps these checks true until the write: a
	// take-over changes the token, a completion the status, a hold is
	// refused by the store's condition, and Abandon only shortens a lease.
	switch {
	case rec.Held():
		return nil, fmt.Errorf("take over %s: %w", Ref(pk), ErrHeld)
	case rec.Status != StatusInProgress || !rec.LeaseExpiresAt.Add(g.cfg.Protocol.WaitOut(rec.Protocol)).Before(now):
		return nil, fmt.Errorf("take over %s: %w", Ref(pk), ErrLeaseLost)
	}
	return g.take(ctx, rec, now)
}

// take gives rec's lease to this guard (the store's TakeOver, fenced on
// rec's token), once the record's downstream system is this guard's.
func (g *Guard) take(ctx context.Context, rec *Record, now time.Time) (*Lease, error) {
	if err := g.sameDownstream(rec); err != nil {
		return nil, err
	}
	taken, err := g.store.TakeOver(ctx, g.handover(rec, g.leaseUntil(ctx, now), now))
	if err != nil {
		return nil, fmt.Errorf("take over %s: %w", Ref(rec.PK), err)
	}
	return &Lease{g: g, rec: *taken, tookOver: rec.LeaseExpiresAt}, nil
}

// handover is this guard's take-over of rec: a fresh token, the lease until
// until, and the protocol merged with its own.
func (g *Guard) handover(rec *Record, until, now time.Time) Handover {
	return Handover{PK: rec.PK, OldToken: rec.LeaseToken, NewToken: newToken(), LeaseExpiresAt: until, Now: now, Protocol: g.cfg.Protocol.Merge(rec.Protocol)}
}

// TakeOverHeld takes the lease of the held record under pk for an
// operator's decision d (d.Action, d.By, d.Decision; At is set to now),
// written on the hold as its Settling with the take-over. instance, when
// not empty, is the record's DownstreamKey as the operator was shown it:
// a record of another intent of the key is not the one decided on
// (ErrNotFound). The lease must have ended, and for a void
// (SettleVoidConfirmed) it must have ended more than the wait-out ago
// (Protocol.WaitOut), as a release needs (ErrTooEarly, with the time
// left). The record stays held; the returned lease settles it with Accept
// or VoidConfirmed, as d says. Errors: ErrNotFound, ErrNotHeld (a record
// that is not held), ErrTooEarly, ErrOtherDownstream, ErrLeaseLost
// (another operator took it first). Only the take-over writes.
func (g *Guard) TakeOverHeld(ctx context.Context, pk, instance string, d Settlement) (*Lease, error) {
	now := g.cfg.Now()
	rec, err := g.store.Get(ctx, pk, now)
	if err != nil {
		return nil, fmt.Errorf("take over held %s: %w", Ref(pk), err)
	}
	if instance != "" && rec.DownstreamKey != instance {
		return nil, fmt.Errorf("take over held %s: the key's record is another intent than the one decided on: %w", Ref(pk), ErrNotFound)
	}
	if !rec.Held() {
		return nil, fmt.Errorf("take over held %s: %w", Ref(pk), ErrNotHeld)
	}
	waitOut := d.Action == SettleVoidConfirmed
	wait := time.Duration(0)
	if waitOut {
		wait = g.cfg.Protocol.WaitOut(rec.Protocol)
	}
	if left := rec.LeaseExpiresAt.Add(wait).Sub(now); left >= 0 {
		return nil, fmt.Errorf("take over held %s: %w (%s left)", Ref(pk), ErrTooEarly, left.Round(time.Millisecond)+time.Millisecond)
	}
	if err := g.sameDownstream(rec); err != nil {
		return nil, err
	}
	d.At = now
	h := g.handover(rec, g.leaseUntil(ctx, now), now)
	h.Settling = &d
	taken, err := g.store.TakeOverHeld(ctx, h)
	if err != nil {
		return nil, fmt.Errorf("take over held %s: %w", Ref(pk), err)
	}
	return &Lease{g: g, rec: *taken, waitedOut: waitOut, tookOver: rec.LeaseExpiresAt}, nil
}

// ReleaseMarker is the release marker of the intent downstreamKey: which
// decision voided its held record, and when; ErrNotFound when none did.
func (g *Guard) ReleaseMarker(ctx context.Context, downstreamKey string) (*ReleaseMarker, error) {
	m, err := g.store.ReleaseMarker(ctx, downstreamKey)
	if err != nil {
		return nil, fmt.Errorf("release marker: %w", err)
	}
	return m, nil
}

// Probe is Probe on this guard's store, at its clock.
func (g *Guard) Probe(ctx context.Context) error { return Probe(ctx, g.store, g.cfg.Now()) }

// Lookup returns the live record under pk (ErrNotFound if none): what a worker
// that lost its lease reads to learn the outcome.
func (g *Guard) Lookup(ctx context.Context, pk string) (*Record, error) {
	rec, err := g.store.Get(ctx, pk, g.cfg.Now())
	if err != nil {
		return nil, fmt.Errorf("lookup %s: %w", Ref(pk), err)
	}
	return rec, nil
}

// Find reads scope's record without claiming or changing it, for a caller
// that lost track of its request (a lookup by key): the completed record;
// an *InFlightError while its lease is live, or once it has ended and no
// attempt has taken it over yet (the client's retry with the request, or
// the reconciler, resolves it; Find only reports); ErrHeld for a record
// held for an operator; ErrNotFound when the key has no live record (none,
// or expired: Begin would claim it afresh). With an *InFlightError or
// ErrHeld it returns the record too, so a caller can tell which intent of
// the key is in flight (its DownstreamKey). It validates scope as Begin
// does, and reads nothing when the warm cache holds the completed record.
func (g *Guard) Find(ctx context.Context, scope Scope) (*Record, error) {
	if err := scope.Validate(); err != nil {
		return nil, err
	}
	pk := scope.PK()
	now := g.cfg.Now()
	if rec := g.cache.get(pk); rec != nil && rec.Live(now) {
		return rec, nil
	}
	rec, err := g.Lookup(ctx, pk)
	switch {
	case err != nil:
		return nil, err
	case rec.Status == StatusCompleted:
		g.cache.put(rec)
		return rec, nil
	case rec.Held():
		return rec, fmt.Errorf("find %s: %w", Ref(pk), ErrHeld)
	}
	return rec, g.inFlight(rec.LeaseExpiresAt, rec.Protocol, now)
}

func answerCompleted(rec *Record, fp string) (Claim, error) {
	if rec.Fingerprint != fp {
		return Claim{}, ErrKeyReused
	}
	return replayOf(*rec), nil
}

// replayOf is the Claim that replays the completed rec.
func replayOf(rec Record) Claim {
	return Claim{Replay: rec.Response, DownstreamKey: rec.DownstreamKey, Source: rec.Source, ClaimedAt: rec.CreatedAt}
}

// leaseUntil is the context deadline plus the margin: the worker is surely
// gone by then, whatever it was doing.
func (g *Guard) leaseUntil(ctx context.Context, now time.Time) time.Time {
	end := now.Add(g.cfg.DefaultLease)
	if deadline, ok := ctx.Deadline(); ok {
		end = deadline.Add(g.cfg.LeaseMargin)
	}
	// As stores keep it: the lease's own copy then equals what a
	// take-over reads, so no stamp of this lease comes after the end the
	// take-over's floor starts from.
	return end.Truncate(time.Millisecond)
}

func (g *Guard) retryAfter(remaining time.Duration) time.Duration {
	d := remaining.Truncate(time.Second)
	if d < remaining {
		d += time.Second
	}
	return max(time.Second, min(d, g.cfg.MaxRetryAfter.Truncate(time.Second)))
}

// downstreamKey is fixed for the life of one record (DESIGN §4 rule 1): every
// attempt sends it. Mixing in the claim time makes a key reused after its
// retention a new intent downstream as well.
func downstreamKey(pk string, createdAt time.Time) string {
	sum := sha256.Sum256([]byte("downstream/v1\n" + pk + "\n" + strconv.FormatInt(createdAt.UnixNano(), 10)))
	return hex.EncodeToString(sum[:20])
}

// IsDerivedID reports whether id is prefix followed by a downstream key:
// 40 lower-case hexadecimal digits, as every id derived from one (a
// charge's, a refund's) is shaped.
func IsDerivedID(prefix, id string) bool {
	key, ok := strings.CutPrefix(id, prefix)
	if !ok || len(key) != 40 {
		return false
	}
	for _, c := range key {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Ref names a record without revealing its account or key: the first 16 hex
// digits of the SHA-256 of its pk. Errors and logs carry it instead of the
// pk; an operator computes it from the account and key (idemctl inspect).
func Ref(pk string) string {
	sum := sha256.Sum256([]byte(pk))
	return hex.EncodeToString(sum[:8])
}

func newToken() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err))
	}
	return hex.EncodeToString(b[:])
}

// Lease is ownership of one in-progress record. Its methods are fenced on the
// lease token: once the lease is taken over they fail with ErrLeaseLost and
// change nothing. A Lease is used by one goroutine.
type Lease struct {
	g   *Guard
	rec Record
	// waitedOut: the lease came from TakeOverHeld with the wait-out, as
	// VoidConfirmed needs.
	waitedOut bool
	// tookOver is the end of the lease this one took over; zero for a
	// claim.
	tookOver time.Time
	// stamped is the latest Stamp: the lease never ends before it.
	stamped time.Time
}

// Record returns a copy of the record as this lease last wrote it.
func (l *Lease) Record() Record { return l.rec }

// PK is the record's partition key.
func (l *Lease) PK() string { return l.rec.PK }

// Attempt is 1 for the first claim and grows with every take-over.
func (l *Lease) Attempt() int { return l.rec.Attempt }

// TakenOver reports whether an earlier attempt may have sent a request.
func (l *Lease) TakenOver() bool { return l.rec.Attempt > 1 }

// TookOver is when the lease this one took over ended (zero for a
// claim): no write of an earlier attempt was issued after it, since each
// is issued before its invocation's deadline, which comes before its
// lease's end (Stamp).
func (l *Lease) TookOver() time.Time { return l.tookOver }

// Stamp is the guard's clock now, for a write whose store decides by
// when it was issued (a reservation on a balance), and ok false when the
// lease has ended: no such write is issued after its lease's end. The
// lease never ends before its Floor (its latest stamp, or the end of the
// lease it took over), even when Abandon or HoldForOperator end it early
// by a clock that stepped back, so a take-over's TookOver comes after
// every stamp of the earlier attempts, however many took over before.
func (l *Lease) Stamp() (t time.Time, ok bool) {
	now := l.g.cfg.Now()
	if !now.Before(l.rec.LeaseExpiresAt) {
		return time.Time{}, false
	}
	if now.After(l.stamped) {
		l.stamped = now
	}
	return now, true
}

// Floor is what a fold of this lease's intent (a balance's step that
// refuses every reservation issued before it) must reach at least: the
// latest Stamp, or the end of the lease this one took over, whichever is
// later.
func (l *Lease) Floor() time.Time {
	if l.stamped.After(l.tookOver) {
		return l.stamped
	}
	return l.tookOver
}

// earlyEnd is when a lease ended early ends: now, never after its end
// and never before its floor (its latest stamp, or the end of the lease
// it took over), so that a chain of take-overs' floors never falls back,
// whatever the clocks do. It is on a millisecond, as stores keep it:
// rounded down, unless that would fall before the floor, and then the
// millisecond after the floor, so what a take-over reads is never before
// the floor. (The lease's end is on a millisecond already, leaseUntil,
// and the floor is before it, so that never makes the lease longer.)
func (l *Lease) earlyEnd(now time.Time) time.Time {
	end := now
	if l.rec.LeaseExpiresAt.Before(end) { // never longer
		end = l.rec.LeaseExpiresAt
	}
	floor := l.Floor()
	if end.Before(floor) {
		end = floor
	}
	if end = end.Truncate(time.Millisecond); end.Before(floor) {
		end = end.Add(time.Millisecond)
	}
	return end
}

// DownstreamKey is the idempotency key to send downstream, the same for every
// attempt of this record.
func (l *Lease) DownstreamKey() string { return l.rec.DownstreamKey }

// Request is the canonical request the record was claimed for.
func (l *Lease) Request() (Canonical, error) { return DecodeCanonical(l.rec.Request) }

// ExpiresAt is when the lease ends.
func (l *Lease) ExpiresAt() time.Time { return l.rec.LeaseExpiresAt }

// TimeLeft is how long the lease still runs. DESIGN §4 rule 3: send
// downstream only while TimeLeft is at least WaitOut.
func (l *Lease) TimeLeft() time.Duration { return l.rec.LeaseExpiresAt.Sub(l.g.cfg.Now()) }

// WaitOut is the in-transit bound plus the skew margin that hold for this
// record: the larger of the record's and the guard's (Protocol.WaitOut).
func (l *Lease) WaitOut() time.Duration { return l.g.cfg.Protocol.WaitOut(l.rec.Protocol) }

// SendContext bounds one call downstream under this lease: timeout, the
// context's deadline less reserve (kept to store the outcome), and the
// lease's end. It refuses (ok false) when the lease has less than its
// WaitOut left (DESIGN §4 rule 3: a request sent now must be processed
// before anyone may take the record over and ask), or no time is left for
// the call. Every path that sends downstream asks it first. The deadline
// is a wall-clock instant, so the guard's clock must be the wall clock's
// (time.Now, as in production).
func (l *Lease) SendContext(ctx context.Context, timeout, reserve time.Duration) (context.Context, context.CancelFunc, bool) {
	if l.TimeLeft() < l.WaitOut() {
		return nil, nil, false
	}
	now := l.g.cfg.Now()
	deadline := now.Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Add(-reserve).Before(deadline) {
		deadline = d.Add(-reserve)
	}
	if l.rec.LeaseExpiresAt.Before(deadline) {
		deadline = l.rec.LeaseExpiresAt
	}
	if !deadline.After(now) {
		return nil, nil, false
	}
	callCtx, cancel := context.WithDeadline(ctx, deadline)
	return callCtx, cancel, true
}

// Complete stores resp as the answer for the key in one fenced write.
// Whatever else must exist first (a ledger row) the caller writes before.
// Errors: ErrHeld on a held record's lease (Accept settles it), ErrLeaseLost
// (the lease was taken over or the record resolved: nothing written), or a
// store error.
func (l *Lease) Complete(ctx context.Context, resp Response) error {
	if l.rec.Held() {
		return fmt.Errorf("complete %s: %w", Ref(l.rec.PK), ErrHeld)
	}
	return l.complete(ctx, resp, nil)
}

// Accept settles a held record as the operator's decision its lease was
// taken for (Guard.TakeOverHeld with SettleAccept): it completes it with
// resp (built from downstream's own terms; whatever must exist first, the
// caller writes before), records the settlement (SettleAccept, who, the
// decision's id, now) and starts the record's retention again from now,
// so the key is remembered for a whole retention after the decision.
// Errors: ErrNotHeld (nothing written; also for a lease taken for another
// decision), ErrLeaseLost, or a store error.
func (l *Lease) Accept(ctx context.Context, resp Response) error {
	if !l.rec.Held() || l.rec.Hold.Settling == nil || l.rec.Hold.Settling.Action != SettleAccept {
		return fmt.Errorf("accept %s: %w", Ref(l.rec.PK), ErrNotHeld)
	}
	settled := *l.rec.Hold.Settling
	settled.At = l.g.cfg.Now()
	return l.complete(ctx, resp, &settled)
}

func (l *Lease) complete(ctx context.Context, resp Response, settled *Settlement) error {
	expiresAt := l.rec.ExpiresAt
	if settled != nil {
		expiresAt = settled.At.Add(l.g.cfg.Retention)
	}
	if err := RetryConflicts(ctx, func() error {
		return l.g.store.Complete(ctx, l.rec.PK, l.rec.LeaseToken, resp, settled, expiresAt)
	}); err != nil {
		return fmt.Errorf("complete %s: %w", Ref(l.rec.PK), err)
	}
	done := l.rec
	done.Status = StatusCompleted
	done.Response = &resp
	done.Request = nil
	if settled != nil {
		h := *done.Hold
		h.Settlement = settled
		done.Hold, done.ExpiresAt = &h, expiresAt
	}
	l.rec = done
	l.g.cache.put(&done)
	return nil
}

// Release frees the key so the next request executes anew. Call it only when
// provably nothing was sent downstream. It returns ErrReleaseRefused without
// writing after a take-over (DESIGN §4 rule 2), ErrLeaseLost if the lease is
// no longer this one's.
func (l *Lease) Release(ctx context.Context) error {
	if l.rec.Held() {
		return fmt.Errorf("release %s: %w", Ref(l.rec.PK), ErrHeld)
	}
	if l.TakenOver() {
		return fmt.Errorf("release %s (attempt %d): %w", Ref(l.rec.PK), l.rec.Attempt, ErrReleaseRefused)
	}
	return l.release(ctx)
}

// ReleaseReconciled frees the key after a reconciler learned downstream that
// no request for DownstreamKey exists. This is safe after a take-over only
// because the reconciler acts on leases expired for longer than WaitOut
// (DESIGN §4 rule 3), so nothing is still in transit. Errors as for
// Release, never ErrReleaseRefused; ErrHeld on a held record's lease.
func (l *Lease) ReleaseReconciled(ctx context.Context) error {
	if l.rec.Held() {
		return fmt.Errorf("release %s: %w", Ref(l.rec.PK), ErrHeld)
	}
	return l.release(ctx)
}

// VoidConfirmed settles a held record on an operator's word that the
// effect downstream was voided: it writes the release marker of the
// record's intent (the decision its lease was taken for: who, its id, the
// take-over's time), then frees the key, so the client's retry executes
// anew (under a new downstream key, since the claim time is in it). It is
// the one release after a take-over that rule 2 allows, and only because
// the lease came from TakeOverHeld with its wait-out: nothing is in
// transit. The marker comes first so that it outlives the delete: a
// marker without the delete is one whose decision did not finish, and the
// record is still there to say so. Errors: ErrNotHeld or ErrTooEarly (a
// lease taken without the wait-out; nothing written), ErrOtherDecision
// (a later take-over's marker: nothing written), ErrLeaseLost, or a store
// error.
func (l *Lease) VoidConfirmed(ctx context.Context) error {
	switch {
	case !l.rec.Held():
		return fmt.Errorf("void-confirmed %s: %w", Ref(l.rec.PK), ErrNotHeld)
	case !l.waitedOut || l.rec.Hold.Settling == nil:
		return fmt.Errorf("void-confirmed %s: %w (the lease was taken without the wait-out)", Ref(l.rec.PK), ErrTooEarly)
	}
	m := ReleaseMarker{DownstreamKey: l.rec.DownstreamKey, PK: l.rec.PK, Attempt: l.rec.Attempt, Decision: *l.rec.Hold.Settling}
	if err := RetryConflicts(ctx, func() error { return l.g.store.MarkRelease(ctx, m) }); err != nil {
		return fmt.Errorf("void-confirmed %s: mark the release: %w", Ref(l.rec.PK), err)
	}
	return l.release(ctx)
}

// HoldForOperator holds the record: downstream answered, but the answer
// disagrees with the request, and only a person can say which side is
// right. The lease ends now and this Lease can write nothing more (the
// record's token changes to one no lease knows); the record stays in
// flight, never expires, is never taken over or reconciled, and leaves the
// in-flight listing for the held one, until an operator settles it
// (Guard.TakeOverHeld). Errors: ErrLeaseLost (nothing written), or a store
// error.
func (l *Lease) HoldForOperator(ctx context.Context, reason string, evidence []byte) error {
	now := l.g.cfg.Now()
	end := l.earlyEnd(now)
	hold := Hold{Reason: reason, Evidence: evidence, At: now}
	heldToken := newToken()
	if err := RetryConflicts(ctx, func() error { return l.g.store.Hold(ctx, l.rec.PK, l.rec.LeaseToken, heldToken, hold, end) }); err != nil {
		return fmt.Errorf("hold %s: %w", Ref(l.rec.PK), err)
	}
	l.rec.Hold, l.rec.LeaseExpiresAt, l.rec.ExpiresAt, l.rec.LeaseToken = &hold, end, time.Time{}, ""
	return nil
}

func (l *Lease) release(ctx context.Context) error {
	if err := RetryConflicts(ctx, func() error { return l.g.store.Release(ctx, l.rec.PK, l.rec.LeaseToken) }); err != nil {
		return fmt.Errorf("release %s: %w", Ref(l.rec.PK), err)
	}
	return nil
}

// Abandon ends the lease now, leaving the record in flight: the outcome
// downstream is unknown, so a retry may take over at once and ask downstream
// by DownstreamKey. It only ever shortens the lease: a worker abandoning
// after its lease ended must not make the record look fresher to the
// sweeper. It never ends the lease before its Floor. Errors:
// ErrLeaseLost, or a store error.
func (l *Lease) Abandon(ctx context.Context) error {
	end := l.earlyEnd(l.g.cfg.Now())
	if err := RetryConflicts(ctx, func() error { return l.g.store.SetLease(ctx, l.rec.PK, l.rec.LeaseToken, end) }); err != nil {
		return fmt.Errorf("abandon %s: %w", Ref(l.rec.PK), err)
	}
	l.rec.LeaseExpiresAt = end
	return nil
}

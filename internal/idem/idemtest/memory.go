// Package idemtest has an in-memory idem.Store and the conformance suite
// every Store must pass.
package idemtest

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/idempotent-payments/idempay/internal/idem"
)

// MemoryStore is an idem.Store in memory with the same semantics as the
// DynamoDB store, including logical expiry. For unit tests and benchmarks.
type MemoryStore struct {
	mu      sync.Mutex
	records map[string]idem.Record
	markers map[string]idem.ReleaseMarker // by downstream key
}

// NewMemoryStore returns an empty store.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{records: map[string]idem.Record{}, markers: map[string]idem.ReleaseMarker{}}
}

// Claim implements idem.Store.
func (m *MemoryStore) Claim(_ context.Context, rec idem.Record, now time.Time) (*idem.Record, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.live(rec.PK, now); ok {
		return clone(old), false, nil
	}
	m.records[rec.PK] = *clone(rec)
	return nil, true, nil
}

// Get implements idem.Store.
func (m *MemoryStore) Get(_ context.Context, pk string, now time.Time) (*idem.Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec, ok := m.live(pk, now)
	if !ok {
		return nil, idem.ErrNotFound
	}
	return clone(rec), nil
}

// TakeOver implements idem.Store.
func (m *MemoryStore) TakeOver(_ context.Context, h idem.Handover) (*idem.Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec, ok := m.held(h.PK, h.OldToken)
	if !ok || rec.Hold != nil || !rec.LeaseExpiresAt.Before(h.Now) || !rec.Live(h.Now) {
		return nil, idem.ErrLeaseLost
	}
	return m.takeOver(rec, h), nil
}

// TakeOverHeld implements idem.Store.
func (m *MemoryStore) TakeOverHeld(_ context.Context, h idem.Handover) (*idem.Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec, ok := m.held(h.PK, h.OldToken)
	if !ok || rec.Hold == nil || !rec.LeaseExpiresAt.Before(h.Now) {
		return nil, idem.ErrLeaseLost
	}
	hold := *rec.Hold
	if h.Settling != nil {
		settling := *h.Settling
		hold.Settling = &settling
	}
	rec.Hold = &hold
	return m.takeOver(rec, h), nil
}

func (m *MemoryStore) takeOver(rec idem.Record, h idem.Handover) *idem.Record {
	rec.LeaseToken = h.NewToken
	rec.LeaseExpiresAt = h.LeaseExpiresAt
	downstream := rec.Protocol.Downstream
	rec.Protocol = h.Protocol
	if rec.Protocol.Downstream == "" { // as DynamoDB's SET, which writes it only when given
		rec.Protocol.Downstream = downstream
	}
	rec.Attempt++
	m.records[rec.PK] = rec
	return clone(rec)
}

// Hold implements idem.Store.
func (m *MemoryStore) Hold(_ context.Context, pk, token, heldToken string, hold idem.Hold, leaseExpiresAt time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec, ok := m.held(pk, token)
	if !ok || rec.Hold != nil {
		return idem.ErrLeaseLost
	}
	hold.Evidence = slices.Clone(hold.Evidence)
	rec.Hold, rec.LeaseExpiresAt, rec.ExpiresAt, rec.LeaseToken = &hold, leaseExpiresAt, time.Time{}, heldToken
	m.records[pk] = rec
	return nil
}

// SetLease implements idem.Store.
func (m *MemoryStore) SetLease(_ context.Context, pk, token string, leaseExpiresAt time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec, ok := m.held(pk, token)
	if !ok {
		return idem.ErrLeaseLost
	}
	rec.LeaseExpiresAt = leaseExpiresAt
	m.records[pk] = rec
	return nil
}

// Complete implements idem.Store.
func (m *MemoryStore) Complete(_ context.Context, pk, token string, resp idem.Response, settled *idem.Settlement, expiresAt time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec, ok := m.held(pk, token)
	if !ok || (settled != nil) != (rec.Hold != nil) {
		return idem.ErrLeaseLost
	}
	if settled != nil {
		h := *rec.Hold
		s := *settled
		h.Settlement = &s
		rec.Hold, rec.ExpiresAt = &h, expiresAt
	}
	rec.Status = idem.StatusCompleted
	rec.Response = &idem.Response{StatusCode: resp.StatusCode, Headers: maps.Clone(resp.Headers), Body: slices.Clone(resp.Body), Result: maps.Clone(resp.Result)}
	rec.Request = nil
	m.records[pk] = rec
	return nil
}

// Release implements idem.Store.
func (m *MemoryStore) Release(_ context.Context, pk, token string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.held(pk, token); !ok {
		return idem.ErrLeaseLost
	}
	delete(m.records, pk)
	return nil
}

// MarkRelease implements idem.Store.
func (m *MemoryStore) MarkRelease(_ context.Context, marker idem.ReleaseMarker) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.markers[marker.DownstreamKey]; ok && old.Attempt > marker.Attempt {
		return idem.ErrOtherDecision
	}
	m.markers[marker.DownstreamKey] = marker
	return nil
}

// ReleaseMarker implements idem.Store.
func (m *MemoryStore) ReleaseMarker(_ context.Context, downstreamKey string) (*idem.ReleaseMarker, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	marker, ok := m.markers[downstreamKey]
	if !ok {
		return nil, idem.ErrNotFound
	}
	return &marker, nil
}

// ListInFlight implements idem.Store. Times compare in whole milliseconds,
// as DynamoDB stores them.
func (m *MemoryStore) ListInFlight(_ context.Context, q idem.InFlightQuery) ([]idem.InFlight, bool, error) {
	if err := q.Validate(); err != nil {
		return nil, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var all []idem.InFlight
	for _, rec := range m.records {
		if rec.Status != idem.StatusInProgress || rec.LeaseExpiresAt.UnixMilli() >= q.EndedBefore.UnixMilli() ||
			(q.Held != (rec.Hold != nil)) || (!q.Held && idem.ShardOf(rec.PK) != q.Shard) {
			continue
		}
		e := idem.InFlight{PK: rec.PK, LeaseToken: rec.LeaseToken, LeaseExpiresAt: rec.LeaseExpiresAt, StaleAt: rec.StaleAt, ReconcileAttempts: rec.ReconcileAttempts}
		if q.After == nil || listedBefore(*q.After, e) {
			all = append(all, e)
		}
	}
	slices.SortFunc(all, func(a, b idem.InFlight) int {
		if listedBefore(a, b) {
			return -1
		}
		return 1
	})
	if len(all) > q.Limit {
		return all[:q.Limit], true, nil
	}
	return all, false, nil
}

// listedBefore orders the listing: by lease end, then by PK.
func listedBefore(a, b idem.InFlight) bool {
	if x, y := a.LeaseExpiresAt.UnixMilli(), b.LeaseExpiresAt.UnixMilli(); x != y {
		return x < y
	}
	return a.PK < b.PK
}

// Flag implements idem.Store.
func (m *MemoryStore) Flag(_ context.Context, e idem.InFlight, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec, ok := m.held(e.PK, e.LeaseToken)
	if !ok || rec.Hold != nil || rec.StaleAt.IsZero() != e.StaleAt.IsZero() || rec.StaleAt.UnixMilli() != e.StaleAt.UnixMilli() {
		return idem.ErrLeaseLost
	}
	rec.StaleAt = time.UnixMilli(now.UnixMilli())
	rec.ReconcileAttempts++
	m.records[e.PK] = rec
	return nil
}

// ListExpired implements idem.Store. Times compare in whole seconds, as
// the DynamoDB store keeps ExpiresAt.
func (m *MemoryStore) ListExpired(_ context.Context, q idem.ExpiredQuery) ([]idem.Expired, bool, error) {
	if err := q.Validate(); err != nil {
		return nil, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var all []idem.Expired
	for _, rec := range m.records {
		if rec.ExpiresAt.IsZero() || idem.ExpiryBucket(rec.PK, rec.ExpiresAt) != q.Bucket || rec.ExpiresAt.Unix() >= q.Before.Unix() {
			continue
		}
		e := idem.Expired{PK: rec.PK, ExpiresAt: time.Unix(rec.ExpiresAt.Unix(), 0)}
		if q.After != nil && !expiredBefore(*q.After, e) {
			continue
		}
		all = append(all, e)
	}
	slices.SortFunc(all, func(a, b idem.Expired) int {
		if expiredBefore(a, b) {
			return -1
		}
		return 1
	})
	if len(all) > q.Limit {
		return all[:q.Limit], true, nil
	}
	return all, false, nil
}

// expiredBefore orders the expired listing as the index does: by
// ExpiresAt in seconds, then by key.
func expiredBefore(a, b idem.Expired) bool {
	if a.ExpiresAt.Unix() != b.ExpiresAt.Unix() {
		return a.ExpiresAt.Unix() < b.ExpiresAt.Unix()
	}
	return a.PK < b.PK
}

// Purge implements idem.Store.
func (m *MemoryStore) Purge(_ context.Context, e idem.Expired, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	rec, ok := m.records[e.PK]
	if !ok || rec.ExpiresAt.IsZero() || rec.ExpiresAt.Unix() != e.ExpiresAt.Unix() || rec.ExpiresAt.Unix() >= now.Unix() {
		return idem.ErrNotExpired
	}
	delete(m.records, e.PK)
	return nil
}

// Put writes rec as it is, replacing any record: for tests that need a state
// the Guard would not produce by itself (an expired record TTL has not
// deleted yet, say).
func (m *MemoryStore) Put(rec idem.Record) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.records[rec.PK] = *clone(rec)
}

func (m *MemoryStore) live(pk string, now time.Time) (idem.Record, bool) {
	rec, ok := m.records[pk]
	if !ok || !rec.Live(now) {
		return idem.Record{}, false
	}
	return rec, true
}

// held returns the in-progress record under pk if token holds its lease.
// Like the DynamoDB conditions, it ignores expiry: a lease holder may finish.
func (m *MemoryStore) held(pk, token string) (idem.Record, bool) {
	rec, ok := m.records[pk]
	if !ok || rec.Status != idem.StatusInProgress || rec.LeaseToken != token {
		return idem.Record{}, false
	}
	return rec, true
}

func clone(rec idem.Record) *idem.Record {
	rec.Request = slices.Clone(rec.Request)
	if rec.Hold != nil {
		h := *rec.Hold
		h.Evidence = slices.Clone(h.Evidence)
		if h.Settlement != nil {
			s := *h.Settlement
			h.Settlement = &s
		}
		if h.Settling != nil {
			s := *h.Settling
			h.Settling = &s
		}
		rec.Hold = &h
	}
	if rec.Response != nil {
		r := *rec.Response
		r.Headers = maps.Clone(r.Headers)
		r.Body = slices.Clone(r.Body)
		r.Result = maps.Clone(r.Result)
		rec.Response = &r
	}
	return &rec
}

package op_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/idem/idemtest"
	"github.com/idempotent-payments/idempay/internal/op"
)

// steps is a planted operation with a bound: it writes down each step
// op.Run takes, and answers as its fields say.
type steps struct {
	taken    []string
	notReady bool
	reserved bool  // Reserve ends the attempt (a refusal)
	asked    error // what Ask answers: nil (found), ErrNotFound, a mismatch
	sent     []error
	mismatch bool // Verify disagrees
	// recordAtRelease is whether the record was there when the bound
	// gave its reservation back.
	recordAtRelease bool
	guard           *idem.Guard
}

type result struct {
	outcome op.Outcome
	step    string
}

func (s *steps) Ended(e op.Early) result { return result{outcome: e.Outcome} }

func (s *steps) Ready(context.Context, *idem.Lease) *result {
	s.taken = append(s.taken, "ready")
	if s.notReady {
		return &result{outcome: op.NotRefundable, step: "ready"}
	}
	return nil
}

func (s *steps) Reserve(context.Context, *idem.Lease) *result {
	s.taken = append(s.taken, "reserve")
	if s.reserved {
		return &result{outcome: op.Executed, step: "reserve"}
	}
	return nil
}

func (s *steps) Refence(context.Context, *idem.Lease) *result {
	s.taken = append(s.taken, "refence")
	return nil
}

func (s *steps) Unsent(context.Context, *idem.Lease) *result {
	s.taken = append(s.taken, "unsent")
	return nil
}

func (s *steps) Release(ctx context.Context, lease *idem.Lease) error {
	s.taken = append(s.taken, "release")
	_, err := s.guard.Lookup(ctx, lease.PK())
	s.recordAtRelease = err == nil
	return nil
}

func (s *steps) Ask(context.Context, *idem.Lease) (string, error) {
	s.taken = append(s.taken, "ask")
	return "found", s.asked
}

func (s *steps) Send(context.Context, *idem.Lease) (string, error) {
	s.taken = append(s.taken, "send")
	err := s.sent[0]
	s.sent = s.sent[1:]
	return "sent", err
}

func (s *steps) Verify(context.Context, *idem.Lease, string) error {
	s.taken = append(s.taken, "verify")
	if s.mismatch {
		return fmt.Errorf("%w: planted", acquirer.ErrMismatch)
	}
	return nil
}

func (s *steps) Finish(_ context.Context, _ *idem.Lease, ans string) result {
	s.taken = append(s.taken, "finish:"+ans)
	return result{outcome: op.Executed, step: "finish"}
}

func (s *steps) Hold(context.Context, *idem.Lease, error) (result, bool) {
	s.taken = append(s.taken, "hold")
	return result{outcome: op.Mismatch}, true
}

// failingRelease is a store whose record deletes fail.
type failingRelease struct{ idem.Store }

func (failingRelease) Release(context.Context, string, string) error {
	return errors.New("the delete failed")
}

var (
	errNotSent = fmt.Errorf("%w: refused", acquirer.ErrNotSent)
	errUnknown = fmt.Errorf("%w: timed out", acquirer.ErrOutcomeUnknown)
	errRotated = fmt.Errorf("%w: %w", acquirer.ErrNotSent, acquirer.ErrCredentialChanged)
	errNone    = fmt.Errorf("%w: none", acquirer.ErrNotFound)
)

// TestRun: op.Run takes every operation's steps in the one order, and
// ends each path as DESIGN §4 says (rule 2: only a first attempt that
// sent nothing releases, its reservation before its key).
func TestRun(t *testing.T) {
	for _, tc := range []struct {
		name      string
		takenOver bool
		failing   bool // the store fails the record's delete
		steps     steps
		want      []string
		outcome   op.Outcome
		// status is the record's afterwards ("" for none).
		status idem.Status
	}{
		{name: "answered", steps: steps{sent: []error{nil}},
			want: []string{"ready", "reserve", "send", "verify", "finish:sent"}, outcome: op.Executed, status: idem.StatusInProgress},
		{name: "not ready: the key released", steps: steps{notReady: true},
			want: []string{"ready"}, outcome: op.NotRefundable},
		{name: "not ready, the release failing", failing: true, steps: steps{notReady: true},
			want: []string{"ready"}, outcome: op.Unavailable, status: idem.StatusInProgress},
		{name: "the bound refuses", steps: steps{reserved: true},
			want: []string{"ready", "reserve"}, outcome: op.Executed, status: idem.StatusInProgress},
		{name: "not sent: the reservation, then the key", steps: steps{sent: []error{errNotSent}},
			want: []string{"ready", "reserve", "send", "release"}, outcome: op.Released},
		{name: "not sent, the release failing", failing: true, steps: steps{sent: []error{errNotSent}},
			want: []string{"ready", "reserve", "send", "release"}, outcome: op.Unavailable, status: idem.StatusInProgress},
		{name: "a errRotated credential: sent once more", steps: steps{sent: []error{errRotated, nil}},
			want: []string{"ready", "reserve", "send", "send", "verify", "finish:sent"}, outcome: op.Executed, status: idem.StatusInProgress},
		{name: "unknown: left in flight", steps: steps{sent: []error{errUnknown}},
			want: []string{"ready", "reserve", "send"}, outcome: op.Pending, status: idem.StatusInProgress},
		{name: "disagrees: held", steps: steps{sent: []error{nil}, mismatch: true},
			want: []string{"ready", "reserve", "send", "verify", "hold"}, outcome: op.Mismatch, status: idem.StatusInProgress},
		{name: "taken over, found", takenOver: true, steps: steps{},
			want: []string{"ready", "refence", "ask", "finish:found"}, outcome: op.Executed, status: idem.StatusInProgress},
		{name: "taken over, none: sent", takenOver: true, steps: steps{asked: errNone, sent: []error{nil}},
			want: []string{"ready", "refence", "ask", "unsent", "send", "verify", "finish:sent"}, outcome: op.Executed, status: idem.StatusInProgress},
		{name: "taken over, disagrees: held", takenOver: true, steps: steps{asked: fmt.Errorf("%w: planted", acquirer.ErrMismatch)},
			want: []string{"ready", "refence", "ask", "hold"}, outcome: op.Mismatch, status: idem.StatusInProgress},
		{name: "taken over, the lookup failing", takenOver: true, steps: steps{asked: errUnknown},
			want: []string{"ready", "refence", "ask"}, outcome: op.Pending, status: idem.StatusInProgress},
		{name: "taken over, not sent: no release (rule 2)", takenOver: true, steps: steps{asked: errNone, sent: []error{errNotSent}},
			want: []string{"ready", "refence", "ask", "unsent", "send"}, outcome: op.Pending, status: idem.StatusInProgress},
		{name: "taken over, not ready: left for the reconciler", takenOver: true, steps: steps{notReady: true},
			want: []string{"ready"}, outcome: op.Pending, status: idem.StatusInProgress},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			clock := idemtest.NewClock(time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC))
			var store idem.Store = idemtest.NewMemoryStore()
			if tc.failing {
				store = failingRelease{store}
			}
			guard := idem.NewGuard(store, idem.Config{Now: clock.Now})
			scope := idem.Scope{Operation: "planted", Account: "acct_1", Key: "key-of-the-test"}
			req := idem.Canonical{{Name: "amount", Value: "100"}}
			claim, err := guard.Begin(ctx, scope, req)
			if err != nil {
				t.Fatal(err)
			}
			if tc.takenOver {
				if err := claim.Lease.Abandon(ctx); err != nil {
					t.Fatal(err)
				}
				clock.Advance(time.Minute)
				if claim, err = guard.Begin(ctx, scope, req); err != nil || !claim.Lease.TakenOver() {
					t.Fatalf("the take-over: %v", err)
				}
			}
			f := op.Frame{Guard: guard, RetryAfter: time.Second, HeldRetryAfter: time.Minute,
				AcquirerTimeout: time.Second, StoreReserve: time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
			s := tc.steps
			s.guard = guard
			res := op.Run[string, result](ctx, f, claim.Lease, &s, &s)
			if !slices.Equal(s.taken, tc.want) || res.outcome != tc.outcome {
				t.Fatalf("steps %v, %s; want %v, %s", s.taken, res.outcome, tc.want, tc.outcome)
			}
			if slices.Contains(s.taken, "release") && !s.recordAtRelease {
				t.Error("the key was released before the reservation")
			}
			rec, err := guard.Lookup(ctx, scope.PK())
			switch {
			case tc.status == "" && !errors.Is(err, idem.ErrNotFound):
				t.Errorf("the record: %v, want it released", err)
			case tc.status != "" && (err != nil || rec.Status != tc.status):
				t.Errorf("the record: %v, want %s", err, tc.status)
			}
		})
	}
}

// TestRunWithoutABound: an operation without a bound (a charge) takes
// the same path with no bound steps.
func TestRunWithoutABound(t *testing.T) {
	ctx := context.Background()
	guard := idem.NewGuard(idemtest.NewMemoryStore(), idem.Config{})
	scope := idem.Scope{Operation: "planted", Account: "acct_1", Key: "key-of-the-test"}
	claim, err := guard.Begin(ctx, scope, idem.Canonical{{Name: "amount", Value: "100"}})
	if err != nil {
		t.Fatal(err)
	}
	s := steps{sent: []error{errNotSent}}
	f := op.Frame{Guard: guard, RetryAfter: time.Second, AcquirerTimeout: time.Second, StoreReserve: time.Second, Logger: slog.Default()}
	if res := op.Run[string, result](ctx, f, claim.Lease, &s, nil); res.outcome != op.Released || !slices.Equal(s.taken, []string{"ready", "send"}) {
		t.Fatalf("%v, %s", s.taken, res.outcome)
	}
	if _, err := guard.Lookup(ctx, scope.PK()); !errors.Is(err, idem.ErrNotFound) {
		t.Fatalf("the record: %v, want it released", err)
	}
}

// rowsOf is a planted operation's rows: one row per id, the first wins.
type rowsOf struct {
	rows map[string]string
	err  error
}

func (r *rowsOf) Write(_ context.Context, row string) (string, error) {
	if r.err != nil {
		return "", r.err
	}
	if old, ok := r.rows["id"]; ok {
		return old, nil
	}
	r.rows["id"] = row
	return row, nil
}

func (r *rowsOf) Get(context.Context, string) (string, error) { return r.rows["id"], nil }
func (r *rowsOf) Void(context.Context, string) error          { return nil }

// storing is a planted operation's Storing: it writes down its steps.
type storing struct {
	taken         []string
	refuse, close bool
}

func (s *storing) Ended(e op.Early) result { return result{outcome: e.Outcome} }

func (s *storing) Kept(_ context.Context, _ *idem.Lease, stored, row string) *result {
	s.taken = append(s.taken, "kept:"+stored)
	if s.refuse && stored != row {
		return &result{outcome: op.Mismatch}
	}
	return nil
}

func (s *storing) Close(context.Context, *idem.Lease, string) *result {
	s.taken = append(s.taken, "close")
	if s.close {
		return &result{outcome: op.Pending}
	}
	return nil
}

func (s *storing) Complete(_ context.Context, _ *idem.Lease, stored string) result {
	s.taken = append(s.taken, "complete:"+stored)
	return result{outcome: op.Executed}
}

var errVoided = errors.New("voided")

// TestStore: op.Store writes the row, lets the operation check the row
// as stored, then closes the bound and completes; a voided intent and a
// failed write end it before anything else, the record left in flight.
func TestStore(t *testing.T) {
	for _, tc := range []struct {
		name    string
		rows    rowsOf
		st      storing
		want    []string
		outcome op.Outcome
	}{
		{name: "written", rows: rowsOf{rows: map[string]string{}},
			want: []string{"kept:mine", "close", "complete:mine"}, outcome: op.Executed},
		{name: "an earlier row wins", rows: rowsOf{rows: map[string]string{"id": "theirs"}},
			want: []string{"kept:theirs", "close", "complete:theirs"}, outcome: op.Executed},
		{name: "an earlier row refused", rows: rowsOf{rows: map[string]string{"id": "theirs"}}, st: storing{refuse: true},
			want: []string{"kept:theirs"}, outcome: op.Mismatch},
		{name: "the bound does not close", rows: rowsOf{rows: map[string]string{}}, st: storing{close: true},
			want: []string{"kept:mine", "close"}, outcome: op.Pending},
		{name: "voided", rows: rowsOf{err: errVoided}, outcome: op.Pending},
		{name: "the write fails", rows: rowsOf{err: errors.New("throttled")}, outcome: op.Pending},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			guard := idem.NewGuard(idemtest.NewMemoryStore(), idem.Config{})
			claim, err := guard.Begin(ctx, idem.Scope{Operation: "planted", Account: "acct_1", Key: "key-of-the-test"}, idem.Canonical{{Name: "amount", Value: "1"}})
			if err != nil {
				t.Fatal(err)
			}
			f := op.Frame{Guard: guard, RetryAfter: time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
			res := op.Store[string, result](ctx, f, claim.Lease, &tc.rows, "mine", errVoided, &tc.st)
			if !slices.Equal(tc.st.taken, tc.want) || res.outcome != tc.outcome {
				t.Fatalf("steps %v, %s; want %v, %s", tc.st.taken, res.outcome, tc.want, tc.outcome)
			}
		})
	}
}

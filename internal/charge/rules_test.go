package charge_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/acquirer/acquirerhttp"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/charge/chargetest"
	"github.com/idempotent-payments/idempay/internal/httpapi"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/idem/idemtest"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/sandbox"
)

// scripted is an acquirer whose answers the test sets, counting calls; it
// keeps how long the last lookup was given.
type scripted struct {
	authorize  func() (acquirer.Authorization, error)
	lookup     func() (acquirer.Authorization, error)
	authorized atomic.Int64
	lookupFor  atomic.Int64 // the last lookup's time to its deadline (ns); -1: none
}

func (s *scripted) Authorize(context.Context, string, acquirer.Request) (acquirer.Authorization, error) {
	s.authorized.Add(1)
	return s.authorize()
}

func (s *scripted) Lookup(ctx context.Context, _ string) (acquirer.Authorization, error) {
	s.lookupFor.Store(-1)
	if deadline, ok := ctx.Deadline(); ok {
		s.lookupFor.Store(int64(time.Until(deadline)))
	}
	return s.lookup()
}

var (
	refused = func() (acquirer.Authorization, error) {
		return acquirer.Authorization{}, fmt.Errorf("%w: refused", acquirer.ErrNotSent)
	}
	absent   = func() (acquirer.Authorization, error) { return acquirer.Authorization{}, acquirer.ErrNotFound }
	captured = func() (acquirer.Authorization, error) {
		return acquirer.Authorization{ID: "auth_1", Status: acquirer.StatusCaptured, Amount: 100, Currency: "BRL"}, nil
	}
)

const body = `{"amount": 100, "currency": "BRL", "order_id": "1", "payment_method": "pm_card_visa"}`

func status(t *testing.T, guard *idem.Guard, account, key string) (idem.Status, int) {
	t.Helper()
	rec, err := guard.Lookup(context.Background(), idem.Scope{Operation: charge.Operation, Account: account, Key: key}.PK())
	if err != nil {
		return "", 0
	}
	return rec.Status, rec.Attempt
}

// TestRule2NoReleaseAfterTakeOver is the model checker's path (b): the first
// attempt's request may still be in transit, a retry takes over, the
// acquirer has no record yet and the retry's own call is refused. The retry
// must not release: the record stays in flight for the reconciler.
func TestRule2NoReleaseAfterTakeOver(t *testing.T) {
	t.Parallel()
	clock := idemtest.NewClock(time.Unix(1_800_000_000, 0))
	store := idemtest.NewMemoryStore()
	guard := idem.NewGuard(store, idem.Config{Now: clock.Now, DefaultLease: 30 * time.Second})
	acq := &scripted{authorize: func() (acquirer.Authorization, error) {
		return acquirer.Authorization{}, fmt.Errorf("%w: timeout", acquirer.ErrOutcomeUnknown) // the first request: sent, no answer
	}, lookup: absent}
	svc := chargetest.Service(guard, acq, httpapi.Render, charge.Config{Now: clock.Now})
	if r := svc.Charge(context.Background(), input("acct", "rule-2-key", body)); r.Outcome != op.Pending || r.AcquirerErrors != 1 || r.Attempt != 1 ||
		r.Record != idem.Ref(idem.Scope{Operation: charge.Operation, Account: "acct", Key: "rule-2-key"}.PK()) {
		t.Fatalf("first attempt: %s, %d acquirer errors, attempt %d", r.Outcome, r.AcquirerErrors, r.Attempt)
	}
	clock.Advance(time.Millisecond)
	acq.authorize = refused
	r := svc.Charge(context.Background(), input("acct", "rule-2-key", body))
	if st, attempt := status(t, guard, "acct", "rule-2-key"); st != idem.StatusInProgress || attempt != 2 {
		t.Fatalf("record %q attempt %d; want IN_PROGRESS after the take-over — a release here loses the in-transit charge", st, attempt)
	}
	if r.Outcome != op.Pending {
		t.Fatalf("retry answered %s, want pending (503 CHARGE_OUTCOME_PENDING)", r.Outcome)
	}
}

// stallingStore makes the worker stall right after its claim: the clock
// jumps past the lease before the worker can send.
type stallingStore struct {
	*idemtest.MemoryStore
	clock *idemtest.Clock
	stall time.Duration
}

func (s *stallingStore) Claim(ctx context.Context, rec idem.Record, now time.Time) (*idem.Record, bool, error) {
	existing, ok, err := s.MemoryStore.Claim(ctx, rec, now)
	s.clock.Advance(s.stall)
	return existing, ok, err
}

// TestRule3StalledWorkerDoesNotSend is the model checker's path (c): a worker
// stalled between its claim and its send, until less than T + skew of its
// lease is left, must not send.
func TestRule3StalledWorkerDoesNotSend(t *testing.T) {
	t.Parallel()
	for _, stall := range []time.Duration{25 * time.Second, 31 * time.Second} { // lease 30 s: nearly over, and over
		clock := idemtest.NewClock(time.Unix(1_800_000_000, 0))
		store := &stallingStore{MemoryStore: idemtest.NewMemoryStore(), clock: clock, stall: stall}
		guard := idem.NewGuard(store, idem.Config{Now: clock.Now, DefaultLease: 30 * time.Second})
		acq := &scripted{authorize: captured, lookup: absent}
		svc := chargetest.Service(guard, acq, httpapi.Render, charge.Config{Now: clock.Now})
		r := svc.Charge(context.Background(), input("acct", "rule-3-key", body))
		if n := acq.authorized.Load(); n != 0 {
			t.Fatalf("stall %s: the worker sent %d request(s) with %s of its lease left", stall, n, 30*time.Second-stall)
		}
		if r.Outcome != op.Released && r.Outcome != op.Pending {
			t.Fatalf("stall %s: answered %s, want a 503", stall, r.Outcome)
		}
	}
}

// TestReconcile covers the reconciler's three outcomes.
func TestReconcile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := idemtest.NewClock(time.Unix(1_800_000_000, 0))
	store := idemtest.NewMemoryStore()
	guard := idem.NewGuard(store, idem.Config{Now: clock.Now, DefaultLease: 10 * time.Second})
	acq := &scripted{authorize: func() (acquirer.Authorization, error) {
		return acquirer.Authorization{}, fmt.Errorf("%w: 500", acquirer.ErrOutcomeUnknown)
	}}
	svc := chargetest.Service(guard, acq, httpapi.Render, charge.Config{Now: clock.Now})
	pk := func(key string) string {
		return idem.Scope{Operation: charge.Operation, Account: "acct", Key: key}.PK()
	}
	for _, key := range []string{"found-key-1", "absent-key-1"} {
		svc.Charge(ctx, input("acct", key, body)) // outcome unknown: abandoned, in flight
	}
	clock.Advance(5 * time.Second) // lease ended 5 s ago: less than T + skew
	acq.lookup = captured
	if got, err := svc.Reconcile(ctx, pk("found-key-1")); err != nil || got != op.NothingToDo {
		t.Fatalf("within T + skew: %v, %v; want nothing to do", got, err)
	}
	clock.Advance(2 * time.Second)
	if got, err := svc.Reconcile(ctx, pk("found-key-1")); err != nil || got != op.ReconciledCompleted {
		t.Fatalf("found: %v, %v", got, err)
	}
	if st, _ := status(t, guard, "acct", "found-key-1"); st != idem.StatusCompleted {
		t.Fatalf("found: record %q", st)
	}
	acq.lookup = absent
	if got, err := svc.Reconcile(ctx, pk("absent-key-1")); err != nil || got != op.ReconciledReleased {
		t.Fatalf("absent: %v, %v", got, err)
	}
	if st, _ := status(t, guard, "acct", "absent-key-1"); st != "" {
		t.Fatalf("absent: record %q, want released", st)
	}
	if got, err := svc.Reconcile(ctx, pk("found-key-1")); err != nil || got != op.NothingToDo {
		t.Fatalf("completed record: %v, %v", got, err)
	}
}

func input(account, key, body string) charge.Input {
	return charge.Input{Account: account, Keys: []string{key}, Body: []byte(body)}
}

// TestInFlightWaitOut: a request that finds the key in flight learns how
// long the owner may still take: its lease's time left plus T and the skew.
// An HTTP client still gets the short Retry-After.
func TestInFlightWaitOut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := idemtest.NewClock(time.Unix(1_800_000_000, 0))
	store := idemtest.NewMemoryStore()
	guard := idem.NewGuard(store, idem.Config{Now: clock.Now, DefaultLease: 30 * time.Second})
	svc := chargetest.Service(guard, &scripted{authorize: captured, lookup: absent}, httpapi.Render, charge.Config{Now: clock.Now})
	req, _ := charge.ParseRequest([]byte(body), 0)
	scope := idem.Scope{Operation: charge.Operation, Account: "acct_1", Key: "wait-out-key"}
	if _, err := guard.Begin(ctx, scope, req.Canonical()); err != nil { // an owner with a 30 s lease
		t.Fatal(err)
	}
	clock.Advance(10 * time.Second)
	res := svc.Charge(ctx, charge.Input{Account: "acct_1", Keys: []string{"wait-out-key"}, Body: []byte(body)})
	if res.Outcome != op.InFlight || res.WaitOut != 26*time.Second || res.RetryAfter != 2*time.Second {
		t.Fatalf("%s: WaitOut %s, RetryAfter %s; want in flight, 20 s left + 5 s + 1 s, 2 s", res.Outcome, res.WaitOut, res.RetryAfter)
	}
}

// TestCredentialRotation: the acquirer's credential rotates while charges
// run. The secret changes first, then the acquirer: a refused call re-reads
// the secret once and is sent again, so every charge executes. When the
// acquirer refuses a key the secret does not have yet, the refusal is
// "nothing sent" (the sandbox checks the credential before anything else):
// the key is released and a retry, once the secret has the new value,
// executes once.
func TestCredentialRotation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sb := sandbox.New("key-1")
	srv := httptest.NewServer(sb)
	defer srv.Close()
	var secret atomic.Value
	secret.Store("key-1")
	var reads atomic.Int64
	cred := acquirerhttp.NewCredential(func(context.Context) (string, error) { reads.Add(1); return secret.Load().(string), nil }, time.Hour, time.Nanosecond)
	client, err := acquirerhttp.NewClientWithCredential(srv.URL, cred, nil)
	if err != nil {
		t.Fatal(err)
	}
	store := idemtest.NewMemoryStore()
	guard := idem.NewGuard(store, idem.Config{})
	svc := chargetest.Service(guard, client, httpapi.Render, charge.Config{})
	charge1 := func(key string) charge.Result {
		return svc.Charge(ctx, charge.Input{Account: "acct_1", Keys: []string{key}, Body: []byte(body)})
	}

	var wg sync.WaitGroup
	results := make(chan op.Outcome, 200)
	for w := range 10 {
		wg.Go(func() {
			for i := range 20 {
				results <- charge1(fmt.Sprintf("rotation-%02d-%02d", w, i)).Outcome
				if w == 0 && i == 10 { // midway: the secret, then the acquirer
					secret.Store("key-2")
					sb.SetAPIKey("key-2")
				}
			}
		})
	}
	wg.Wait()
	close(results)
	for o := range results {
		if o != op.Executed {
			t.Fatalf("a charge during the rotation: %s", o)
		}
	}
	if n := len(sb.Authorizations()); n != 200 || reads.Load() < 2 {
		t.Fatalf("%d authorizations, %d reads of the secret: want 200 and a re-read", n, reads.Load())
	}

	sb.SetAPIKey("key-3") // the acquirer moved on; the secret has not yet
	if r := charge1("rotation-late-secret"); r.Outcome != op.Released {
		t.Fatalf("refused credential: %s, want released (nothing sent)", r.Outcome)
	}
	if st, _ := status(t, guard, "acct_1", "rotation-late-secret"); st != "" || len(sb.Authorizations()) != 200 {
		t.Fatalf("after a refusal: record %q, %d authorizations", st, len(sb.Authorizations()))
	}
	secret.Store("key-3")
	if r := charge1("rotation-late-secret"); r.Outcome != op.Executed || len(sb.Authorizations()) != 201 {
		t.Fatalf("the retry once the secret has the key: %s, %d authorizations", r.Outcome, len(sb.Authorizations()))
	}
}

// TestRefusedAfterTakeOverStaysInFlight: a retry that takes over, finds
// nothing at the acquirer and has its authorization refused (401: not
// processed, and the re-read found another credential) sends once more
// after its lease check, and when refused again does not release (DESIGN §4
// rule 2: the first attempt's request may still be in transit): the record
// stays in flight.
func TestRefusedAfterTakeOverStaysInFlight(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acq := &scripted{lookup: absent, authorize: func() (acquirer.Authorization, error) {
		return acquirer.Authorization{}, fmt.Errorf("%w: %w (%w)", acquirer.ErrNotSent, acquirer.ErrCredentialRefused, acquirer.ErrCredentialChanged)
	}}
	clock := idemtest.NewClock(time.Unix(1_800_000_000, 0))
	store := idemtest.NewMemoryStore()
	guard := idem.NewGuard(store, idem.Config{Now: clock.Now, DefaultLease: 30 * time.Second})
	svc := chargetest.Service(guard, acq, httpapi.Render, charge.Config{Now: clock.Now})
	req, _ := charge.ParseRequest([]byte(body), 0)
	if _, err := guard.Begin(ctx, idem.Scope{Operation: charge.Operation, Account: "acct_1", Key: "refused-after-take-over"}, req.Canonical()); err != nil {
		t.Fatal(err)
	}
	clock.Advance(31 * time.Second) // the first owner's lease is over
	r := svc.Charge(ctx, charge.Input{Account: "acct_1", Keys: []string{"refused-after-take-over"}, Body: []byte(body)})
	if st, attempt := status(t, guard, "acct_1", "refused-after-take-over"); r.Outcome != op.Pending || st != idem.StatusInProgress || attempt != 2 {
		t.Fatalf("%s, record %s attempt %d; want pending, still in flight after the take-over", r.Outcome, st, attempt)
	}
	if n := acq.authorized.Load(); n != 2 {
		t.Fatalf("%d authorizations sent, want the refused one and one resend", n)
	}
	// A first attempt refused twice is released: nothing was processed.
	r = svc.Charge(ctx, charge.Input{Account: "acct_1", Keys: []string{"refused-first-attempt"}, Body: []byte(body)})
	if st, _ := status(t, guard, "acct_1", "refused-first-attempt"); r.Outcome != op.Released || st != "" {
		t.Fatalf("first attempt: %s, record %q; want released", r.Outcome, st)
	}
}

// TestTakeOverLookupIsCapped: the take-over's question to the acquirer has
// AcquirerTimeout, as every acquirer call, even when the caller's context
// has no deadline; and so has the reconciler's.
func TestTakeOverLookupIsCapped(t *testing.T) {
	t.Parallel()
	clock := idemtest.NewClock(time.Unix(1_800_000_000, 0))
	guard := idem.NewGuard(idemtest.NewMemoryStore(), idem.Config{Now: clock.Now, DefaultLease: 30 * time.Second})
	acq := &scripted{authorize: func() (acquirer.Authorization, error) {
		return acquirer.Authorization{}, fmt.Errorf("%w: timeout", acquirer.ErrOutcomeUnknown)
	}, lookup: absent}
	const timeout = 700 * time.Millisecond
	svc := chargetest.Service(guard, acq, httpapi.Render, charge.Config{Now: clock.Now, AcquirerTimeout: timeout})
	svc.Charge(context.Background(), input("acct", "capped-lookup", body)) // in flight, outcome unknown
	clock.Advance(time.Millisecond)
	svc.Charge(context.Background(), input("acct", "capped-lookup", body)) // takes over, asks first
	if got := time.Duration(acq.lookupFor.Load()); got <= 0 || got > timeout {
		t.Fatalf("take-over lookup given %v (-1ns: no deadline), want at most %v", got, timeout)
	}
	acq.lookupFor.Store(0)
	pk := idem.Scope{Operation: charge.Operation, Account: "acct", Key: "capped-lookup"}.PK()
	clock.Advance(time.Hour) // the lease long over: the reconciler may take over
	_, _ = svc.Reconcile(context.Background(), pk)
	if got := time.Duration(acq.lookupFor.Load()); got <= 0 || got > timeout {
		t.Fatalf("reconciler lookup given %v, want at most %v", got, timeout)
	}
}

// TestRefusedWithTheSameCredentialIsNotResent: a 401 whose re-read found
// the same key is not sent again (it would be refused again): one
// authorization, and the first attempt is released.
func TestRefusedWithTheSameCredentialIsNotResent(t *testing.T) {
	t.Parallel()
	acq := &scripted{lookup: absent, authorize: func() (acquirer.Authorization, error) {
		return acquirer.Authorization{}, fmt.Errorf("%w: %w", acquirer.ErrNotSent, acquirer.ErrCredentialRefused)
	}}
	guard := idem.NewGuard(idemtest.NewMemoryStore(), idem.Config{})
	svc := chargetest.Service(guard, acq, httpapi.Render, charge.Config{})
	if r := svc.Charge(context.Background(), input("acct", "same-credential", body)); r.Outcome != op.Released || acq.authorized.Load() != 1 {
		t.Fatalf("%s after %d authorizations; want released after 1", r.Outcome, acq.authorized.Load())
	}
}

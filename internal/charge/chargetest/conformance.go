package chargetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/acquirer/acquirerhttp"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/event"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/idem/idemtest"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/sandbox"
)

// NewStoresFunc returns a fresh store and the ledger beside it.
type NewStoresFunc func(t *testing.T) (idem.Store, charge.Ledger)

// seq numbers the charges of this process; each run has fresh stores, so
// the number alone keeps ids apart.
var seq atomic.Int64

func newID() string { return fmt.Sprintf("ch_%040x", seq.Add(1)) }

// epoch is the ledger rows' creation time: a fixed instant (the ledger
// keeps rows without TTL and only stores the times it is given).
var epoch = time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)

// RunLedgerConformance runs what every charge.Ledger must do: a row
// written reads back equal; a second write for the same charge changes
// nothing and returns the first row; a missing row is ErrNoCharge; and
// the markers (ledgerMarkers).
func RunLedgerConformance(t *testing.T, newStores NewStoresFunc) {
	ctx := context.Background()
	_, ledger := newStores(t)
	want := charge.Charge{
		Origin: op.Origin{ID: newID(), Account: "acct_ledger", IdempotencyKey: "order-1-attempt-1",
			Source: event.SourceQueue("orders"), AcquirerID: "acquirer-1", CreatedAt: epoch},
		Status: acquirer.StatusCaptured, Amount: 123456789012, Currency: "BRL", OrderID: "order-1",
		Description: "café ☕", AuthorizationID: "auth_1",
	}
	if got, err := ledger.Write(ctx, want); err != nil || got != want {
		t.Fatalf("Write = %+v, %v; want %+v", got, err, want)
	}
	if got, err := ledger.Get(ctx, want.ID); err != nil || got != want {
		t.Fatalf("Get = %+v, %v; want %+v", got, err, want)
	}
	late := want
	late.CreatedAt, late.Description, late.Source = want.CreatedAt.Add(time.Minute), "a late attempt's", event.SourceHTTP
	if got, err := ledger.Write(ctx, late); err != nil || got != want {
		t.Fatalf("a second Write = %+v, %v; want the first row %+v", got, err, want)
	}
	if got, err := ledger.Get(ctx, want.ID); err != nil || got != want {
		t.Fatalf("Get after a second Write = %+v, %v; want the first row", got, err)
	}
	declined := charge.Charge{
		Origin: op.Origin{ID: newID(), Account: "acct_ledger", CreatedAt: want.CreatedAt},
		Status: acquirer.StatusDeclined, Amount: 1, Currency: "USD", OrderID: "2", DeclineCode: "insufficient_funds",
	}
	if _, err := ledger.Write(ctx, declined); err != nil {
		t.Fatal(err)
	}
	if got, err := ledger.Get(ctx, declined.ID); err != nil || got != declined {
		t.Fatalf("Get declined = %+v, %v", got, err)
	}
	if _, err := ledger.Get(ctx, newID()); !errors.Is(err, charge.ErrNoCharge) {
		t.Fatalf("Get of a missing charge: %v, want ErrNoCharge", err)
	}
	ledgerMarkers(t, ledger, want)
}

// ledgerMarkers runs the markers' part of the ledger conformance: a held
// marker reads as no charge that names its record, stays the first one
// written, and gives way to the row; a voided marker replaces a held
// marker, reads as a voided charge and refuses every row after it; a row
// refuses the void and keeps out both markers. written is a row the
// ledger holds.
func ledgerMarkers(t *testing.T, ledger charge.Ledger, written charge.Charge) {
	ctx := context.Background()
	mark := charge.HeldMarker{Account: "acct_ledger", Key: "order-2-attempt-1"}
	mustBeMarked := func(id string, want charge.HeldMarker) {
		t.Helper()
		_, err := ledger.Get(ctx, id)
		var held *charge.HeldMarkerError
		if !errors.As(err, &held) || held.Marker != want || !errors.Is(err, charge.ErrNoCharge) || errors.Is(err, charge.ErrVoided) {
			t.Fatalf("Get of a held charge: %v; want its held marker %+v, no charge", err, want)
		}
	}
	mustBeVoided := func(id string) {
		t.Helper()
		_, err := ledger.Get(ctx, id)
		var held *charge.HeldMarkerError
		if !errors.Is(err, charge.ErrNoCharge) || !errors.Is(err, charge.ErrVoided) || errors.As(err, &held) {
			t.Fatalf("Get of a voided charge: %v; want no charge, voided", err)
		}
	}

	// Held, then its row: the marker gives way.
	held := charge.Charge{
		Origin: op.Origin{ID: newID(), Account: mark.Account, IdempotencyKey: mark.Key, CreatedAt: epoch},
		Status: acquirer.StatusCaptured, Amount: 250000, Currency: "BRL", OrderID: "2", AuthorizationID: "auth_2",
	}
	if err := ledger.Hold(ctx, held.ID, mark); err != nil {
		t.Fatal(err)
	}
	mustBeMarked(held.ID, mark)
	if err := ledger.Hold(ctx, held.ID, charge.HeldMarker{Account: "acct_ledger", Key: "another-key"}); err != nil {
		t.Fatal(err)
	}
	mustBeMarked(held.ID, mark)
	if got, err := ledger.Write(ctx, held); err != nil || got != held {
		t.Fatalf("Write over the held marker = %+v, %v; want the row", got, err)
	}
	if got, err := ledger.Get(ctx, held.ID); err != nil || got != held {
		t.Fatalf("Get after the row replaced the held marker = %+v, %v", got, err)
	}

	// A row keeps out both markers.
	if err := ledger.Hold(ctx, written.ID, mark); err != nil {
		t.Fatalf("Hold on a row: %v, want nil (nothing written)", err)
	}
	if err := ledger.Void(ctx, written.ID); !errors.Is(err, charge.ErrLedgerRowExists) {
		t.Fatalf("Void of a row: %v, want ErrLedgerRowExists", err)
	}
	if got, err := ledger.Get(ctx, written.ID); err != nil || got != written {
		t.Fatalf("the row after a Hold and a Void = %+v, %v", got, err)
	}

	// Held, then voided: no row of it, ever.
	voided := held
	voided.ID = newID()
	if err := ledger.Hold(ctx, voided.ID, mark); err != nil {
		t.Fatal(err)
	}
	if err := ledger.Void(ctx, voided.ID); err != nil {
		t.Fatalf("Void over the held marker: %v", err)
	}
	mustBeVoided(voided.ID)
	if err := ledger.Void(ctx, voided.ID); err != nil {
		t.Fatalf("Void again: %v", err)
	}
	if _, err := ledger.Write(ctx, voided); !errors.Is(err, charge.ErrVoided) {
		t.Fatalf("Write after the void: %v, want ErrVoided", err)
	}
	if err := ledger.Hold(ctx, voided.ID, mark); err != nil {
		t.Fatalf("Hold after the void: %v, want nil (nothing written)", err)
	}
	mustBeVoided(voided.ID)

	// Voided with nothing there.
	never := held
	never.ID = newID()
	if err := ledger.Void(ctx, never.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := ledger.Write(ctx, never); !errors.Is(err, charge.ErrVoided) {
		t.Fatalf("Write after a void of nothing: %v, want ErrVoided", err)
	}
	mustBeVoided(never.ID)
}

// failingCompletion is a store whose next Complete fails once armed: a
// worker that wrote the ledger row and died before completing the record.
type failingCompletion struct {
	idem.Store
	armed atomic.Bool
}

func (s *failingCompletion) Complete(ctx context.Context, pk, token string, resp idem.Response, settled *idem.Settlement, expiresAt time.Time) error {
	if s.armed.CompareAndSwap(true, false) {
		return errors.New("the worker died between the ledger row and the completion")
	}
	return s.Store.Complete(ctx, pk, token, resp, settled, expiresAt)
}

// world is a charge service on a fresh store and ledger, with a test clock.
type world struct {
	store  *failingCompletion
	ledger charge.Ledger
	clock  *idemtest.Clock
	guard  *idem.Guard
}

func newWorld(t *testing.T, newStores NewStoresFunc) *world {
	store, ledger := newStores(t)
	w := &world{store: &failingCompletion{Store: store}, ledger: ledger, clock: newClock()}
	w.guard = idem.NewGuard(w.store, idem.Config{Now: w.clock.Now, DefaultLease: 30 * time.Second, Protocol: protocol})
	return w
}

// newClock is a test clock that starts at the wall clock's now, as the
// engine's suites' do: the one place these suites read it, so the records
// carry real-time expiries, as in production.
func newClock() *idemtest.Clock { return idemtest.NewClock(time.Now().Truncate(time.Millisecond)) }

func (w *world) service(acq charge.Acquirer) *charge.Service {
	return charge.NewService(w.guard, w.ledger, acq, Render, charge.Config{Now: w.clock.Now})
}

// protocol is the suites' guards': T 5 s, skew 1 s, the sandbox acquirer.
var protocol = idem.Protocol{InTransitBound: 5 * time.Second, ClockSkew: time.Second, Downstream: "sandbox"}

const (
	body    = `{"amount": 25000, "currency": "BRL", "order_id": "123", "payment_method": "pm_card_visa"}`
	account = "acct_c"
	// reconcilable is how long after a first attempt the reconciler may
	// take over: the 30 s lease, then more than T + skew (5 s + 1 s).
	reconcilable = 30*time.Second + 7*time.Second
)

func input(key string) charge.Input {
	return charge.Input{Account: account, Keys: []string{key}, Body: []byte(body)}
}

// pkOf is the record of key.
func pkOf(key string) string {
	return idem.Scope{Operation: charge.Operation, Account: account, Key: key}.PK()
}

// dieAfterTheRow runs a first attempt of key that writes its ledger row and
// dies before completing the record, which stays in flight.
func (w *world) dieAfterTheRow(t *testing.T, svc *charge.Service, key string) {
	t.Helper()
	w.store.armed.Store(true)
	if r := svc.Charge(context.Background(), input(key)); r.Outcome != op.Pending {
		t.Fatalf("the attempt that died after the row: %s", r.Outcome)
	}
}

// mustMatchLedger checks the invariant of a completed record: its answer
// and the result's charge id are its ledger row's, the row is the
// acquirer's one authorization and names that acquirer.
func (w *world) mustMatchLedger(t *testing.T, sb *sandbox.Server, key string, res charge.Result) charge.Charge {
	t.Helper()
	rec, err := w.guard.Lookup(context.Background(), pkOf(key))
	if err != nil || rec.Status != idem.StatusCompleted {
		t.Fatalf("record: %+v, %v", rec, err)
	}
	row, err := w.ledger.Get(context.Background(), charge.ID(rec.DownstreamKey))
	if err != nil {
		t.Fatalf("the completed record has no ledger row: %v", err)
	}
	if string(rec.Response.Body) != string(Render(row).Body) || string(res.Response.Body) != string(rec.Response.Body) || res.ChargeID != row.ID {
		t.Fatalf("answer %s of %s, stored %s, ledger row %+v: not one charge", res.Response.Body, res.ChargeID, rec.Response.Body, row)
	}
	auths := sb.ByKey()
	if len(auths) != 1 || auths[rec.DownstreamKey].ID != row.AuthorizationID || auths[rec.DownstreamKey].Amount != row.Amount || row.AcquirerID != protocol.Downstream {
		t.Fatalf("authorizations %v, ledger row %+v", auths, row)
	}
	return row
}

// suiteCase is one subtest of a conformance suite: its name and its body,
// run in parallel on stores of its own.
type suiteCase struct {
	name string
	run  func(t *testing.T, newStores NewStoresFunc)
}

// runParallel runs each case as a parallel subtest, in order.
func runParallel(t *testing.T, newStores NewStoresFunc, cases []suiteCase) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, newStores)
		})
	}
}

// sandboxAcquirer is a fresh sandbox and an acquirer client that reaches it
// in process.
func sandboxAcquirer() (*sandbox.Server, *acquirerhttp.Client) {
	sb := sandbox.New("")
	acq, _ := acquirerhttp.NewClient("http://sandbox.invalid", "", sandbox.InProcess(sb))
	return sb, acq
}

// RunCompletionConformance runs the ledger-first completion over a store
// and its ledger: a crash between the two writes leaves the record in
// flight, and the next retry or the reconciler completes it from the
// existing row; a zombie's late ledger write changes nothing.
func RunCompletionConformance(t *testing.T, newStores NewStoresFunc) {
	runParallel(t, newStores, []suiteCase{
		{"CrashBetweenTheWritesRecoveredByARetry", completionCrashRecoveredByARetry},
		{"CrashBetweenTheWritesRecoveredByTheReconciler", completionCrashRecoveredByTheReconciler},
		{"LedgerWriteFailureLeavesTheRecordInFlight", completionLedgerWriteFailureLeavesTheRecordInFlight},
		{"LedgerRowConflictIsRetried", completionLedgerRowConflictIsRetried},
		{"ARowThatDiffersWins", completionARowThatDiffersWins},
		{"TheRowSaysWhoAsked", completionTheRowSaysWhoAsked},
		{"ReconcilerCompletesFromARowTheAcquirerForgot", completionFromARowTheAcquirerForgot},
		{"ZombieLedgerWriteChangesNothing", completionZombieLedgerWriteChangesNothing},
	})
}

// completionCrashRecoveredByARetry: after a crash between the ledger row
// and the completion, the client's retry past the lease completes the
// record from the existing row, which it does not rewrite, and a further
// retry replays that answer.
func completionCrashRecoveredByARetry(t *testing.T, newStores NewStoresFunc) {
	ctx := context.Background()
	w := newWorld(t, newStores)
	sb, acq := sandboxAcquirer()
	svc := w.service(acq)
	w.dieAfterTheRow(t, svc, "crash-retry-key")
	w.clock.Advance(time.Minute) // its lease is over
	r := svc.Charge(ctx, input("crash-retry-key"))
	if r.Outcome != op.Executed || r.Attempt != 2 {
		t.Fatalf("retry: %s attempt %d", r.Outcome, r.Attempt)
	}
	row := w.mustMatchLedger(t, sb, "crash-retry-key", r)
	if !row.CreatedAt.Before(w.clock.Now().Add(-30 * time.Second)) {
		t.Fatalf("the row was rewritten by the retry: created %s", row.CreatedAt)
	}
	if again := svc.Charge(ctx, input("crash-retry-key")); again.Outcome != op.Replayed || string(again.Response.Body) != string(r.Response.Body) {
		t.Fatalf("replay: %s %s", again.Outcome, again.Response.Body)
	}
}

// completionCrashRecoveredByTheReconciler: after a crash between the
// ledger row and the completion, the reconciler completes the record, and
// the client's retry replays it.
func completionCrashRecoveredByTheReconciler(t *testing.T, newStores NewStoresFunc) {
	ctx := context.Background()
	w := newWorld(t, newStores)
	sb, acq := sandboxAcquirer()
	svc := w.service(acq)
	w.dieAfterTheRow(t, svc, "crash-reconcile-key")
	w.clock.Advance(reconcilable)
	pk := pkOf("crash-reconcile-key")
	if did, err := svc.Reconcile(ctx, pk); err != nil || did != op.ReconciledCompleted {
		t.Fatalf("Reconcile: %s, %v", did, err)
	}
	r := svc.Charge(ctx, input("crash-reconcile-key"))
	if r.Outcome != op.Replayed {
		t.Fatalf("the client's retry after the reconciler: %s", r.Outcome)
	}
	w.mustMatchLedger(t, sb, "crash-reconcile-key", r)
}

// completionLedgerWriteFailureLeavesTheRecordInFlight: a failed ledger
// write answers pending and leaves the record in flight with its lease
// ended, so the client's retry takes over at once and charges once.
func completionLedgerWriteFailureLeavesTheRecordInFlight(t *testing.T, newStores NewStoresFunc) {
	ctx := context.Background()
	w := newWorld(t, newStores)
	down := &refusingLedger{Ledger: w.ledger, err: errors.New("the ledger is down")}
	down.refuse.Store(1)
	w.ledger = down
	sb, acq := sandboxAcquirer()
	svc := w.service(acq)
	if r := svc.Charge(ctx, input("ledger-down-key")); r.Outcome != op.Pending {
		t.Fatalf("with the ledger down: %s, want pending", r.Outcome)
	}
	rec, err := w.guard.Lookup(ctx, pkOf("ledger-down-key"))
	if err != nil || rec.Status != idem.StatusInProgress {
		t.Fatalf("record after a failed ledger write: %+v, %v", rec, err)
	}
	// The lease was ended: the client's retry, after Retry-After, takes
	// over at once (well before the lease would have run out).
	w.clock.Advance(2 * time.Second)
	r := svc.Charge(ctx, input("ledger-down-key"))
	if r.Outcome != op.Executed || r.Attempt != 2 {
		t.Fatalf("retry: %s attempt %d", r.Outcome, r.Attempt)
	}
	w.mustMatchLedger(t, sb, "ledger-down-key", r)
}

// completionARowThatDiffersWins: when the ledger already holds a row for
// the charge that differs from the attempt's, the answer is the row
// written first.
func completionARowThatDiffersWins(t *testing.T, newStores NewStoresFunc) {
	ctx := context.Background()
	w := newWorld(t, newStores)
	odd := &oddRow{Ledger: w.ledger}
	w.ledger = odd
	_, acq := sandboxAcquirer()
	r := w.service(acq).Charge(ctx, input("odd-row-key"))
	if r.Outcome != op.Executed || !strings.Contains(string(r.Response.Body), `"auth_written_first"`) {
		t.Fatalf("answer %s %s: want the row written first", r.Outcome, r.Response.Body)
	}
}

// completionTheRowSaysWhoAsked: the ledger row keeps the client's key and
// the charge's source, whether the attempt or the reconciler wrote it.
func completionTheRowSaysWhoAsked(t *testing.T, newStores NewStoresFunc) {
	ctx := context.Background()
	w := newWorld(t, newStores)
	sb, acq := sandboxAcquirer()
	// Over HTTP, completed by the reconciler: still from HTTP, with the
	// client's key; from a producer's queue, from that queue.
	in := input("who-asked-http-key")
	in.Source = event.SourceHTTP
	lost := &losesAnswer{Acquirer: acq}
	if r := w.service(lost).Charge(ctx, in); r.Outcome != op.Pending {
		t.Fatalf("the attempt whose answer was lost: %s", r.Outcome)
	}
	w.clock.Advance(reconcilable)
	if did, err := w.service(acq).Reconcile(ctx, pkOf("who-asked-http-key")); err != nil || did != op.ReconciledCompleted {
		t.Fatalf("Reconcile: %s, %v", did, err)
	}
	queued := input("who-asked-queue-key")
	queued.Source = event.SourceQueue("orders")
	if r := w.service(acq).Charge(ctx, queued); r.Outcome != op.Executed {
		t.Fatalf("the queued charge: %s", r.Outcome)
	}
	for key, source := range map[string]string{"who-asked-http-key": event.SourceHTTP, "who-asked-queue-key": event.SourceQueue("orders")} {
		rec, err := w.guard.Lookup(ctx, pkOf(key))
		if err != nil {
			t.Fatal(err)
		}
		row, err := w.ledger.Get(ctx, charge.ID(rec.DownstreamKey))
		if err != nil || row.IdempotencyKey != key || row.Source != source {
			t.Fatalf("the row of %s: %+v, %v; want its key and source %s", key, row, err, source)
		}
	}
	if n := len(sb.ByKey()); n != 2 {
		t.Fatalf("%d authorizations", n)
	}
}

// completionFromARowTheAcquirerForgot: the reconciler completes a record
// from its ledger row even when the acquirer's lookup finds nothing.
func completionFromARowTheAcquirerForgot(t *testing.T, newStores NewStoresFunc) {
	ctx := context.Background()
	w := newWorld(t, newStores)
	sb, acq := sandboxAcquirer()
	w.dieAfterTheRow(t, w.service(acq), "forgotten-key")
	w.clock.Advance(reconcilable)
	pk := pkOf("forgotten-key")
	if did, err := w.service(forgetful{acq}).Reconcile(ctx, pk); err != nil || did != op.ReconciledCompleted {
		t.Fatalf("Reconcile with an acquirer that finds nothing: %s, %v; want completed from the row", did, err)
	}
	r := w.service(acq).Charge(ctx, input("forgotten-key"))
	if r.Outcome != op.Replayed {
		t.Fatalf("the client's retry: %s", r.Outcome)
	}
	w.mustMatchLedger(t, sb, "forgotten-key", r)
}

// completionZombieLedgerWriteChangesNothing: a worker that outlives its
// lease and writes its row after the take-over changes nothing: it
// replays the take-over's answer and the ledger row stays the take-over's.
func completionZombieLedgerWriteChangesNothing(t *testing.T, newStores NewStoresFunc) {
	ctx := context.Background()
	w := newWorld(t, newStores)
	sb, fast := sandboxAcquirer()
	slow := &held{Acquirer: fast, entered: make(chan struct{}), release: make(chan struct{})}
	zombie, retry := w.service(slow), w.service(fast)
	var first charge.Result
	var wg sync.WaitGroup
	wg.Go(func() { first = zombie.Charge(ctx, input("zombie-key")) })
	<-slow.entered // the acquirer has the authorization; its answer is late
	w.clock.Advance(time.Minute)
	second := retry.Charge(ctx, input("zombie-key"))
	if second.Outcome != op.Executed || second.Attempt != 2 {
		t.Fatalf("the take-over: %s attempt %d", second.Outcome, second.Attempt)
	}
	row := w.mustMatchLedger(t, sb, "zombie-key", second)
	w.clock.Advance(time.Second) // the zombie would stamp its row later
	close(slow.release)          // the zombie writes its row and completes, late
	wg.Wait()
	if first.Outcome != op.Replayed || string(first.Response.Body) != string(second.Response.Body) || first.ChargeID != second.ChargeID {
		t.Fatalf("the zombie: %s %s; want the take-over's answer %s", first.Outcome, first.Response.Body, second.Response.Body)
	}
	if after := w.mustMatchLedger(t, sb, "zombie-key", second); after != row {
		t.Fatalf("the zombie changed the ledger row: %+v, was %+v", after, row)
	}
}

// completionLedgerRowConflictIsRetried: a ledger row whose put conflicts
// with another region's write is retried and the charge completes; one
// refused on every try leaves the record in flight with no row, answered
// as pending, and the client's retry completes it under the same
// authorization.
func completionLedgerRowConflictIsRetried(t *testing.T, newStores NewStoresFunc) {
	ctx := context.Background()
	w := newWorld(t, newStores)
	row := &refusingLedger{Ledger: w.ledger, err: idem.ErrWriteConflict}
	w.ledger = row
	sb, acq := sandboxAcquirer()
	svc := w.service(acq)
	row.refuse.Store(1)
	r := svc.Charge(ctx, input("row-conflict-once-key"))
	if r.Outcome != op.Executed {
		t.Fatalf("a row refused once: %s, want executed", r.Outcome)
	}
	w.mustMatchLedger(t, sb, "row-conflict-once-key", r)

	w = newWorld(t, newStores)
	row = &refusingLedger{Ledger: w.ledger, err: idem.ErrWriteConflict}
	w.ledger = row
	sb, acq = sandboxAcquirer()
	svc = w.service(acq)
	row.refuse.Store(1 << 30)
	if r := svc.Charge(ctx, input("row-conflict-key")); r.Outcome != op.Pending {
		t.Fatalf("a row refused on every try: %s, want pending", r.Outcome)
	}
	rec, err := w.guard.Lookup(ctx, pkOf("row-conflict-key"))
	if err != nil || rec.Status != idem.StatusInProgress {
		t.Fatalf("the record after the row was refused: %+v, %v", rec, err)
	}
	if _, err := w.ledger.Get(ctx, charge.ID(rec.DownstreamKey)); !errors.Is(err, charge.ErrNoCharge) {
		t.Fatalf("a refused row was written: %v", err)
	}
	row.refuse.Store(0)
	w.clock.Advance(2 * time.Second)
	r = svc.Charge(ctx, input("row-conflict-key"))
	if r.Outcome != op.Executed || r.Attempt != 2 {
		t.Fatalf("the retry: %s attempt %d", r.Outcome, r.Attempt)
	}
	w.mustMatchLedger(t, sb, "row-conflict-key", r)
}

// refusingLedger refuses its next refuse Writes with err, writing
// nothing: a ledger that is down, or (idem.ErrWriteConflict) a strongly
// consistent global table refusing a put that races another region's.
type refusingLedger struct {
	charge.Ledger
	err    error
	refuse atomic.Int64
}

func (l *refusingLedger) Write(ctx context.Context, c charge.Charge) (charge.Charge, error) {
	if l.refuse.Add(-1) >= 0 {
		return charge.Charge{}, l.err
	}
	l.refuse.Store(0)
	return l.Ledger.Write(ctx, c)
}

// oddRow writes, before the first row it is given, a row for the same
// charge under another authorization: a row that differs.
type oddRow struct {
	charge.Ledger
	once sync.Once
}

func (l *oddRow) Write(ctx context.Context, c charge.Charge) (charge.Charge, error) {
	l.once.Do(func() {
		first := c
		first.AuthorizationID, first.CreatedAt = "auth_written_first", c.CreatedAt.Add(-time.Hour)
		_, _ = l.Ledger.Write(ctx, first)
	})
	return l.Ledger.Write(ctx, c)
}

// losesAnswer authorizes, then loses the answer: outcome unknown.
type losesAnswer struct{ charge.Acquirer }

func (l *losesAnswer) Authorize(ctx context.Context, key string, req acquirer.Request) (acquirer.Authorization, error) {
	if _, err := l.Acquirer.Authorize(ctx, key, req); err != nil {
		return acquirer.Authorization{}, err
	}
	return acquirer.Authorization{}, acquirer.ErrOutcomeUnknown
}

// forgetful is an acquirer whose lookups find nothing.
type forgetful struct{ charge.Acquirer }

func (forgetful) Lookup(context.Context, string) (acquirer.Authorization, error) {
	return acquirer.Authorization{}, acquirer.ErrNotFound
}

// held is an acquirer whose authorizations are processed at once but
// answered only when release is closed: a worker that outlives its lease.
type held struct {
	charge.Acquirer
	entered, release chan struct{}
}

func (h *held) Authorize(ctx context.Context, key string, req acquirer.Request) (acquirer.Authorization, error) {
	auth, err := h.Acquirer.Authorize(context.WithoutCancel(ctx), key, req)
	close(h.entered)
	<-h.release
	return auth, err
}

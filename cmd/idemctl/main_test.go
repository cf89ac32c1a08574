package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/charge/chargetest"
	"github.com/idempotent-payments/idempay/internal/charge/dynamoledger"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/idem/dynamostore"
	"github.com/idempotent-payments/idempay/internal/idem/dynamostore/dynamotest"
	"github.com/idempotent-payments/idempay/internal/sandbox"
)

// TestOperatorCommands drives every command end to end against DynamoDB
// Local and the sandbox acquirer. idemctl waits T + skew of 6 s, the
// compiled defaults: its clock runs ahead (later) instead of the test
// sleeping.
func TestOperatorCommands(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	store, acq := w.store, w.acq
	idemctlAt := func(ahead time.Duration, stdin string, args ...string) (string, error) {
		var out bytes.Buffer
		err := run(ctx, args, w.shell(strings.NewReader(stdin), &out, ahead))
		return out.String(), err
	}
	idemctl := func(stdin string, args ...string) (string, error) { return idemctlAt(0, stdin, args...) }
	const later = 7 * time.Second // past idemctl's wait-out of T + skew

	// A completed charge and a stale one, made by the real service.
	guard := idem.NewGuard(store, idem.Config{DefaultLease: 200 * time.Millisecond, Protocol: w.protocol}) // workers that die young
	svc := chargetest.ServiceWith(idem.NewGuard(store, idem.Config{Protocol: w.protocol}), w.ledger, acq, charge.Config{})
	body := []byte(`{"amount": 100, "currency": "BRL", "order_id": "1", "payment_method": "pm_card_visa"}`)
	if r := svc.Charge(ctx, charge.Input{Account: "acct_ops", Keys: []string{"ops-done-key"}, Body: body}); r.Outcome != charge.Executed || r.Response.StatusCode != 201 {
		t.Fatalf("setup: %s %d %s", r.Outcome, r.Response.StatusCode, r.Response.Body)
	}
	stale := idem.Scope{Operation: charge.Operation, Account: "acct_ops", Key: "ops-stuck-key"}
	req, _ := charge.ParseRequest(body, 0)
	if _, err := guard.Begin(ctx, stale, req.Canonical()); err != nil { // a worker that died after its claim
		t.Fatal(err)
	}

	out, err := idemctl("", "inspect", "--account", "acct_ops", "--key", "ops-done-key")
	var v view
	if err != nil || json.Unmarshal([]byte(out), &v) != nil || v.Status != idem.StatusCompleted || v.Response.Status != 201 || v.Ledger["status"] != "captured" ||
		v.Lease != "ended: the record is completed" || v.Protocol == nil || v.Protocol.Acquirer != w.protocol.Downstream {
		t.Fatalf("inspect completed: %v\n%s", err, out)
	}
	if _, err := idemctl("", "inspect", "--account", "acct_ops", "--key", "no-such-key-1"); err == nil {
		t.Fatal("inspect of an absent record succeeded")
	}
	if _, err := idemctl("", "inspect", "--account", "acct_ops", "--key", "short"); err == nil {
		t.Fatal("inspect with a bad key succeeded")
	}

	// Too early: the lease ended less than T + skew (6 s) ago.
	time.Sleep(300 * time.Millisecond)
	if _, err := idemctl("yes\n", "release", "--account", "acct_ops", "--key", "ops-stuck-key"); err == nil || !strings.Contains(err.Error(), "nothing changed") {
		t.Fatalf("released a lease that ended less than T + skew ago: %v", err)
	}
	if out, err := idemctl("", "stale"); err != nil || strings.Contains(out, idem.Ref(stale.PK())) {
		t.Fatalf("stale listed a lease that ended less than T + skew ago: %v\n%s", err, out)
	}
	out, err = idemctlAt(later, "", "stale")
	if err != nil || !strings.Contains(out, idem.Ref(stale.PK())) || strings.Contains(out, "ops-done-key") {
		t.Fatalf("stale: %v\n%s", err, out)
	}
	if _, err := idemctlAt(later, "no\n", "release", "--account", "acct_ops", "--key", "ops-stuck-key"); err == nil {
		t.Fatal("released without confirmation")
	}
	if rec, _ := guard.Lookup(ctx, stale.PK()); rec == nil || rec.Status != idem.StatusInProgress || rec.Attempt != 1 {
		t.Fatal("the record changed without confirmation")
	}
	// Against another acquirer: refused, nothing written.
	if _, err := idemctlAt(later, "", "release", "--account", "acct_ops", "--key", "ops-stuck-key", "--yes", "--acquirer-id", "another-acquirer",
		"--acquirer-url", "http://127.0.0.1:1"); err == nil || !strings.Contains(err.Error(), "another downstream") {
		t.Fatalf("release against another acquirer: %v", err)
	}
	if rec, _ := guard.Lookup(ctx, stale.PK()); rec == nil || rec.Status != idem.StatusInProgress || rec.Attempt != 1 {
		t.Fatal("the refusal against another acquirer wrote")
	}
	if out, err := idemctlAt(later, "yes\n", "release", "--account", "acct_ops", "--key", "ops-stuck-key"); err != nil || !strings.Contains(out, "released") {
		t.Fatalf("release: %v %s", err, out)
	}
	if _, err := guard.Lookup(ctx, stale.PK()); err == nil {
		t.Fatal("record still there after release")
	}

	// A stuck record whose charge the acquirer has: release completes it
	// with the acquirer's outcome, says so, and fails; reconcile of another
	// such record completes it and succeeds.
	for i, command := range []string{"release", "reconcile"} {
		key := fmt.Sprintf("ops-charged-key-%d", i)
		c, err := guard.Begin(ctx, idem.Scope{Operation: charge.Operation, Account: "acct_ops", Key: key}, req.Canonical())
		if err != nil {
			t.Fatal(err)
		}
		auth, err := acq.Authorize(ctx, c.Lease.DownstreamKey(), acquirer.Request{Amount: 100, Currency: "BRL", PaymentMethod: "pm_card_visa", OrderID: "1"})
		if err != nil {
			t.Fatal(err)
		}
		out, err := idemctlAt(later, "", command, "--account", "acct_ops", "--key", key, "--yes")
		if !strings.Contains(out, "completed with the acquirer's outcome, authorization "+auth.ID) || (err == nil) != (command == "reconcile") {
			t.Fatalf("%s of a charged record: %v\n%s", command, err, out)
		}
		if rec, err := guard.Lookup(ctx, c.Lease.PK()); err != nil || rec.Status != idem.StatusCompleted {
			t.Fatalf("%s: the charged record is %+v, %v; want COMPLETED", command, rec, err)
		}
	}
}

// loses answers the authorizations it makes: the acquirer charges, the
// caller hears "outcome unknown", as when a connection drops mid-answer.
type losesAnswers struct{ *acquirer.Client }

func (l losesAnswers) Authorize(ctx context.Context, key string, req acquirer.Request) (acquirer.Authorization, error) {
	if _, err := l.Client.Authorize(ctx, key, req); err != nil {
		return acquirer.Authorization{}, err
	}
	return acquirer.Authorization{}, fmt.Errorf("%w: the answer was lost", acquirer.ErrOutcomeUnknown)
}

// duringConfirmation is the person at the prompt: the first read runs
// meanwhile, then waits, then the person types yes.
type duringConfirmation struct {
	meanwhile func()
	answer    io.Reader
}

func (d *duringConfirmation) Read(p []byte) (int, error) {
	if d.meanwhile != nil {
		d.meanwhile()
		d.meanwhile = nil
	}
	return d.answer.Read(p)
}

// world is what an operator's command works against: a fresh table in
// DynamoDB Local and a sandbox acquirer.
type world struct {
	table, acquirerURL string
	ddb                *dynamodb.Client
	store              *dynamostore.Store
	ledger             *dynamoledger.Ledger
	sb                 *sandbox.Server
	acq                *acquirer.Client
	// protocol is the functions' in this world: T 200 ms, skew 100 ms.
	protocol idem.Protocol
	bound    time.Duration // its wait-out
}

func newWorld(t *testing.T) world {
	t.Helper()
	ddb := dynamotest.Client(t)
	table := dynamotest.NewTable(t, ddb)
	sb := sandbox.New("")
	srv := httptest.NewServer(sb)
	t.Cleanup(srv.Close)
	acq, err := acquirer.NewClient(srv.URL, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	p := idem.Protocol{InTransitBound: 200 * time.Millisecond, ClockSkew: 100 * time.Millisecond, Downstream: "sandbox"}
	return world{table: table, acquirerURL: srv.URL, ddb: ddb, store: dynamostore.New(ddb, table), ledger: dynamoledger.New(ddb, table), sb: sb, acq: acq,
		protocol: p, bound: p.WaitOut(p)}
}

// env is the environment idemctl runs with in w. Its T, skew and acquirer
// timeout are short, as an operator's shell might set them: idemctl must
// not read them.
func (w world) env(k string) string {
	return map[string]string{"TABLE_NAME": w.table, "ACQUIRER_URL": w.acquirerURL, "ACQUIRER_ID": "sandbox",
		"IN_TRANSIT_BOUND": "1ms", "CLOCK_SKEW": "1ms", "ACQUIRER_TIMEOUT": "1ms"}[k]
}

// shell is idemctl's world in w, its clock ahead of the wall clock by ahead.
func (w world) shell(stdin io.Reader, stdout io.Writer, ahead time.Duration) shell {
	return shell{stdin: stdin, stdout: stdout, getenv: w.env, now: func() time.Time { return time.Now().Add(ahead) }}
}

// releaseFn is an operator's release of record pk, with the person's stdin.
type releaseFn func(ctx context.Context, w world, pk string, stdin io.Reader) error

// lostCharge plays a lost charge's interleaving against release and reports the
// charge it loses ("" when none): an owner claims and dies before sending;
// once its lease ended more than T + skew ago the operator starts a
// release and, while the person reads the prompt, a client's retry takes
// over, is authorized, loses the answer and abandons; the person types yes
// after T + skew more. The record must end COMPLETED with that one
// authorization.
func lostCharge(t *testing.T, release releaseFn, key string) string {
	t.Helper()
	ctx := context.Background()
	w := newWorld(t)
	store, acq, sb, bound := w.store, w.acq, w.sb, w.bound
	cfg := charge.Config{AcquirerTimeout: 150 * time.Millisecond}
	client := chargetest.ServiceWith(idem.NewGuard(store, idem.Config{DefaultLease: 2 * time.Second, Protocol: w.protocol}), w.ledger, losesAnswers{acq}, cfg)

	body := []byte(`{"amount": 100, "currency": "BRL", "order_id": "1", "payment_method": "pm_card_visa"}`)
	req, _ := charge.ParseRequest(body, 0)
	scope := idem.Scope{Operation: charge.Operation, Account: "acct_ops", Key: key}
	dying := idem.NewGuard(store, idem.Config{DefaultLease: 100 * time.Millisecond, Protocol: w.protocol})
	if _, err := dying.Begin(ctx, scope, req.Canonical()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100*time.Millisecond + bound + 100*time.Millisecond)

	stdin := &duringConfirmation{answer: strings.NewReader("yes\n"), meanwhile: func() {
		r := client.Charge(ctx, charge.Input{Account: "acct_ops", Keys: []string{key}, Body: body})
		if r.Outcome != charge.Pending {
			t.Fatalf("the client's retry: %s, want pending (authorized, answer lost)", r.Outcome)
		}
		time.Sleep(bound + 200*time.Millisecond)
	}}
	err := release(ctx, w, scope.PK(), stdin)

	auths := sb.Authorizations()
	if len(auths) != 1 {
		t.Fatalf("%d authorizations, want the client's one", len(auths))
	}
	rec, lookupErr := idem.NewGuard(store, idem.Config{}).Lookup(ctx, scope.PK())
	switch {
	case errors.Is(lookupErr, idem.ErrNotFound):
		return fmt.Sprintf("the record was released (%v) while the acquirer holds %s: the next retry charges again", err, auths[0].ID)
	case lookupErr != nil:
		t.Fatal(lookupErr)
	case rec.Status != idem.StatusCompleted:
		return fmt.Sprintf("the record is %s (release: %v)", rec.Status, err)
	case !strings.Contains(string(rec.Response.Body), auths[0].ID):
		return fmt.Sprintf("the record completed without the authorization %s: %s", auths[0].ID, rec.Response.Body)
	}
	return ""
}

// TestReleaseTakesOverFirst: idemctl release runs the reconciler's path,
// so the interleaving ends with the record COMPLETED with the one
// authorization, and release says so and refuses. idemctl's clock runs
// past its wait-out of 6 s (the compiled T + skew).
func TestReleaseTakesOverFirst(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	idemctl := func(ctx context.Context, w world, pk string, stdin io.Reader) error {
		s, _ := idem.ParsePK(pk)
		return run(ctx, []string{"release", "--account", s.Account, "--key", s.Key}, w.shell(stdin, &out, 7*time.Second))
	}
	if lost := lostCharge(t, idemctl, "interleaved-release-1"); lost != "" {
		t.Fatalf("%s\n%s", lost, out.String())
	}
	if !strings.Contains(out.String(), "completed with the acquirer's outcome") {
		t.Fatalf("release did not say it completed the record:\n%s", out.String())
	}
}

// TestReleaseInterleavingControl: the same interleaving against the order
// idemctl had before, look up at the acquirer, ask the person, then take
// over and release, loses the charge. It proves lostCharge can see the
// loss TestReleaseTakesOverFirst must not have.
func TestReleaseInterleavingControl(t *testing.T) {
	t.Parallel()
	lookupFirst := func(ctx context.Context, w world, pk string, stdin io.Reader) error {
		guard := idem.NewGuard(w.store, idem.Config{Protocol: w.protocol})
		rec, err := guard.Lookup(ctx, pk)
		if err != nil {
			return err
		}
		if _, err := w.acq.Lookup(ctx, rec.DownstreamKey); !errors.Is(err, acquirer.ErrNotFound) {
			return fmt.Errorf("the acquirer has it: %v", err)
		}
		if answer, _ := bufio.NewReader(stdin).ReadString('\n'); strings.TrimSpace(answer) != "yes" {
			return errors.New("not released")
		}
		lease, err := guard.TakeOverStale(ctx, pk)
		if err != nil {
			return err
		}
		return lease.ReleaseReconciled(ctx)
	}
	if lost := lostCharge(t, lookupFirst, "interleaved-control-1"); !strings.Contains(lost, "released") {
		t.Fatalf("the old order lost no charge (%q): lostCharge cannot tell", lost)
	}
}

// inflates is an acquirer that records ten times the amount asked: the
// sandbox charges 10x and says so.
type inflates struct{ *acquirer.Client }

func (a inflates) Authorize(ctx context.Context, key string, req acquirer.Request) (acquirer.Authorization, error) {
	req.Amount *= 10
	return a.Client.Authorize(ctx, key, req)
}

// TestSettleHeld: a record held after the acquirer charged 10x is listed
// with both sides; void-confirmed refuses before T + skew and then
// releases, so the retry charges once; accept completes another with the
// fresh lookup's terms and records who decided.
func TestSettleHeld(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	var logs bytes.Buffer
	idemctlAt := func(ahead time.Duration, args ...string) (string, error) {
		var out bytes.Buffer
		sh := w.shell(strings.NewReader(""), &out, ahead)
		sh.stderr = &logs
		err := run(ctx, args, sh)
		return out.String(), err
	}
	guard := idem.NewGuard(w.store, idem.Config{Protocol: w.protocol})
	lying := chargetest.ServiceWith(guard, w.ledger, inflates{w.acq}, charge.Config{})
	truthful := chargetest.ServiceWith(guard, w.ledger, w.acq, charge.Config{})
	body := []byte(`{"amount": 100, "currency": "BRL", "order_id": "1", "payment_method": "pm_card_visa"}`)
	in := func(key string) charge.Input {
		return charge.Input{Account: "acct_ops", Keys: []string{key}, Body: body}
	}
	for _, key := range []string{"held-void-key", "held-accept-key"} {
		if r := lying.Charge(ctx, in(key)); r.Outcome != charge.Mismatch {
			t.Fatalf("%s: %s, want a mismatch", key, r.Outcome)
		}
	}

	out, err := idemctlAt(0, "held")
	if err != nil || strings.Count(out, `"record": `) != 2 || !strings.Contains(out, `"reason": "amount_differs"`) || !strings.Contains(out, `"amount": 1000`) || !strings.Contains(out, `"amount": 100,`) {
		t.Fatalf("held: %v\n%s", err, out)
	}
	if _, err := idemctlAt(7*time.Second, "reconcile", "--account", "acct_ops", "--key", "held-void-key", "--yes"); err == nil || !strings.Contains(err.Error(), "held") {
		t.Fatalf("reconcile of a held record: %v", err)
	}
	if _, err := idemctlAt(7*time.Second, "void-confirmed", "--account", "acct_ops", "--key", "held-void-key", "--yes"); err == nil || !strings.Contains(err.Error(), "--by") {
		t.Fatalf("void-confirmed without --by: %v", err)
	}
	if _, err := idemctlAt(0, "void-confirmed", "--account", "acct_ops", "--key", "held-void-key", "--by", "ops:ana", "--yes"); err == nil || !strings.Contains(err.Error(), "too early") {
		t.Fatalf("void-confirmed before T + skew: %v", err)
	}
	if r := truthful.Charge(ctx, in("held-void-key")); r.Outcome != charge.Held {
		t.Fatalf("the retry while held: %s", r.Outcome)
	}
	out, err = idemctlAt(7*time.Second, "void-confirmed", "--account", "acct_ops", "--key", "held-void-key", "--by", "ops:ana", "--yes")
	if err != nil || !strings.Contains(out, "released") {
		t.Fatalf("void-confirmed: %v\n%s", err, out)
	}
	if !strings.Contains(logs.String(), `"by":"ops:ana"`) || !strings.Contains(logs.String(), `"level":"WARN"`) {
		t.Fatalf("the decision is not in idemctl's log lines:\n%s", logs.String())
	}
	before := len(w.sb.Authorizations())
	if r := truthful.Charge(ctx, in("held-void-key")); r.Outcome != charge.Executed || r.Attempt != 1 {
		t.Fatalf("the retry after void-confirmed: %s attempt %d", r.Outcome, r.Attempt)
	}
	if r := truthful.Charge(ctx, in("held-void-key")); r.Outcome != charge.Replayed || len(w.sb.Authorizations()) != before+1 {
		t.Fatalf("after the retry: %s, %d new authorizations; want one", r.Outcome, len(w.sb.Authorizations())-before)
	}

	out, err = idemctlAt(time.Second, "accept", "--account", "acct_ops", "--key", "held-accept-key", "--by", "ops:bruno", "--yes")
	if err != nil || !strings.Contains(out, "captured 1000 BRL") {
		t.Fatalf("accept: %v\n%s", err, out)
	}
	out, err = idemctlAt(0, "inspect", "--account", "acct_ops", "--key", "held-accept-key")
	var v view
	if err != nil || json.Unmarshal([]byte(out), &v) != nil || v.Status != idem.StatusCompleted || v.Hold == nil || v.Hold.Settlement == nil ||
		v.Hold.Settlement.By != "ops:bruno" || v.Hold.Settlement.Action != idem.SettleAccept || v.Ledger["amount"] != 1000.0 {
		t.Fatalf("inspect after accept: %v\n%s", err, out)
	}
	if r := truthful.Charge(ctx, in("held-accept-key")); r.Outcome != charge.Replayed || !strings.Contains(string(r.Response.Body), `"amount":1000`) {
		t.Fatalf("the client's retry after accept: %s %s", r.Outcome, r.Response.Body)
	}
}

// TestShellTimesAreNotIdemctls: the interleaving where an operator's shell
// says T is 1 s while the functions' is 5 s. The first attempt's request
// hangs at the acquirer for 4.9 s; the client gives up at 3 s (pending);
// 1.15 s later the operator runs release with short values in the
// environment. idemctl still waits the record's T + skew and releases
// nothing; the hung request lands, and the client's retry completes with
// that one authorization.
func TestShellTimesAreNotIdemctls(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	functions := idem.Protocol{InTransitBound: 5 * time.Second, ClockSkew: time.Second, Downstream: "sandbox"}
	svc := chargetest.ServiceWith(idem.NewGuard(w.store, idem.Config{Protocol: functions}), w.ledger, w.acq, charge.Config{AcquirerTimeout: 3 * time.Second})
	w.sb.SetFaults(sandbox.Faults{HangRate: 1, HangMS: 4900})
	body := []byte(`{"amount": 100, "currency": "BRL", "order_id": "1", "payment_method": "pm_card_visa"}`)
	in := charge.Input{Account: "acct_ops", Keys: []string{"shell-times-key"}, Body: body}
	fnCtx, cancel := context.WithTimeout(ctx, 10*time.Second) // the charge function's invocation
	r := svc.Charge(fnCtx, in)
	cancel()
	if r.Outcome != charge.Pending {
		t.Fatalf("the first attempt: %s, want pending", r.Outcome)
	}
	time.Sleep(1150 * time.Millisecond)
	var out bytes.Buffer
	err := run(ctx, []string{"release", "--account", "acct_ops", "--key", "shell-times-key", "--yes"}, w.shell(strings.NewReader(""), &out, 0))
	if err == nil || !strings.Contains(err.Error(), "nothing changed") {
		t.Fatalf("release 1.15 s after the lease ended: %v\n%s; want a refusal", err, out.String())
	}
	w.sb.SetFaults(sandbox.Faults{})
	deadline := time.Now().Add(10 * time.Second)
	for len(w.sb.Authorizations()) == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	fnCtx, cancel = context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if r := svc.Charge(fnCtx, in); r.Outcome != charge.Executed || r.Attempt != 2 {
		t.Fatalf("the client's retry: %s attempt %d", r.Outcome, r.Attempt)
	}
	if n := len(w.sb.Authorizations()); n != 1 {
		t.Fatalf("%d authorizations, want the hung request's one", n)
	}
}

// TestIdemctlIgnoresItsShell: the record carries the functions' T of
// 200 ms and the shell says 1 ms; a second after the lease ended, release
// still refuses, because idemctl waits the larger of the record's and the
// compiled defaults (6 s), whatever the shell says.
func TestIdemctlIgnoresItsShell(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	req, _ := charge.ParseRequest([]byte(`{"amount": 100, "currency": "BRL", "order_id": "1", "payment_method": "pm_card_visa"}`), 0)
	scope := idem.Scope{Operation: charge.Operation, Account: "acct_ops", Key: "shell-ignored-key"}
	if _, err := idem.NewGuard(w.store, idem.Config{DefaultLease: 100 * time.Millisecond, Protocol: w.protocol}).Begin(ctx, scope, req.Canonical()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // past the record's 300 ms and the shell's 2 ms
	var out bytes.Buffer
	err := run(ctx, []string{"release", "--account", "acct_ops", "--key", "shell-ignored-key", "--yes"}, w.shell(strings.NewReader(""), &out, 0))
	if err == nil || !strings.Contains(err.Error(), "nothing changed") {
		t.Fatalf("release a second after the lease ended: %v\n%s; want the compiled 6 s waited", err, out.String())
	}
}

// TestOlderRecords: a record claimed before records carried their
// protocol is waited out by idemctl with the compiled defaults (6 s), and
// by the functions with their own.
func TestOlderRecords(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	req, _ := charge.ParseRequest([]byte(`{"amount": 100, "currency": "BRL", "order_id": "1", "payment_method": "pm_card_visa"}`), 0)
	for _, key := range []string{"older-idemctl-key", "older-function-key"} {
		scope := idem.Scope{Operation: charge.Operation, Account: "acct_ops", Key: key}
		if _, err := idem.NewGuard(w.store, idem.Config{DefaultLease: 100 * time.Millisecond}).Begin(ctx, scope, req.Canonical()); err != nil {
			t.Fatal(err)
		}
		w.forgetProtocol(t, scope.PK())
		if rec, err := w.store.Get(ctx, scope.PK(), time.Now()); err != nil || rec.Protocol != (idem.Protocol{}) {
			t.Fatalf("the older record: %+v, %v", rec, err)
		}
	}
	time.Sleep(500 * time.Millisecond) // past the functions' 300 ms wait-out
	var out bytes.Buffer
	release := []string{"release", "--account", "acct_ops", "--key", "older-idemctl-key", "--yes"}
	if err := run(ctx, release, w.shell(strings.NewReader(""), &out, 0)); err == nil || !strings.Contains(err.Error(), "nothing changed") {
		t.Fatalf("release of an older record 0.5 s after its lease: %v; want the compiled 6 s waited", err)
	}
	if err := run(ctx, release, w.shell(strings.NewReader(""), &out, 7*time.Second)); err != nil || !strings.Contains(out.String(), "released") {
		t.Fatalf("release after the compiled wait-out: %v\n%s", err, out.String())
	}
	lease, err := idem.NewGuard(w.store, idem.Config{Protocol: w.protocol}).TakeOverStale(ctx, idem.Scope{Operation: charge.Operation, Account: "acct_ops", Key: "older-function-key"}.PK())
	if err != nil || lease.WaitOut() != w.bound {
		t.Fatalf("the functions' take-over of an older record: %v; want their own wait-out", err)
	}
}

// forgetProtocol removes what a claim now stores of its protocol: the
// record as written before records carried it.
func (w world) forgetProtocol(t *testing.T, pk string) {
	t.Helper()
	_, err := w.ddb.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(w.table), Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}},
		UpdateExpression: aws.String("REMOVE in_transit_bound, clock_skew, downstream"),
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestRegionFlag: --region names the region whose replica idemctl reads;
// on one strongly consistent table (here DynamoDB Local, shared by every
// region) it finds the same record, and reconciles it the same, from any.
func TestRegionFlag(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	svc := chargetest.ServiceWith(idem.NewGuard(w.store, idem.Config{Protocol: w.protocol}), w.ledger, w.acq, charge.Config{})
	body := []byte(`{"amount": 100, "currency": "BRL", "order_id": "1", "payment_method": "pm_card_visa"}`)
	if r := svc.Charge(ctx, charge.Input{Account: "acct_region", Keys: []string{"region-flag-key"}, Body: body}); r.Outcome != charge.Executed {
		t.Fatalf("setup: %s", r.Outcome)
	}
	var outs []string
	for _, region := range []string{"us-east-1", "us-west-2"} {
		var out bytes.Buffer
		if err := run(ctx, []string{"inspect", "--region", region, "--account", "acct_region", "--key", "region-flag-key"}, w.shell(strings.NewReader(""), &out, 0)); err != nil {
			t.Fatalf("inspect in %s: %v", region, err)
		}
		outs = append(outs, out.String())
	}
	if outs[0] != outs[1] || !strings.Contains(outs[0], `"status": "COMPLETED"`) {
		t.Fatalf("inspect differs between regions:\n%s\n%s", outs[0], outs[1])
	}
}

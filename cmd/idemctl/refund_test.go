package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/acquirer/acquirerhttp"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/httpapi"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/operator"
	"github.com/idempotent-payments/idempay/internal/refund"
	"github.com/idempotent-payments/idempay/internal/sandbox"
)

// answerDropped sends a refund to the acquirer and loses its answer;
// withNothingSent loses the request itself, reporting the outcome
// unknown either way: a refund record left in flight, its amount
// reserved.
type answerDropped struct {
	refund.Acquirer
	send bool
}

func (a answerDropped) Refund(ctx context.Context, key string, req acquirer.RefundRequest) (acquirer.Refund, error) {
	if a.send {
		_, _ = a.Acquirer.Refund(ctx, key, req)
	}
	return acquirer.Refund{}, fmt.Errorf("%w: the answer was lost", acquirer.ErrOutcomeUnknown)
}

// refundLab is a lab with the test's own charge and refund services on
// the stack's table and acquirer (workers that die or are lied to).
type refundLab struct {
	lab
	charges  *charge.Service
	acq      *acquirerhttp.Client
	balances *dynamo.Balances
}

func newRefundLab(t *testing.T) refundLab {
	l := newLab(t, nil)
	acq, err := acquirerhttp.NewClient("http://sandbox.invalid", "", sandbox.InProcess(l.s.Sandbox))
	if err != nil {
		t.Fatal(err)
	}
	tbl := dynamo.Open(l.s.DynamoDB, l.s.TableName)
	// The workers' leases leave T + skew to send within.
	l.guard = idem.NewGuard(tbl.Store(), idem.Config{DefaultLease: workerLease, Protocol: shortProtocol})
	return refundLab{lab: l, acq: acq, balances: tbl.Balances(),
		charges: charge.NewService(l.guard, tbl.Ledger(), acq, httpapi.Render, charge.Config{})}
}

// workerLease is the refund labs' workers' lease.
const workerLease = time.Second

// chargeOf charges 1000 BRL with method and returns the charge's id.
func (l refundLab) chargeOf(t *testing.T, key, method string) string {
	t.Helper()
	res := l.charges.Charge(context.Background(), charge.Input{Account: "acct_ops", Keys: []string{key},
		Body: fmt.Appendf(nil, `{"amount": 1000, "currency": "BRL", "order_id": "1", "payment_method": %q}`, method)})
	if res.Outcome != op.Executed {
		t.Fatalf("charge: %s", res.Outcome)
	}
	return res.ChargeID
}

// refundWith refunds 400 of chargeID under key through acq, by a lab's
// worker.
func (l refundLab) refundWith(t *testing.T, acq refund.Acquirer, key, chargeID string) refund.Result {
	t.Helper()
	tbl := dynamo.Open(l.s.DynamoDB, l.s.TableName)
	svc := refund.NewService(l.guard, l.charges, tbl.Balances(), tbl.Refunds(), acq, httpapi.RenderRefund, charge.Config{})
	return svc.Refund(context.Background(), refund.Input{Account: "acct_ops", Keys: []string{key}, ChargeID: chargeID, Body: []byte(`{"amount": 400}`)})
}

func (l refundLab) mustBalance(t *testing.T, chargeID string, remaining, reserved, refunded int64) {
	t.Helper()
	b, err := l.balances.Get(context.Background(), chargeID)
	if err != nil || b.Remaining != remaining || b.Reserved != reserved || b.Refunded != refunded {
		t.Fatalf("balance %+v (%v), want %d remaining, %d reserved, %d refunded", b, err, remaining, reserved, refunded)
	}
}

func (l refundLab) refundRecord(t *testing.T, key string) *idem.Record {
	t.Helper()
	rec, err := l.guard.Lookup(context.Background(), idem.Scope{Operation: refund.Operation, Account: "acct_ops", Key: key}.PK())
	if err != nil {
		return nil
	}
	return rec
}

// TestStaleRefundsThroughTheChannel: refund records left in flight, listed
// by stale and acted on with --operation refund in a shell that names another acquirer and
// short protocol times. One whose refund reached the acquirer is
// completed by release (which says it did not release), from the
// deployment's acquirer; one whose request never left is released by
// reconcile, its reservation first. The shell's acquirer is never called.
func TestStaleRefundsThroughTheChannel(t *testing.T) {
	t.Parallel()
	l := newRefundLab(t)
	ch := l.chargeOf(t, "refund-ops-charge", "pm_card_visa")
	if res := l.refundWith(t, answerDropped{Acquirer: l.acq, send: true}, "refund-reached", ch); res.Outcome != op.Pending {
		t.Fatalf("the dropped answer: %s", res.Outcome)
	}
	if res := l.refundWith(t, answerDropped{Acquirer: l.acq}, "refund-never-left", ch); res.Outcome != op.Pending {
		t.Fatalf("the lost request: %s", res.Outcome)
	}
	l.mustBalance(t, ch, 200, 800, 0)
	// stale lists both, on a shell clock past the compiled T + skew (the
	// listing decides nothing).
	hourLater := func() time.Time { return time.Now().Add(time.Hour) }
	out, _, err := l.idemctlAt(t, hourLater, "", hostileEnv(l.otherURL), nil, "stale")
	for _, key := range []string{"refund-reached", "refund-never-left"} {
		if rec := l.refundRecord(t, key); err != nil || rec == nil || !strings.Contains(out, idem.Ref(rec.PK)) {
			t.Fatalf("stale: %v\n%s; want %s listed", err, out, key)
		}
	}
	time.Sleep(workerLease + waitOut)
	out, _, err = l.idemctl(t, "", hostileEnv(l.otherURL), nil, "release", "--operation", "refund", "--account", "acct_ops", "--key", "refund-reached", "--yes")
	if err == nil || !strings.Contains(out, "The acquirer says now: succeeded 400 BRL, refund ") || !strings.Contains(out, "completed, succeeded 400 BRL") {
		t.Fatalf("release of a refund the acquirer made: %v\n%s", err, out)
	}
	out, _, err = l.idemctl(t, "", hostileEnv(l.otherURL), nil, "reconcile", "--operation", "refund", "--account", "acct_ops", "--key", "refund-never-left", "--yes")
	if err != nil || !strings.Contains(out, operator.OutcomeReleased) || l.refundRecord(t, "refund-never-left") != nil {
		t.Fatalf("reconcile of a refund that never left: %v\n%s", err, out)
	}
	l.mustBalance(t, ch, 600, 0, 400)
	if got := len(l.s.Sandbox.Refunds()); got != 1 || l.otherCalls.Load() != 0 {
		t.Fatalf("%d refunds at the deployment's acquirer, %d calls to the shell's; want 1 and 0", got, l.otherCalls.Load())
	}
}

// TestHeldRefundThroughTheChannel: a refund the acquirer made ten times
// over is held with its reservation. held lists it; accept is refused
// (the look shows the mismatch: a tool never books what the bound did not
// reserve); void-confirmed waits out T + skew, then releases the
// reservation and the record, recording who decided; the shell's
// acquirer is never called.
func TestHeldRefundThroughTheChannel(t *testing.T) {
	t.Parallel()
	l := newRefundLab(t)
	ch := l.chargeOf(t, "refund-held-charge", sandbox.PaymentMethodRefundsTenfold)
	if res := l.refundWith(t, l.acq, "refund-tenfold", ch); res.Outcome != op.Mismatch {
		t.Fatalf("the tenfold refund: %s", res.Outcome)
	}
	l.mustBalance(t, ch, 600, 400, 0)
	env := hostileEnv(l.otherURL)
	out, _, err := l.idemctl(t, "", env, nil, "held")
	if err != nil || !strings.Contains(out, `"reason": "amount_differs"`) || !strings.Contains(out, `"refund_entry"`) {
		t.Fatalf("held: %v\n%s", err, out)
	}
	args := []string{"--operation", "refund", "--account", "acct_ops", "--key", "refund-tenfold", "--yes"}
	out, _, err = l.idemctl(t, "", env, nil, append([]string{"accept"}, args...)...)
	if err == nil || !strings.Contains(err.Error(), "no terms to accept") || !strings.Contains(out, "amount") {
		t.Fatalf("accept of a tenfold refund: %v\n%s", err, out)
	}
	if rec := l.refundRecord(t, "refund-tenfold"); rec == nil || !rec.Held() {
		t.Fatalf("after the refused accept: %+v", rec)
	}
	time.Sleep(workerLease + waitOut)
	out, _, err = l.idemctl(t, "", env, nil, append([]string{"void-confirmed"}, args...)...)
	if err != nil || !strings.Contains(out, "The acquirer still reports this refund") || !strings.Contains(out, operator.OutcomeReleasedByThis) ||
		!strings.Contains(out, "void_confirmed by "+l.s.OperatorPrincipal.UserARN) || l.refundRecord(t, "refund-tenfold") != nil {
		t.Fatalf("void-confirmed: %v\n%s", err, out)
	}
	l.mustBalance(t, ch, 1000, 0, 0)
	if l.otherCalls.Load() != 0 {
		t.Fatalf("%d calls to the shell's acquirer", l.otherCalls.Load())
	}
}

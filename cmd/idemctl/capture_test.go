package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/capture"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/httpapi"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/operator"
)

// tenfoldCapture captures ten times what it is asked, and says so.
type tenfoldCapture struct{ capture.Acquirer }

func (a tenfoldCapture) Capture(ctx context.Context, key string, req acquirer.CaptureRequest) (acquirer.Capture, error) {
	req.Amount *= 10
	return a.Acquirer.Capture(ctx, key, req)
}

// misechoedVoid voids as asked, then echoes another key than the one it
// was asked under: the answer disagrees, though the void is the one
// asked (its lookup agrees).
type misechoedVoid struct{ capture.Acquirer }

func (a misechoedVoid) Void(ctx context.Context, key string, req acquirer.VoidRequest) (acquirer.Void, error) {
	v, err := a.Acquirer.Void(ctx, key, req)
	v.IdempotencyKey = "not-" + key
	return v, err
}

// captures is a lab's worker's capture service, sending through acq.
func (l refundLab) captures(acq capture.Acquirer) *capture.Service {
	tbl := dynamo.Open(l.s.DynamoDB, l.s.TableName)
	return capture.NewService(l.guard, l.charges, tbl.Captures(), tbl.CaptureRows(), tbl.VoidRows(), acq, httpapi.RenderCapture, charge.Config{})
}

// authorizationOf authorizes 1000 BRL without its capture.
func (l refundLab) authorizationOf(t *testing.T, key string) string {
	t.Helper()
	res := l.charges.Charge(context.Background(), charge.Input{Account: "acct_ops", Keys: []string{key},
		Body: []byte(`{"amount": 1000, "currency": "BRL", "order_id": "1", "payment_method": "pm_card_visa", "capture": false}`)})
	if res.Outcome != op.Executed {
		t.Fatalf("authorize: %s", res.Outcome)
	}
	return res.ChargeID
}

func (l refundLab) mustCapturable(t *testing.T, chargeID string, capturable, reserved int64, closed capture.Closed) {
	t.Helper()
	b, err := dynamo.Open(l.s.DynamoDB, l.s.TableName).Captures().Get(context.Background(), chargeID)
	if err != nil || b.Capturable != capturable || b.Reserved != reserved || b.Closed != closed {
		t.Fatalf("the capture side %+v (%v), want %d capturable, %d reserved, closed %q", b, err, capturable, reserved, closed)
	}
}

func (l refundLab) actionRecord(operation, key string) *idem.Record {
	rec, err := l.guard.Lookup(context.Background(), idem.Scope{Operation: operation, Account: "acct_ops", Key: key}.PK())
	if err != nil {
		return nil
	}
	return rec
}

// TestHeldCapturesAndVoidsThroughTheChannel: a capture whose acquirer
// captured ten times the amount is held, listed by held and inspected
// with its entry; its accept is refused (the reservation does not hold
// those terms) and a void-confirmed gives the reservation back. A void
// of another authorization whose answer echoed another key is held and blocks every capture of its
// charge (409 VOID_IN_FLIGHT) until an operator accepts it with the
// acquirer's terms, which closes the authorization. Each in a shell that
// names another acquirer, which is never called.
func TestHeldCapturesAndVoidsThroughTheChannel(t *testing.T) {
	t.Parallel()
	l := newRefundLab(t)
	l.s.Sandbox.SetCaptureBound(false)
	env := hostileEnv(l.otherURL)
	ctx := context.Background()

	ch := l.authorizationOf(t, "held-capture-auth")
	in := capture.Input{Account: "acct_ops", Keys: []string{"capture-tenfold"}, ChargeID: ch, Body: []byte(`{"amount": 50, "final": false}`)}
	if res := l.captures(tenfoldCapture{l.acq}).Capture(ctx, in); res.Outcome != op.Mismatch {
		t.Fatalf("the tenfold capture: %s", res.Outcome)
	}
	l.mustCapturable(t, ch, 950, 50, "")
	out, _, err := l.idemctl(t, "", env, nil, "held")
	if err != nil || !strings.Contains(out, `"reason": "amount_differs"`) || !strings.Contains(out, `"action_entry"`) {
		t.Fatalf("held: %v\n%s", err, out)
	}
	args := []string{"--operation", "capture", "--account", "acct_ops", "--key", "capture-tenfold", "--yes"}
	if out, _, err = l.idemctl(t, "", env, nil, append([]string{"inspect"}, args[:6]...)...); err != nil || !strings.Contains(out, `"state": "reserved"`) {
		t.Fatalf("inspect: %v\n%s", err, out)
	}
	out, _, err = l.idemctl(t, "", env, nil, append([]string{"accept"}, args...)...)
	if err == nil || !strings.Contains(out, "amount") {
		t.Fatalf("accept of a tenfold capture: %v\n%s", err, out)
	}
	time.Sleep(workerLease + waitOut)
	out, _, err = l.idemctl(t, "", env, nil, append([]string{"void-confirmed"}, args...)...)
	if err != nil || !strings.Contains(out, operator.OutcomeReleasedByThis) || l.actionRecord(capture.OperationCapture, "capture-tenfold") != nil {
		t.Fatalf("void-confirmed: %v\n%s", err, out)
	}
	l.mustCapturable(t, ch, 1000, 0, "")

	// Another authorization: the first one's sandbox side captured 500
	// that its books, as the operator confirmed, never did.
	ch = l.authorizationOf(t, "held-void-auth")
	void := capture.Input{Account: "acct_ops", Keys: []string{"void-misechoed"}, ChargeID: ch, Body: []byte(`{}`)}
	if res := l.captures(misechoedVoid{l.acq}).Void(ctx, void); res.Outcome != op.Mismatch {
		t.Fatalf("the misechoed void: %s", res.Outcome)
	}
	blocked := capture.Input{Account: "acct_ops", Keys: []string{"capture-behind-the-void"}, ChargeID: ch, Body: []byte(`{"amount": 10, "final": false}`)}
	if res := l.captures(l.acq).Capture(ctx, blocked); res.Outcome != op.VoidInFlight {
		t.Fatalf("a capture behind a held void: %s", res.Outcome)
	}
	time.Sleep(workerLease + waitOut)
	args = []string{"--operation", "void", "--account", "acct_ops", "--key", "void-misechoed", "--yes"}
	out, _, err = l.idemctl(t, "", env, nil, append([]string{"accept"}, args...)...)
	if err != nil || !strings.Contains(out, operator.OutcomeCompletedByThis) {
		t.Fatalf("accept of the void: %v\n%s", err, out)
	}
	l.mustCapturable(t, ch, 0, 0, capture.ClosedVoided)
	if res := l.captures(l.acq).Capture(ctx, blocked); res.Outcome != op.NotCapturable {
		t.Fatalf("a capture after the accepted void: %s", res.Outcome)
	}
	if l.otherCalls.Load() != 0 {
		t.Fatalf("%d calls to the shell's acquirer", l.otherCalls.Load())
	}
}

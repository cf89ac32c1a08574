package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/capture"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/command"
	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/event"
	"github.com/idempotent-payments/idempay/internal/httpapi"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/op"
	"github.com/idempotent-payments/idempay/internal/operator"
	"github.com/idempotent-payments/idempay/internal/refund"
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
// of another authorization whose answer echoed another key is held and
// blocks every capture of its charge (409 VOID_IN_FLIGHT, void_held; a
// queued capture is told so and deleted) until an operator accepts it
// with the acquirer's terms, which closes the authorization: the queued
// capture sent again is refused. Each in a shell that names another
// acquirer, which is never called.
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
	// The authorization's own record shows its whole balance: both
	// sides, and the held capture's open entry.
	out, _, err = l.idemctl(t, "", env, nil, "inspect", "--account", "acct_ops", "--key", "held-capture-auth")
	var v view
	if err != nil || json.Unmarshal([]byte(out), &v) != nil || v.Balance == nil || v.Balance.Capture == nil ||
		*v.Balance.Capture != (captureSideView{Authorized: 1000, Capturable: 950, Reserved: 50}) || v.Balance.Refunded != 0 ||
		len(v.Balance.Entries) != 1 || v.Balance.Entries[0].State != string(refund.EntryReserved) || v.Balance.Entries[0].Amount != 50 {
		t.Fatalf("inspect of the authorization: %v\n%s", err, out)
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
	if res := l.captures(l.acq).Capture(ctx, blocked); res.Outcome != op.VoidHeld || capture.CaptureCodes.Of(res.Outcome) != op.CodeVoidInFlight {
		t.Fatalf("a capture behind a held void: %s", res.Outcome)
	}
	// The same over the producer's queue: the command is told it waits
	// for the operator (capture.rejected, VOID_IN_FLIGHT) and deleted,
	// nothing stored; sent again once the void is settled, it is refused,
	// never captured.
	queued, err := command.Capture("acct_ops", ch, "queued-capture-behind-the-void", []byte(`{"amount": 10, "final": false}`)).Encode()
	if err != nil {
		t.Fatal(err)
	}
	send := func() {
		t.Helper()
		if _, err := l.s.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(l.s.QueueURL), MessageBody: aws.String(queued)}); err != nil {
			t.Fatal(err)
		}
	}
	send()
	captures := len(l.s.Sandbox.Captures())
	if reason := rejectedFor(t, l, "ops", "queued-capture-behind-the-void", 20*time.Second); reason != string(op.CodeVoidInFlight) ||
		l.actionRecord(capture.OperationCapture, "queued-capture-behind-the-void") != nil {
		t.Fatalf("the queued capture behind the held void: told %q", reason)
	}
	time.Sleep(workerLease + waitOut)
	args = []string{"--operation", "void", "--account", "acct_ops", "--key", "void-misechoed", "--yes"}
	out, _, err = l.idemctl(t, "", env, nil, append([]string{"accept"}, args...)...)
	if err != nil || !strings.Contains(out, operator.OutcomeCompletedByThis) {
		t.Fatalf("accept of the void: %v\n%s", err, out)
	}
	l.mustCapturable(t, ch, 0, 0, capture.ClosedVoided)
	if res := l.captures(l.acq).Capture(ctx, blocked); res.Outcome != op.Executed || res.Refusal != op.CodeChargeNotCapturable {
		t.Fatalf("a capture after the accepted void: %s %s", res.Outcome, res.Refusal)
	}
	send()
	if refusal := refusedFor(t, l, "queued-capture-behind-the-void", 20*time.Second); refusal != op.CodeChargeNotCapturable || len(l.s.Sandbox.Captures()) != captures {
		t.Fatalf("the queued capture behind the held void: its key answers %q, %d captures then %d", refusal, captures, len(l.s.Sandbox.Captures()))
	}
	if l.otherCalls.Load() != 0 {
		t.Fatalf("%d calls to the shell's acquirer", l.otherCalls.Load())
	}
}

// rejectedFor is the reason of the first capture.rejected event that
// producer's outcome queue receives for key within within ("" for none).
func rejectedFor(t *testing.T, l refundLab, producer, key string, within time.Duration) string {
	t.Helper()
	url := l.s.OutcomeQueues[producer]
	for deadline := time.Now().Add(within); time.Now().Before(deadline); {
		out, err := l.s.SQS.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			var e event.Event
			if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &e); err == nil && e.Type == event.CaptureRejected && e.IdempotencyKey == key {
				return e.Reason
			}
		}
	}
	return ""
}

// refusedFor is the refusal the capture key's record stores once the
// lab's consumer has decided it, within within ("" for none).
func refusedFor(t *testing.T, l refundLab, key string, within time.Duration) op.Code {
	t.Helper()
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if rec := l.actionRecord(capture.OperationCapture, key); rec != nil && rec.Status == idem.StatusCompleted {
			r, _ := op.ResultOf(*rec.Response)
			return r.Code
		}
	}
	return ""
}

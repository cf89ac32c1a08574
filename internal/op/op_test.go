package op_test

import (
	"context"
	"errors"
	"testing"

	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/op"
)

// TestCodes: the outcomes that are answers have no code; the pending ones
// read as the operation's own; the rest read alike in every operation.
func TestCodes(t *testing.T) {
	own := op.Codes{Pending: "OWN_PENDING"}
	for _, o := range op.Outcomes() {
		got := own.Of(o)
		switch o {
		case op.Executed, op.Replayed, op.Found:
			if got != "" {
				t.Errorf("%s is an answer, with code %q", o, got)
			}
		case op.Pending, op.Mismatch, op.Held:
			if got != "OWN_PENDING" {
				t.Errorf("%s: %q, want the operation's own", o, got)
			}
		default:
			if got == "" || got != (op.Codes{Pending: "OTHER"}).Of(o) {
				t.Errorf("%s: %q, want one code for every operation", o, got)
			}
		}
	}
}

// TestTermsChanged: an accept's terms must state the shown id (the
// action's when there is one), status, amount and currency.
func TestTermsChanged(t *testing.T) {
	shown := op.Terms{AuthorizationID: "auth_1", ActionID: "rf_1", Status: "succeeded", Currency: "BRL", Amount: 100}
	same := shown
	same.AuthorizationID = "" // a refund's terms are its own id's
	if err := shown.Changed(same); err != nil {
		t.Fatalf("the same terms: %v", err)
	}
	for _, now := range []op.Terms{
		{AuthorizationID: "auth_1", ActionID: "rf_2", Status: "succeeded", Currency: "BRL", Amount: 100},
		{AuthorizationID: "auth_1", ActionID: "rf_1", Status: "declined", Currency: "BRL", Amount: 100},
		{AuthorizationID: "auth_1", ActionID: "rf_1", Status: "succeeded", Currency: "USD", Amount: 100},
		{AuthorizationID: "auth_1", ActionID: "rf_1", Status: "succeeded", Currency: "BRL", Amount: 99},
	} {
		if err := shown.Changed(now); !errors.Is(err, op.ErrTermsChanged) {
			t.Errorf("%+v: %v, want ErrTermsChanged", now, err)
		}
	}
}

// TestResult: a typed result reads back as stored; an answer without one
// says so.
func TestResult(t *testing.T) {
	n := int64(2500)
	want := op.Result{Code: op.CodeRefundExceedsCharge, ID: "re_1", Refundable: &n}
	got, ok := op.ResultOf(want.With(idem.Response{StatusCode: 422}))
	if !ok || got.Code != want.Code || got.ID != want.ID || got.Refundable == nil || *got.Refundable != n {
		t.Fatalf("read back %+v, %t", got, ok)
	}
	if _, ok := op.ResultOf(idem.Response{StatusCode: 201}); ok {
		t.Fatal("an answer stored without a result read as having one")
	}
}

// TestRegistry: an operation is found by its records' key; a key of no
// registered operation, or no record's key, is ErrUnknownOperation; two
// operations of one name are a wiring mistake.
func TestRegistry(t *testing.T) {
	r := op.NewRegistry(named("charge"), named("refund"))
	pk := idem.Scope{Operation: "refund", Account: "acct_1", Key: "refund-key-1"}.PK()
	if o, err := r.Of(pk); err != nil || o.Name() != "refund" {
		t.Fatalf("Of(a refund's record) = %v, %v", o, err)
	}
	for _, pk := range []string{idem.Scope{Operation: "payout", Account: "acct_1", Key: "refund-key-1"}.PK(), "CHARGE#ch_1"} {
		if _, err := r.Of(pk); !errors.Is(err, op.ErrUnknownOperation) {
			t.Errorf("Of(%q): %v, want ErrUnknownOperation", pk, err)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("two operations of one name registered")
		}
	}()
	op.NewRegistry(named("charge"), named("charge"))
}

// named is an operation that only has a name.
type named string

func (n named) Name() string                                   { return string(n) }
func (n named) Shown() string                                  { return "" }
func (n named) Peek(context.Context, string) (op.Terms, error) { return op.Terms{}, nil }
func (n named) Reconcile(context.Context, string) (op.Reconciled, error) {
	return op.NothingToDo, nil
}
func (n named) Settle(context.Context, op.Decision) (op.Settled[*op.Terms], error) {
	return op.Settled[*op.Terms]{}, nil
}
func (n named) ReadBack(context.Context, op.Decision) (op.Settled[*op.Terms], error) {
	return op.Settled[*op.Terms]{}, nil
}
func (n named) RowTerms(context.Context, *idem.Record) *op.Terms { return nil }

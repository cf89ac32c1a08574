package charge_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/idem"
)

func TestParseRequest(t *testing.T) {
	t.Parallel()
	ok := `{"amount": 25000, "currency": "BRL", "order_id": "123", "payment_method": "pm_card_visa", "description": "Pedido 123"}`
	req, err := charge.ParseRequest([]byte(ok), 0)
	if err != nil || req != (charge.Request{Amount: 25000, Currency: "BRL", OrderID: "123", PaymentMethod: "pm_card_visa", Description: "Pedido 123"}) {
		t.Fatalf("ParseRequest(valid) = %+v, %v", req, err)
	}
	for body, fields := range map[string]string{
		`{}`: "amount currency order_id payment_method",
		`{"amount": 0, "currency": "brl", "order_id": "a b", "payment_method": "pm"}`:       "amount currency order_id",
		`{"amount": 100000001, "currency": "BRL", "order_id": "1", "payment_method": "pm"}`: "amount",
		`{"amount": 1e3, "currency": "BRL", "order_id": "1", "payment_method": "pm"}`:       "amount",
		`{"amount": null, "currency": "BRL", "order_id": "1", "payment_method": "pm"}`:      "amount",
		`{"amount": 1, "currency": "BRL", "order_id": "1", "payment_method": "pm"} {}`:      "body",
		`[1]`:              "body",
		`{"amount": true}`: "amount currency order_id payment_method",
		`{"amount": 1, "currency": "BRL", "order_id": "1", "payment_method": "pm", "description": "a\u0000b"}`:    "description",
		`{"amount": 1, "currency": "BRL", "order_id": "` + strings.Repeat("9", 65) + `", "payment_method": "pm"}`: "order_id",
	} {
		_, err := charge.ParseRequest([]byte(body), 0)
		var v *charge.ValidationError
		if !errors.As(err, &v) || !errors.Is(err, charge.ErrValidation) {
			t.Fatalf("ParseRequest(%s) = %v, want a ValidationError", body, err)
		}
		var got []string
		for _, fe := range v.Errors {
			got = append(got, fe.Field)
		}
		if strings.Join(got, " ") != fields {
			t.Errorf("ParseRequest(%s): fields %v, want %s", body, got, fields)
		}
	}
}

func TestCanonicalRoundTrip(t *testing.T) {
	t.Parallel()
	req := charge.Request{Amount: 1, Currency: "JPY", OrderID: "o", PaymentMethod: "pm", Description: "d"}
	back, err := charge.RequestFromCanonical(req.Canonical())
	if err != nil || back != req {
		t.Fatalf("RequestFromCanonical = %+v, %v", back, err)
	}
	if _, err := charge.RequestFromCanonical(idem.Canonical{{Name: "tip", Value: "1"}}); err == nil {
		t.Fatal("unknown canonical field accepted")
	}
}

// FuzzParseRequest: never a panic; a rejection is always a ValidationError;
// an accepted request is within every limit and round-trips through its
// canonical form.
func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{
		`{"amount": 25000, "currency": "BRL", "order_id": "123", "payment_method": "pm_card_visa"}`,
		`{"amount": "1"}`, `{"amount": 1e400}`, `{"currency": null}`, `[]`, `"x"`, `{"a":1,"a":2}`, "\xff",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := charge.ParseRequest(body, 0)
		if err != nil {
			if !errors.Is(err, charge.ErrValidation) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if req.Amount <= 0 || req.Amount > charge.DefaultMaxAmount || !charge.IsCurrency(req.Currency) || req.OrderID == "" || req.PaymentMethod == "" {
			t.Fatalf("accepted out-of-bounds request %+v", req)
		}
		if back, err := charge.RequestFromCanonical(req.Canonical()); err != nil || back != req {
			t.Fatalf("canonical round trip: %+v, %v", back, err)
		}
	})
}

package charge_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/strictjson"
)

var benchBody = []byte(`{"amount": 25000, "currency": "BRL", "order_id": "123", "payment_method": "pm_card_visa", "description": "Pedido 123"}`)

// benchWire has the request's shape, for the decoders alone.
type benchWire struct {
	Amount        json.RawMessage `json:"amount"`
	Currency      *string         `json:"currency"`
	OrderID       *string         `json:"order_id"`
	PaymentMethod *string         `json:"payment_method"`
	Description   *string         `json:"description"`
}

// BenchmarkParseRequest is the cost of parsing a body strictly at the door:
// the whole parser, the strict decoder alone, and, as the yardstick in the
// same run, the decoder it replaced (encoding/json, unknown fields
// refused), which matches names case-insensitively, keeps the last of two
// duplicates and rewrites invalid UTF-8.
func BenchmarkParseRequest(b *testing.B) {
	b.Run("parse-request", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := charge.ParseRequest(benchBody, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("strict-decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var w benchWire
			if err := strictjson.Unmarshal(benchBody, &w); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("yardstick-encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var w benchWire
			dec := json.NewDecoder(bytes.NewReader(benchBody))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&w); err != nil {
				b.Fatal(err)
			}
		}
	})
}

package idem_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/idempotent-payments/idempay/internal/idem"
)

// domainCanonical parses a JSON object the way a domain package would: into
// typed fields, then in a fixed order. Key order and white space are gone.
func domainCanonical(t *testing.T, body string) idem.Canonical {
	t.Helper()
	var req struct {
		Amount   int64  `json:"amount"`
		Currency string `json:"currency"`
		OrderID  string `json:"order_id"`
	}
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		t.Fatal(err)
	}
	return idem.Canonical{
		{Name: "amount", Value: json.Number(itoa(req.Amount)).String()},
		{Name: "currency", Value: req.Currency},
		{Name: "order_id", Value: req.OrderID},
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func TestFingerprintIgnoresKeyOrderAndWhiteSpace(t *testing.T) {
	t.Parallel()
	a := domainCanonical(t, `{"amount":25000,"currency":"BRL","order_id":"123"}`)
	b := domainCanonical(t, "{\n  \"order_id\" : \"123\",\n\t\"currency\":\"BRL\",   \"amount\": 25000 }")
	if fa, fb := idem.Fingerprint("charge", a), idem.Fingerprint("charge", b); fa != fb {
		t.Fatalf("same request, different fingerprints: %s vs %s", fa, fb)
	}
}

func TestFingerprintSeparatesRequests(t *testing.T) {
	t.Parallel()
	base := idem.Canonical{{Name: "amount", Value: "100"}, {Name: "currency", Value: "BRL"}}
	variants := map[string]string{
		"base":          idem.Fingerprint("charge", base),
		"operation":     idem.Fingerprint("refund", base),
		"value":         idem.Fingerprint("charge", idem.Canonical{{Name: "amount", Value: "101"}, {Name: "currency", Value: "BRL"}}),
		"shifted":       idem.Fingerprint("charge", idem.Canonical{{Name: "amount", Value: "100\",\"currency"}, {Name: "", Value: "BRL"}}),
		"fewer fields":  idem.Fingerprint("charge", base[:1]),
		"order matters": idem.Fingerprint("charge", idem.Canonical{base[1], base[0]}),
	}
	seen := map[string]string{}
	for name, fp := range variants {
		if len(fp) != 64 {
			t.Fatalf("%s: fingerprint %q is not hex SHA-256", name, fp)
		}
		if other, dup := seen[fp]; dup {
			t.Fatalf("%s and %s share a fingerprint", name, other)
		}
		seen[fp] = name
	}
}

func TestCanonicalRoundTrip(t *testing.T) {
	t.Parallel()
	c := idem.Canonical{{Name: "amount", Value: "100"}, {Name: "description", Value: "café \"quoted\"\n"}}
	got, err := idem.DecodeCanonical(c.Encode())
	if err != nil || !slices.Equal(got, c) {
		t.Fatalf("DecodeCanonical(Encode(c)) = %v, %v; want %v", got, err, c)
	}
}

package httpapi

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

func TestLookupKey(t *testing.T) {
	for raw, want := range map[string]string{
		"idempotency_key=order-1234":                 "order-1234",
		"idempotency_key=a%26b%2Bc%25d":              "a&b+c%d",
		"idempotency_key=a+b":                        "a+b", // + is a plus: keys hold no space
		"idempotency_key=%22a%2Cb%22":                `"a,b"`,
		"idempotency_key=a,b":                        "a,b", // one value: API Gateway's joining plays no part
		"idempotency_key=a;b=c":                      "a;b=c",
		"idempotency%5Fkey=order-1234":               "order-1234",
		"idempotency_key=" + url.PathEscape("k\x7f"): "k\x7f", // the service refuses it
	} {
		got, err := LookupKey(raw)
		if err != nil || got != want {
			t.Errorf("%q: %q, %v; want %q", raw, got, err, want)
		}
	}
	if _, err := LookupKey(""); !errors.Is(err, ErrNoKeyParameter) {
		t.Errorf("no query: %v", err)
	}
	for _, raw := range []string{
		"idempotency_key=a&idempotency_key=a", // repeated, even with one value
		"idempotency_key=a&idempotency_key=b",
		"Idempotency_Key=a", "IDEMPOTENCY_KEY=a", // case variants
		"idempotency_key=a&x=1", "x=1", // unknown
		"idempotency_key", "idempotency_key=a&", "&idempotency_key=a", "idempotency_key=a&&x",
		"idempotency_key=%zz", "idempotency_key=%2", "idempotency%zzkey=a",
	} {
		if key, err := LookupKey(raw); err == nil || errors.Is(err, ErrNoKeyParameter) {
			t.Errorf("%q: accepted as %q (%v)", raw, key, err)
		}
	}
}

// FuzzLookupKey: never a panic; an accepted query names the parameter
// exactly once, and its key, every byte percent-escaped, parses back to
// itself.
func FuzzLookupKey(f *testing.F) {
	for _, s := range []string{"idempotency_key=order-1234", "idempotency_key=a%26b", "idempotency_key=a&idempotency_key=b", "", "%", "idempotency_key=a+b;c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		key, err := LookupKey(raw)
		if err != nil {
			return
		}
		if strings.Count(raw, "&") != 0 {
			t.Fatalf("%q: accepted with more than one parameter", raw)
		}
		var escaped strings.Builder
		for i := range len(key) {
			fmt.Fprintf(&escaped, "%%%02X", key[i])
		}
		again, err := LookupKey("idempotency_key=" + escaped.String())
		if err != nil || again != key {
			t.Fatalf("%q: key %q, escaped and parsed again %q, %v", raw, key, again, err)
		}
	})
}

package idem_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/idempotent-payments/idempay/internal/idem"
)

func TestParseKey(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("k", 128)
	for _, tc := range []struct {
		header, want string
		err          error
	}{
		{header: "", err: idem.ErrKeyMissing},
		{header: "order-123-attempt", want: "order-123-attempt"},
		{header: "12345678", want: "12345678"},
		{header: long, want: long},
		{header: `"order-123-attempt"`, want: "order-123-attempt"},
		{header: `"with\"quote\\ok"`, want: `with"quote\ok`},
		{header: "1234567", err: idem.ErrKeyInvalid},
		{header: long + "k", err: idem.ErrKeyInvalid},
		{header: "has a space", err: idem.ErrKeyInvalid},
		{header: "tab\there-123", err: idem.ErrKeyInvalid},
		{header: "clé-de-commande", err: idem.ErrKeyInvalid},
		{header: `"unbalanced-key`, err: idem.ErrKeyInvalid},
		{header: `"`, err: idem.ErrKeyInvalid},
		{header: `"bad\escape-key"`, err: idem.ErrKeyInvalid},
		{header: `"inner"quote-key"`, err: idem.ErrKeyInvalid},
		{header: `"trailing-backslash\"`, err: idem.ErrKeyInvalid},
		{header: `"short"`, err: idem.ErrKeyInvalid},
		{header: `"has a space"`, err: idem.ErrKeyInvalid},
		{header: "order-1-try1,order-1-try1", err: idem.ErrKeyInvalid},
		{header: "order-1-try1,", err: idem.ErrKeyInvalid},
		{header: `"order-1-try1","order-1-try1"`, err: idem.ErrKeyInvalid},
		{header: `"order,1-try1"`, want: "order,1-try1"},
	} {
		got, err := idem.ParseKey(tc.header)
		if tc.err != nil {
			if !errors.Is(err, tc.err) {
				t.Errorf("ParseKey(%q) = %q, %v; want error %v", tc.header, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseKey(%q) = %q, %v; want %q", tc.header, got, err, tc.want)
		}
	}
}

func TestParseKeyHeader(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		values []string
		want   string
		err    error
	}{
		{values: nil, err: idem.ErrKeyMissing},
		{values: []string{""}, err: idem.ErrKeyMissing},
		{values: []string{"order-1-try1"}, want: "order-1-try1"},
		{values: []string{`"order-1-try1"`}, want: "order-1-try1"},
		{values: []string{"order-1-try1", "order-1-try1"}, err: idem.ErrKeyInvalid},
		{values: []string{"order-1-try1", "order-1-try2"}, err: idem.ErrKeyInvalid},
		{values: []string{"", ""}, err: idem.ErrKeyInvalid},
		{values: []string{"order-1-try1,order-1-try1"}, err: idem.ErrKeyInvalid}, // API Gateway's joined form
	} {
		got, err := idem.ParseKeyHeader(tc.values)
		if tc.err != nil {
			if !errors.Is(err, tc.err) {
				t.Errorf("ParseKeyHeader(%q) = %q, %v; want error %v", tc.values, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseKeyHeader(%q) = %q, %v; want %q", tc.values, got, err, tc.want)
		}
	}
}

// FuzzParseKeyHeader: never a panic; several values are always refused;
// one value is exactly ParseKey of it, and an accepted bare value has no comma.
func FuzzParseKeyHeader(f *testing.F) {
	f.Add("order-1-try1", "order-1-try1", uint8(2))
	f.Add(`"a,b-c,d-e"`, "", uint8(1))
	f.Add("order-1-try1,order-1-try1", "", uint8(1))
	f.Fuzz(func(t *testing.T, first, second string, n uint8) {
		values := []string{first, second}[:min(int(n)%3, 2)]
		key, err := idem.ParseKeyHeader(values)
		switch len(values) {
		case 0:
			if !errors.Is(err, idem.ErrKeyMissing) {
				t.Fatalf("no value: %q, %v", key, err)
			}
		case 1:
			want, wantErr := idem.ParseKey(first)
			if key != want || (err == nil) != (wantErr == nil) {
				t.Fatalf("ParseKeyHeader(%q) = %q, %v; ParseKey = %q, %v", values, key, err, want, wantErr)
			}
			if err == nil && !strings.HasPrefix(first, `"`) && strings.Contains(first, ",") {
				t.Fatalf("accepted a bare key with a comma: %q", first)
			}
		default:
			if !errors.Is(err, idem.ErrKeyInvalid) {
				t.Fatalf("two values %q accepted: %q, %v", values, key, err)
			}
		}
	})
}

// FuzzParseKey: never a panic; every accepted key is 8–128 visible ASCII and
// valid in a Scope; every rejection is a typed error.
func FuzzParseKey(f *testing.F) {
	for _, s := range []string{"", "order-123-attempt", `"quoted-key-1"`, `"a\"b\\c-long"`, `"`, "\x00\x01", "ключ-ключ"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		key, err := idem.ParseKey(header)
		if err != nil {
			if !errors.Is(err, idem.ErrKeyInvalid) && !errors.Is(err, idem.ErrKeyMissing) {
				t.Fatalf("ParseKey(%q): untyped error %v", header, err)
			}
			return
		}
		if len(key) < idem.MinKeyLen || len(key) > idem.MaxKeyLen {
			t.Fatalf("ParseKey(%q) accepted length %d", header, len(key))
		}
		for i := 0; i < len(key); i++ {
			if key[i] < 0x21 || key[i] > 0x7e {
				t.Fatalf("ParseKey(%q) accepted byte %#x", header, key[i])
			}
		}
		if err := (idem.Scope{Operation: "charge", Account: "a", Key: key}).Validate(); err != nil {
			t.Fatalf("parsed key %q invalid in a scope: %v", key, err)
		}
	})
}

func TestValidateAccount(t *testing.T) {
	t.Parallel()
	for account, ok := range map[string]bool{
		"acct_1": true, "user|auth0:abc": true, "conta-são-paulo": true, strings.Repeat("a", 256): true,
		"": false, strings.Repeat("a", 257): false, "a\nb": false, "\xff\xfe": false,
	} {
		err := idem.ValidateAccount(account)
		if ok != (err == nil) || (err != nil && !errors.Is(err, idem.ErrAccountInvalid)) {
			t.Errorf("ValidateAccount(%q) = %v, want ok=%v", account, err, ok)
		}
	}
}

// TestPKIsInjective: parts that contain the separator cannot be shifted from
// one part into another to forge someone else's key.
func TestPKIsInjective(t *testing.T) {
	t.Parallel()
	scopes := []idem.Scope{
		{Operation: "charge", Account: "a#b", Key: "c"},
		{Operation: "charge", Account: "a", Key: "b#c"},
		{Operation: "charge#a", Account: "b", Key: "c"},
		{Operation: "charge", Account: "1:a", Key: "b"},
		{Operation: "charge", Account: "1", Key: ":ab"},
		{Operation: "refund", Account: "a#b", Key: "c"},
	}
	seen := map[string]idem.Scope{}
	for _, s := range scopes {
		pk := s.PK()
		if prev, dup := seen[pk]; dup {
			t.Fatalf("%+v and %+v share pk %q", prev, s, pk)
		}
		seen[pk] = s
	}
}

func TestParsePK(t *testing.T) {
	t.Parallel()
	good := idem.Scope{Operation: "charge", Account: "acct_7Hq2", Key: "order-123-attempt"}
	if s, err := idem.ParsePK(good.PK()); err != nil || s != good {
		t.Fatalf("ParsePK(%q) = %+v, %v", good.PK(), s, err)
	}
	for _, pk := range []string{
		"", "IDEM#", "CHARGE#ch_0123", "IDEM#6:charge9:acct_7Hq2", // a part missing
		"IDEM#6:charge9:acct_7Hq217:order-123-attemptX", // trailing bytes
		"IDEM#06:charge9:acct_7Hq217:order-123-attempt", // a length with a leading zero
		"IDEM#+6:charge9:acct_7Hq217:order-123-attempt", // a signed length
		"IDEM#6:charge9:acct_7Hq299:order-123-attempt",  // a length past the end
		"IDEM#0:9:acct_7Hq217:order-123-attempt",        // no operation
		"IDEM#6:charge9:acct_7Hq25:short",               // a key Validate refuses
		"IDEM#6:charge0:17:order-123-attempt",           // no account
		"idem#6:charge9:acct_7Hq217:order-123-attempt",  // case
	} {
		if s, err := idem.ParsePK(pk); !errors.Is(err, idem.ErrNotARecord) {
			t.Errorf("ParsePK(%q) = %+v, %v; want ErrNotARecord", pk, s, err)
		}
	}
}

// FuzzParsePK: whatever parses is exactly the PK of a valid scope.
func FuzzParsePK(f *testing.F) {
	f.Add(idem.Scope{Operation: "charge", Account: "acct_7Hq2", Key: "order-123-attempt"}.PK())
	f.Add("IDEM#6:charge9:acct_7Hq25:short")
	f.Add("IDEM#1:a1:b8:12345678")
	f.Fuzz(func(t *testing.T, pk string) {
		s, err := idem.ParsePK(pk)
		if err != nil {
			return
		}
		if s.Validate() != nil || s.PK() != pk {
			t.Fatalf("ParsePK(%q) = %+v, which is not valid or has another PK %q", pk, s, s.PK())
		}
	})
}

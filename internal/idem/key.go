package idem

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Key length bounds, in characters (all ASCII, so also bytes).
const (
	MinKeyLen = 8
	MaxKeyLen = 128
	// MaxAccountLen bounds the account identifier in bytes.
	MaxAccountLen = 256
)

// ParseKeyHeader parses the Idempotency-Key of one request from its values
// as they arrived: one element per occurrence of the header (or of the
// message member), none when it is absent. A key sent more than once is
// ErrKeyInvalid, even when the copies agree: a proxy may join them into a
// list, and the request would mean two things. Otherwise it is ParseKey of
// the one value.
func ParseKeyHeader(values []string) (string, error) {
	switch len(values) {
	case 0:
		return "", ErrKeyMissing
	case 1:
		return ParseKey(values[0])
	}
	return "", fmt.Errorf("%w: sent %d times", ErrKeyInvalid, len(values))
}

// ParseKey validates one Idempotency-Key header value and returns the key.
//
// A key is 8–128 visible ASCII characters (0x21–0x7E). The IETF draft's
// sf-string form is accepted too: the key between double quotes, where \" and
// \\ stand for " and \. The quoted and the bare form of the same characters
// are the same key. A bare key must not contain a comma: that is a list, or
// two headers joined by a proxy (a key with a comma is sent quoted). It
// returns ErrKeyMissing for an empty value and ErrKeyInvalid (wrapped with
// the reason) for anything else that is not a key.
func ParseKey(header string) (string, error) {
	if header == "" {
		return "", ErrKeyMissing
	}
	key := header
	if !strings.HasPrefix(header, `"`) && strings.Contains(header, ",") {
		return "", fmt.Errorf("%w: a bare key with a comma is a list or a joined duplicate", ErrKeyInvalid)
	}
	if strings.HasPrefix(header, `"`) {
		unquoted, err := unquoteSFString(header)
		if err != nil {
			return "", err
		}
		key = unquoted
	}
	if err := checkKey(key); err != nil {
		return "", err
	}
	return key, nil
}

// checkKey enforces the length and the character set of a parsed key.
func checkKey(key string) error {
	if n := len(key); n < MinKeyLen || n > MaxKeyLen {
		return fmt.Errorf("%w: length %d, want %d–%d", ErrKeyInvalid, n, MinKeyLen, MaxKeyLen)
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x21 || c > 0x7e {
			return fmt.Errorf("%w: character %d is not visible ASCII", ErrKeyInvalid, i+1)
		}
	}
	return nil
}

// unquoteSFString decodes an RFC 8941 sf-string: "..." with \" and \\ escapes.
func unquoteSFString(s string) (string, error) {
	if len(s) < 2 || s[len(s)-1] != '"' {
		return "", fmt.Errorf("%w: unbalanced quotes", ErrKeyInvalid)
	}
	inner := s[1 : len(s)-1]
	var b strings.Builder
	for i := 0; i < len(inner); i++ {
		switch c := inner[i]; c {
		case '\\':
			if i+1 == len(inner) || (inner[i+1] != '"' && inner[i+1] != '\\') {
				return "", fmt.Errorf("%w: bad escape in quoted key", ErrKeyInvalid)
			}
			i++
			b.WriteByte(inner[i])
		case '"':
			return "", fmt.Errorf("%w: unescaped quote inside quoted key", ErrKeyInvalid)
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// ValidateAccount reports ErrAccountInvalid (wrapped with the reason) unless
// account is 1–256 bytes of valid UTF-8 without control characters.
func ValidateAccount(account string) error {
	switch {
	case account == "":
		return fmt.Errorf("%w: empty", ErrAccountInvalid)
	case len(account) > MaxAccountLen:
		return fmt.Errorf("%w: longer than %d bytes", ErrAccountInvalid, MaxAccountLen)
	case !utf8.ValidString(account):
		return fmt.Errorf("%w: not UTF-8", ErrAccountInvalid)
	case strings.IndexFunc(account, unicode.IsControl) >= 0:
		return fmt.Errorf("%w: control character", ErrAccountInvalid)
	}
	return nil
}

// Scope names one idempotent operation: the same key under two accounts, or
// under two operations, is two different scopes.
type Scope struct {
	// Operation names what the key protects, e.g. "charge". Entry points that
	// perform the same operation (HTTP and SQS) must use the same name so they
	// share one key space.
	Operation string
	// Account is the authenticated caller (never taken from the request body).
	Account string
	// Key is the client's idempotency key, as returned by ParseKey.
	Key string
	// Source says where the request came from (the caller's own name for
	// an entry point). It is stored on the record at claim (Record.Source)
	// and is not part of the key's identity: PK ignores it, so every entry
	// point of one operation shares one key space.
	Source string
}

// Validate checks the account and the parsed key (see ValidateAccount and
// ParseKey): ErrAccountInvalid, ErrKeyMissing or ErrKeyInvalid.
func (s Scope) Validate() error {
	if s.Operation == "" {
		return fmt.Errorf("scope: empty operation")
	}
	if err := ValidateAccount(s.Account); err != nil {
		return err
	}
	if s.Key == "" {
		return ErrKeyMissing
	}
	return checkKey(s.Key)
}

// RecordPrefix begins the key of every idempotency record (Scope.PK);
// IAM conditions that confine a role to records use it.
const RecordPrefix = "IDEM#"

// SentinelPK is a key under RecordPrefix that Scope.PK never makes (its
// parts carry length prefixes): the health check reads it, finding
// nothing, and nothing is ever written under it.
const SentinelPK = RecordPrefix + "sentinel"

// PK is the record's partition key: RecordPrefix followed by each part as
// <byte length>:<bytes>. The length prefixes make the encoding injective, so
// ("a#b", "c") and ("a", "b#c") can never collide, whatever the parts contain.
func (s Scope) PK() string {
	var b strings.Builder
	b.WriteString(RecordPrefix)
	for _, part := range []string{s.Operation, s.Account, s.Key} {
		b.WriteString(strconv.Itoa(len(part)))
		b.WriteByte(':')
		b.WriteString(part)
	}
	return b.String()
}

// ErrNotARecord: a partition key that Scope.PK never writes.
var ErrNotARecord = errors.New("not an idempotency record's key")

// ParsePK is the inverse of Scope.PK: it returns the scope whose record pk
// is, or ErrNotARecord (wrapped with the reason) when pk is not one a valid
// scope writes: another row's key, a malformed length, trailing bytes, or a
// scope that Validate refuses. A pk that parses is exactly Scope.PK of the
// scope returned.
func ParsePK(pk string) (Scope, error) {
	rest, ok := strings.CutPrefix(pk, RecordPrefix)
	if !ok {
		return Scope{}, fmt.Errorf("%w: no IDEM# prefix", ErrNotARecord)
	}
	var parts [3]string
	for i := range parts {
		digits, after, ok := strings.Cut(rest, ":")
		n, err := strconv.Atoi(digits)
		if !ok || err != nil || n < 0 || n > len(after) || digits != strconv.Itoa(n) {
			return Scope{}, fmt.Errorf("%w: part %d has no valid length", ErrNotARecord, i+1)
		}
		parts[i], rest = after[:n], after[n:]
	}
	if rest != "" {
		return Scope{}, fmt.Errorf("%w: trailing bytes", ErrNotARecord)
	}
	s := Scope{Operation: parts[0], Account: parts[1], Key: parts[2]}
	if err := s.Validate(); err != nil {
		return Scope{}, fmt.Errorf("%w: %w", ErrNotARecord, err)
	}
	return s, nil
}

package idem

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
)

// fingerprintVersion is mixed into every fingerprint. Bump it when the
// canonical form changes meaning, so old records are never mistaken for new.
const fingerprintVersion = "idem-fingerprint/v1"

// Field is one named value of a canonical request.
type Field struct {
	Name  string
	Value string
}

// Canonical is a request reduced to its parsed fields in a fixed order chosen
// by the caller. Building it from parsed values (not raw bytes) is what makes
// key order and white space in the client's JSON irrelevant.
type Canonical []Field

// Encode returns the stored form: a JSON array of [name, value] pairs in order.
// The encoding is deterministic and is what the fingerprint hashes.
func (c Canonical) Encode() []byte {
	pairs := make([][2]string, len(c))
	for i, f := range c {
		pairs[i] = [2]string{f.Name, f.Value}
	}
	b, err := json.Marshal(pairs)
	if err != nil { // cannot happen: strings always marshal
		panic(err)
	}
	return b
}

// DecodeCanonical parses the stored form written by Canonical.Encode.
func DecodeCanonical(b []byte) (Canonical, error) {
	var pairs [][2]string
	if err := json.Unmarshal(b, &pairs); err != nil {
		return nil, err
	}
	c := make(Canonical, len(pairs))
	for i, p := range pairs {
		c[i] = Field{Name: p[0], Value: p[1]}
	}
	return c, nil
}

// Fingerprint is the hex SHA-256 of the version tag, the operation and the
// canonical request. Two requests with the same operation and fields in the
// same order have the same fingerprint; anything else differs.
func Fingerprint(operation string, c Canonical) string {
	return fingerprintEncoded(operation, c.Encode())
}

// fingerprintEncoded hashes an already encoded canonical request. The version
// and the operation are length-prefixed so neither can run into the other.
func fingerprintEncoded(operation string, encoded []byte) string {
	h := sha256.New()
	for _, part := range []string{fingerprintVersion, operation} {
		h.Write([]byte(strconv.Itoa(len(part)) + ":" + part))
	}
	h.Write(encoded)
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0]))
}

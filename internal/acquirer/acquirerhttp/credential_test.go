package acquirerhttp

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestCredentialAges: read once, re-read past MaxAge, re-read on a refusal
// only MinAge after the last read and only if the refused key is still the
// current one, and a failed re-read keeps the key.
func TestCredentialAges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Unix(1_800_000_000, 0)
	value, reads := "k1", 0
	var failing bool
	c := NewCredential(func(context.Context) (string, error) {
		reads++
		if failing {
			return "", errors.New("secrets manager down")
		}
		return value, nil
	}, time.Minute, 10*time.Second)
	c.now = func() time.Time { return now }
	if k, err := c.Key(ctx); k != "k1" || err != nil || reads != 1 {
		t.Fatalf("first read: %q %v, %d reads", k, err, reads)
	}
	value = "k2"
	if k, _ := c.Key(ctx); k != "k1" || reads != 1 {
		t.Fatalf("cached: %q, %d reads", k, reads)
	}
	if k, changed := c.Refused(ctx, "k1"); changed || k != "k1" || reads != 1 {
		t.Fatalf("refusal within MinAge: %q %v, %d reads", k, changed, reads)
	}
	now = now.Add(11 * time.Second)
	if k, changed := c.Refused(ctx, "k1"); !changed || k != "k2" || reads != 2 {
		t.Fatalf("refusal past MinAge: %q %v, %d reads", k, changed, reads)
	}
	if k, changed := c.Refused(ctx, "k1"); !changed || k != "k2" || reads != 2 {
		t.Fatalf("a refusal of an older key: %q %v, %d reads; want the current key, no read", k, changed, reads)
	}
	now, failing = now.Add(2*time.Minute), true
	if k, err := c.Key(ctx); k != "k2" || err != nil || reads != 3 {
		t.Fatalf("failed re-read past MaxAge: %q %v, %d reads; want the cached key", k, err, reads)
	}
	if c.Key(ctx); reads != 3 {
		t.Fatalf("%d reads: a failed source is tried again at once", reads)
	}
	now = now.Add(11 * time.Second)
	if c.Key(ctx); reads != 4 {
		t.Fatalf("%d reads: a failed source is not tried again after MinAge", reads)
	}
	if _, err := NewCredential(func(context.Context) (string, error) { return "", errors.New("no secret") }, 0, 0).Key(ctx); err == nil {
		t.Fatal("a credential never read succeeded")
	}
}

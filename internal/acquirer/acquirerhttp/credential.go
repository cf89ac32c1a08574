package acquirerhttp

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Credential is the acquirer API key and where it comes from. It is read
// once and cached; the cache is re-read when older than MaxAge, and at
// once when the acquirer refuses the key (401 or 403), at most every
// MinAge: a rotation, or the first real value put into a new secret, takes
// effect without a restart, and a flood of refusals reads the secret once.
type Credential struct {
	read           func(context.Context) (string, error)
	maxAge, minAge time.Duration
	now            func() time.Time

	mu     sync.Mutex
	key    string
	readAt time.Time
	loaded bool
}

// Default ages of a Credential that re-reads its source.
const (
	DefaultCredentialMaxAge = 5 * time.Minute
	DefaultCredentialMinAge = 10 * time.Second
)

// NewCredential returns a credential read by read (the secret), cached for
// maxAge and re-read on a refusal no sooner than minAge after the last read
// (zero: the defaults).
func NewCredential(read func(context.Context) (string, error), maxAge, minAge time.Duration) *Credential {
	if maxAge <= 0 {
		maxAge = DefaultCredentialMaxAge
	}
	if minAge <= 0 {
		minAge = DefaultCredentialMinAge
	}
	return &Credential{read: read, maxAge: maxAge, minAge: minAge, now: time.Now}
}

// StaticCredential is a key that never changes ("" for none).
func StaticCredential(key string) *Credential {
	return &Credential{key: key, loaded: true, read: nil}
}

// Key returns the current key, reading it when it was never read or is
// older than MaxAge. A failed re-read keeps the cached key and is tried
// again MinAge later.
func (c *Credential) Key(ctx context.Context) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.read == nil || (c.loaded && c.now().Sub(c.readAt) < c.maxAge) {
		return c.key, nil
	}
	if err := c.reload(ctx); err != nil {
		if !c.loaded {
			return "", err
		}
		c.readAt = c.now().Add(c.minAge - c.maxAge) // keep the key; try the source again MinAge from now
	}
	return c.key, nil
}

// Refused reports that the acquirer refused used. It re-reads the source
// unless the key changed since used was handed out or the last read is
// younger than MinAge, and returns the key to try next and whether it
// differs from used.
func (c *Credential) Refused(ctx context.Context, used string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.read != nil && c.key == used && c.now().Sub(c.readAt) >= c.minAge {
		if c.reload(ctx) != nil {
			c.readAt = c.now() // keep the refused key, and the source's rate limit
		}
	}
	return c.key, c.key != used
}

func (c *Credential) reload(ctx context.Context) error {
	key, err := c.read(ctx)
	if err != nil {
		return fmt.Errorf("read the acquirer credential: %w", err)
	}
	c.key, c.readAt, c.loaded = key, c.now(), true
	return nil
}

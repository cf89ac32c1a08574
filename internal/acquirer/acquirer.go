// Package acquirer is the HTTP client of the card acquirer. It sends every
// attempt of one intent with the same Idempotency-Key and classifies each
// failure by what it proves: nothing was sent, or the outcome is unknown.
package acquirer

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/idempotent-payments/idempay/internal/strictjson"
)

// Errors callers branch on, with errors.Is.
var (
	// ErrNotSent: the request provably never left (no connection was made:
	// refused, DNS failure, dial timeout). The acquirer cannot have seen it.
	ErrNotSent = errors.New("acquirer request not sent")
	// ErrOutcomeUnknown: the request may have reached the acquirer (timeout,
	// connection reset after writing, a 5xx or any unexpected answer). The
	// authorization may exist; only a lookup by key can tell.
	ErrOutcomeUnknown = errors.New("acquirer outcome unknown")
	// ErrNotFound: a lookup found nothing (no authorization, no refund)
	// under the key.
	ErrNotFound = errors.New("not found under the key")
	// ErrCredentialRefused: the acquirer answered 401 (the credential is
	// not valid). Its contract (the sandbox's) is that the credential is
	// checked before anything is processed, so an Authorize refused this
	// way also wraps ErrNotSent. The credential has been told
	// (Credential.Refused, which re-reads its source at most every MinAge);
	// when it now holds a key other than the refused one, the error also
	// wraps ErrCredentialChanged. A 403 proves no such thing (a business
	// rule, a proxy) and is ErrOutcomeUnknown, after the same telling.
	ErrCredentialRefused = errors.New("acquirer refused the credential")
	// ErrCredentialChanged: with ErrCredentialRefused, the credential now
	// holds a key other than the refused one (this call's re-read found it,
	// or an earlier one did), so a caller that may send again
	// (charge.Service, after checking its lease) sends once more with it.
	// Without it the same key would be refused again: nothing to resend.
	ErrCredentialChanged = errors.New("the credential has changed since")
)

// Statuses of an authorization.
const (
	StatusCaptured = "captured"
	StatusDeclined = "declined"
)

// Request is what is sent to authorize a charge.
type Request struct {
	Amount        int64  `json:"amount"`
	Currency      string `json:"currency"`
	PaymentMethod string `json:"payment_method"`
	OrderID       string `json:"order_id"`
	Description   string `json:"description,omitempty"`
}

// Authorization is the acquirer's answer: evidence to be checked
// (CheckTerms) before it becomes an outcome.
type Authorization struct {
	ID          string `json:"id"`
	Status      string `json:"status"`
	DeclineCode string `json:"decline_code,omitempty"`
	Amount      int64  `json:"amount"`
	Currency    string `json:"currency"`
	// IdempotencyKey is the key the acquirer says it was asked under,
	// where it echoes it ("" when it does not).
	IdempotencyKey string    `json:"idempotency_key,omitempty"`
	CreatedAt      time.Time `json:"created_at"`
}

// Client talks to one acquirer base URL.
type Client struct {
	base *url.URL
	http *http.Client
	cred *Credential
}

// NewClient returns a client for baseURL. apiKey, when set, is sent as a
// bearer credential. httpClient nil means a client with its own transport
// (no shared connection pool with the rest of the process).
func NewClient(baseURL, apiKey string, httpClient *http.Client) (*Client, error) {
	return NewClientWithCredential(baseURL, StaticCredential(apiKey), httpClient)
}

// NewClientWithCredential is NewClient with a credential that may change
// (a secret re-read on refusal, see Credential).
func NewClientWithCredential(baseURL string, cred *Credential, httpClient *http.Client) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("acquirer base URL %q: want http(s)://host[:port]", baseURL)
	}
	if httpClient == nil {
		httpClient = &http.Client{Transport: &http.Transport{
			MaxIdleConnsPerHost: 16,
			IdleConnTimeout:     30 * time.Second,
			TLSClientConfig:     &tls.Config{MinVersion: tls.VersionTLS12},
		}}
	}
	return &Client{base: u, http: httpClient, cred: cred}, nil
}

// Authorize asks the acquirer to authorize and capture req under key. The
// acquirer deduplicates by key: every call with one key returns the first
// authorization. The context bounds the call. Errors: ErrNotSent,
// ErrOutcomeUnknown (both wrapped with the cause); a 401 also
// ErrCredentialRefused, after the credential was told, and
// ErrCredentialChanged when it now holds another key; a *MismatchError
// when the HTTP status and the body disagree (evidence.go). The terms are
// the caller's to check (CheckTerms).
//
// One call is one send. Go's Transport resends a POST that carries an
// Idempotency-Key on a fresh connection when a reused one fails; that
// second send would happen after the service checked the lease for T + skew
// (DESIGN §4 rule 3) and would hide the "outcome unknown" the service must
// see. The body is therefore given so the Transport cannot rewind it
// (no GetBody), and the service alone decides what happens next.
func (c *Client) Authorize(ctx context.Context, key string, req Request) (Authorization, error) {
	status, body, err := c.post(ctx, key, req, "v1", "authorizations")
	if err != nil {
		return Authorization{}, err
	}
	return read(EndpointAuthorize, status, body)
}

// post sends v as JSON to the path under key, once (Authorize says why),
// and returns the answer. A 401 that stands was refused before processing:
// it wraps ErrNotSent as well as ErrCredentialRefused (the contract).
func (c *Client) post(ctx context.Context, key string, v any, path ...string) (int, []byte, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return 0, nil, fmt.Errorf("%w: encode: %v", ErrNotSent, err)
	}
	status, respBody, err := c.do(ctx, false, func() (*http.Request, error) {
		r, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base.JoinPath(path...).String(), io.NopCloser(bytes.NewReader(body)))
		if err != nil {
			return nil, err
		}
		r.ContentLength = int64(len(body)) // unknown to NewRequest behind the NopCloser
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Idempotency-Key", key)
		return r, nil
	})
	if errors.Is(err, ErrCredentialRefused) {
		return 0, nil, fmt.Errorf("%w: %w", ErrNotSent, err) // refused before processing: the contract
	}
	return status, respBody, err
}

// get reads the path, resending once with a changed credential (a read
// may be sent twice). A 404 is ErrNotFound.
func (c *Client) get(ctx context.Context, path ...string) (int, []byte, error) {
	status, body, err := c.do(ctx, true, func() (*http.Request, error) {
		return http.NewRequestWithContext(ctx, http.MethodGet, c.base.JoinPath(path...).String(), nil)
	})
	if err == nil && status == http.StatusNotFound {
		err = ErrNotFound
	}
	return status, body, err
}

// read decodes an answer of endpoint that carries an authorization and
// checks its status against the body's.
func read(endpoint string, status int, body []byte) (Authorization, error) {
	if !carriesAnswer(endpoint, status) {
		return Authorization{}, fmt.Errorf("%w: status %d", ErrOutcomeUnknown, status)
	}
	a, err := decode(body)
	if err != nil {
		return Authorization{}, err
	}
	return a, checkPairing(endpoint, status, a)
}

// Lookup returns the authorization made under key, or ErrNotFound; a
// *MismatchError when the HTTP status and the body disagree. Any other
// failure is an error that proves nothing either way. The terms are the
// caller's to check (CheckTerms).
func (c *Client) Lookup(ctx context.Context, key string) (Authorization, error) {
	return lookup(ctx, c, "lookup", EndpointLookup, read, "v1", "authorizations", key)
}

// lookup reads the path and, when it names something, decodes it with
// read as an answer of endpoint: ErrNotFound as it is, any other failure
// wrapped in what.
func lookup[T any](ctx context.Context, c *Client, what, endpoint string, read func(string, int, []byte) (T, error), path ...string) (T, error) {
	var zero T
	status, body, err := c.get(ctx, path...)
	if errors.Is(err, ErrNotFound) {
		return zero, err
	}
	if err != nil {
		return zero, fmt.Errorf("%s: %w", what, err)
	}
	v, err := read(endpoint, status, body)
	if err != nil {
		return v, fmt.Errorf("%s: %w", what, err)
	}
	return v, nil
}

// do sends the request build makes, with the credential, and reads the
// whole answer. A 401 or 403 re-reads the credential; with resend (a read),
// a changed credential is sent once more. A 401 that stands is
// ErrCredentialRefused, a 403 ErrOutcomeUnknown. A failure before any
// connection was obtained is ErrNotSent (also when building the request or
// reading the credential fails); any failure after is ErrOutcomeUnknown,
// because bytes may have left even if the write did not complete.
func (c *Client) do(ctx context.Context, resend bool, build func() (*http.Request, error)) (int, []byte, error) {
	apiKey, err := c.cred.Key(ctx)
	if err != nil {
		return 0, nil, fmt.Errorf("%w: %v", ErrNotSent, err)
	}
	for retried := false; ; retried = true {
		req, err := build()
		if err != nil {
			return 0, nil, fmt.Errorf("%w: %v", ErrNotSent, err)
		}
		status, body, err := c.send(req, apiKey)
		if err != nil || (status != http.StatusUnauthorized && status != http.StatusForbidden) {
			return status, body, err
		}
		next, changed := c.cred.Refused(ctx, apiKey)
		if !resend || retried || !changed {
			switch {
			case status == http.StatusForbidden:
				return 0, nil, fmt.Errorf("%w: status 403", ErrOutcomeUnknown)
			case changed:
				return 0, nil, fmt.Errorf("%w (%w): status %d", ErrCredentialRefused, ErrCredentialChanged, status)
			}
			return 0, nil, fmt.Errorf("%w: status %d", ErrCredentialRefused, status)
		}
		apiKey = next
	}
}

func (c *Client) send(req *http.Request, apiKey string) (int, []byte, error) {
	if apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+apiKey)
	}
	var connected atomic.Bool
	trace := &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { connected.Store(true) }}
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
	resp, err := c.http.Do(req)
	if err != nil {
		if !connected.Load() {
			return 0, nil, fmt.Errorf("%w: %v", ErrNotSent, err)
		}
		return 0, nil, fmt.Errorf("%w: %v", ErrOutcomeUnknown, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, nil, fmt.Errorf("%w: read answer: %v", ErrOutcomeUnknown, err)
	}
	return resp.StatusCode, body, nil
}

// decode reads an authorization strictly: an answer that could mean two
// things (two "status" members, a "Status" beside "status", bytes that are
// not UTF-8) is no answer, so the outcome stays unknown and is looked up
// again rather than guessed.
func decode(body []byte) (Authorization, error) {
	var a Authorization
	if err := strictjson.UnmarshalResponse(body, &a); err != nil || a.ID == "" || (a.Status != StatusCaptured && a.Status != StatusDeclined) {
		return Authorization{}, fmt.Errorf("%w: unreadable authorization", ErrOutcomeUnknown)
	}
	return a, nil
}

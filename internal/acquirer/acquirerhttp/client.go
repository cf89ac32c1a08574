// Package acquirerhttp is the HTTP client of the card acquirer. It sends
// every attempt of one intent with the same Idempotency-Key and
// classifies each failure by what it proves (acquirer.ErrNotSent,
// acquirer.ErrOutcomeUnknown). The operations take it through their
// Acquirer seams, as they take the store.
package acquirerhttp

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

	"github.com/idempotent-payments/idempay/internal/acquirer"
)

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
// authorization. The context bounds the call. Errors: acquirer.ErrNotSent,
// acquirer.ErrOutcomeUnknown (both wrapped with the cause); a 401 also
// acquirer.ErrCredentialRefused, after the credential was told, and
// acquirer.ErrCredentialChanged when it now holds another key; a *acquirer.MismatchError
// when the HTTP status and the body disagree (evidence.go). The terms are
// the caller's to check (CheckTerms).
//
// One call is one send. Go's Transport resends a POST that carries an
// Idempotency-Key on a fresh connection when a reused one fails; that
// second send would happen after the service checked the lease for T + skew
// (DESIGN §4 rule 3) and would hide the "outcome unknown" the service must
// see. The body is therefore given so the Transport cannot rewind it
// (no GetBody), and the service alone decides what happens next.
func (c *Client) Authorize(ctx context.Context, key string, req acquirer.Request) (acquirer.Authorization, error) {
	status, body, err := c.post(ctx, key, req, "v1", "authorizations")
	if err != nil {
		return acquirer.Authorization{}, err
	}
	return acquirer.ReadAuthorization(acquirer.EndpointAuthorize, status, body)
}

// post sends v as JSON to the path under key, once (Authorize says why),
// and returns the answer. A 401 that stands was refused before processing:
// it wraps acquirer.ErrNotSent as well as acquirer.ErrCredentialRefused (the contract).
func (c *Client) post(ctx context.Context, key string, v any, path ...string) (int, []byte, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return 0, nil, fmt.Errorf("%w: encode: %v", acquirer.ErrNotSent, err)
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
	if errors.Is(err, acquirer.ErrCredentialRefused) {
		return 0, nil, fmt.Errorf("%w: %w", acquirer.ErrNotSent, err) // refused before processing: the contract
	}
	return status, respBody, err
}

// get reads the path, resending once with a changed credential (a read
// may be sent twice). A 404 is acquirer.ErrNotFound.
func (c *Client) get(ctx context.Context, path ...string) (int, []byte, error) {
	status, body, err := c.do(ctx, true, func() (*http.Request, error) {
		return http.NewRequestWithContext(ctx, http.MethodGet, c.base.JoinPath(path...).String(), nil)
	})
	if err == nil && status == http.StatusNotFound {
		err = acquirer.ErrNotFound
	}
	return status, body, err
}

// Lookup returns the authorization made under key, or acquirer.ErrNotFound; a
// *acquirer.MismatchError when the HTTP status and the body disagree. Any other
// failure is an error that proves nothing either way. The terms are the
// caller's to check (CheckTerms).
func (c *Client) Lookup(ctx context.Context, key string) (acquirer.Authorization, error) {
	return lookup(ctx, c, "lookup", acquirer.EndpointLookup, acquirer.ReadAuthorization, "v1", "authorizations", key)
}

// lookup reads the path and, when it names something, decodes it with
// read as an answer of endpoint: acquirer.ErrNotFound as it is, any other failure
// wrapped in what.
func lookup[T any](ctx context.Context, c *Client, what, endpoint string, read func(string, int, []byte) (T, error), path ...string) (T, error) {
	var zero T
	status, body, err := c.get(ctx, path...)
	if errors.Is(err, acquirer.ErrNotFound) {
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
// acquirer.ErrCredentialRefused, a 403 acquirer.ErrOutcomeUnknown. A failure before any
// connection was obtained is acquirer.ErrNotSent (also when building the request or
// reading the credential fails); any failure after is acquirer.ErrOutcomeUnknown,
// because bytes may have left even if the write did not complete.
func (c *Client) do(ctx context.Context, resend bool, build func() (*http.Request, error)) (int, []byte, error) {
	apiKey, err := c.cred.Key(ctx)
	if err != nil {
		return 0, nil, fmt.Errorf("%w: %v", acquirer.ErrNotSent, err)
	}
	for retried := false; ; retried = true {
		req, err := build()
		if err != nil {
			return 0, nil, fmt.Errorf("%w: %v", acquirer.ErrNotSent, err)
		}
		status, body, err := c.send(req, apiKey)
		if err != nil || (status != http.StatusUnauthorized && status != http.StatusForbidden) {
			return status, body, err
		}
		next, changed := c.cred.Refused(ctx, apiKey)
		if !resend || retried || !changed {
			switch {
			case status == http.StatusForbidden:
				return 0, nil, fmt.Errorf("%w: status 403", acquirer.ErrOutcomeUnknown)
			case changed:
				return 0, nil, fmt.Errorf("%w (%w): status %d", acquirer.ErrCredentialRefused, acquirer.ErrCredentialChanged, status)
			}
			return 0, nil, fmt.Errorf("%w: status %d", acquirer.ErrCredentialRefused, status)
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
			return 0, nil, fmt.Errorf("%w: %v", acquirer.ErrNotSent, err)
		}
		return 0, nil, fmt.Errorf("%w: %v", acquirer.ErrOutcomeUnknown, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, nil, fmt.Errorf("%w: read answer: %v", acquirer.ErrOutcomeUnknown, err)
	}
	return resp.StatusCode, body, nil
}

// Refund asks the acquirer to refund req under key. The acquirer
// deduplicates by key: every call with one key returns the first refund.
// It is sent once, as Authorize is, with the same errors; a
// *acquirer.RefundMismatchError when the HTTP status and the body disagree. The
// terms are the caller's to check (CheckRefundTerms).
func (c *Client) Refund(ctx context.Context, key string, req acquirer.RefundRequest) (acquirer.Refund, error) {
	return act(ctx, c, key, req, acquirer.EndpointRefund, acquirer.ReadRefund, "v1", "refunds")
}

// LookupRefund returns the refund made under key, or acquirer.ErrNotFound; a
// *acquirer.RefundMismatchError when the HTTP status and the body disagree. Any
// other failure proves nothing either way. The terms are the caller's to
// check (CheckRefundTerms).
func (c *Client) LookupRefund(ctx context.Context, key string) (acquirer.Refund, error) {
	return lookup(ctx, c, "refund lookup", acquirer.EndpointRefundLookup, acquirer.ReadRefund, "v1", "refunds", key)
}

// Capture captures part or all of an authorization made without its
// capture, under key; the answer as ReadCapture reads it. The terms are
// the caller's to check (acquirer.CheckCaptureTerms).
func (c *Client) Capture(ctx context.Context, key string, req acquirer.CaptureRequest) (acquirer.Capture, error) {
	return act(ctx, c, key, req, acquirer.EndpointCapture, acquirer.ReadCapture, "v1", "captures")
}

// LookupCapture returns the capture made under key, or
// acquirer.ErrNotFound, as LookupRefund does a refund.
func (c *Client) LookupCapture(ctx context.Context, key string) (acquirer.Capture, error) {
	return lookup(ctx, c, "capture lookup", acquirer.EndpointCaptureLookup, acquirer.ReadCapture, "v1", "captures", key)
}

// Void releases what remains of an authorization made without its
// capture, under key; the answer as ReadVoid reads it. The terms are the
// caller's to check (acquirer.CheckVoidTerms).
func (c *Client) Void(ctx context.Context, key string, req acquirer.VoidRequest) (acquirer.Void, error) {
	return act(ctx, c, key, req, acquirer.EndpointVoid, acquirer.ReadVoid, "v1", "voids")
}

// LookupVoid returns the void made under key, or acquirer.ErrNotFound.
func (c *Client) LookupVoid(ctx context.Context, key string) (acquirer.Void, error) {
	return lookup(ctx, c, "void lookup", acquirer.EndpointVoidLookup, acquirer.ReadVoid, "v1", "voids", key)
}

// Movement is what the acquirer did of kind (acquirer.Movement…) under
// key, read through that kind's lookup and stated as a report line would
// state it, without the authorization's key (an action's answer does not
// carry it): acquirer.ErrNotFound when it did nothing under key. The daily
// match asks it of a row its day's report did not pair.
func (c *Client) Movement(ctx context.Context, kind, key string) (acquirer.Movement, error) {
	switch kind {
	case acquirer.MovementAuthorization:
		return movement(ctx, key, c.Lookup, acquirer.Authorization.Movement)
	case acquirer.MovementRefund:
		return movement(ctx, key, c.LookupRefund, acquirer.Refund.Movement)
	case acquirer.MovementCapture:
		return movement(ctx, key, c.LookupCapture, acquirer.Capture.Movement)
	case acquirer.MovementVoid:
		return movement(ctx, key, c.LookupVoid, acquirer.Void.Movement)
	}
	return acquirer.Movement{}, fmt.Errorf("movement of kind %q: no such kind", kind)
}

// movement looks key up and states what it found as a report line.
func movement[T any](ctx context.Context, key string, lookup func(context.Context, string) (T, error), line func(T, string) acquirer.Movement) (acquirer.Movement, error) {
	found, err := lookup(ctx, key)
	if err != nil {
		return acquirer.Movement{}, err
	}
	return line(found, key), nil
}

// act posts an action's request under key to path and reads its answer
// with read, as Refund does.
func act[T any](ctx context.Context, c *Client, key string, req any, endpoint string, read func(string, int, []byte) (T, error), path ...string) (T, error) {
	status, body, err := c.post(ctx, key, req, path...)
	if err != nil {
		var zero T
		return zero, err
	}
	return read(endpoint, status, body)
}

// Report implements acquirer.Reporter over GET /v1/reports/{day}: one
// page of what the acquirer did on day (UTC), from cursor, checked as
// any answer is (acquirer.ReadReportPage). A 400 to a cursor is
// acquirer.ErrBadCursor (the day is this client's own, well formed).
func (c *Client) Report(ctx context.Context, day time.Time, cursor string) (acquirer.ReportPage, error) {
	day = acquirer.DayOf(day)
	u := c.base.JoinPath("v1", "reports", day.Format(time.DateOnly))
	if cursor != "" {
		u.RawQuery = url.Values{"cursor": {cursor}}.Encode()
	}
	status, body, err := c.do(ctx, true, func() (*http.Request, error) {
		return http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	})
	switch {
	case err != nil:
		return acquirer.ReportPage{}, fmt.Errorf("report %s: %w", day.Format(time.DateOnly), err)
	case status == http.StatusBadRequest && cursor != "":
		return acquirer.ReportPage{}, fmt.Errorf("report %s: %w", day.Format(time.DateOnly), acquirer.ErrBadCursor)
	case status != http.StatusOK:
		return acquirer.ReportPage{}, fmt.Errorf("report %s: HTTP %d", day.Format(time.DateOnly), status)
	}
	return acquirer.ReadReportPage(day, body)
}

package operator

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// SigningService is the service name a function URL's SigV4 signature is
// made for.
const SigningService = "lambda"

// Client calls the channel at URL, each request signed with SigV4 by the
// caller's own AWS credentials: IAM authenticates the caller, and the
// function records who it is.
type Client struct {
	// URL is the operator function's URL: the stack's OperatorUrl output in
	// AWS, what `make run` prints locally.
	URL string
	// Region is the function's region, which the signature names.
	Region string
	// Credentials are the operator's own (the operator role's session).
	Credentials aws.CredentialsProvider
	// HTTP sends the requests; nil: one with Timeout.
	HTTP *http.Client
	// Timeout bounds one call; it must outlast the function's own timeout,
	// which bounds the work (an accept's take-over, lookup and writes).
	Timeout time.Duration
	// Attempts is how many times a settlement is sent when no answer comes
	// back (1 when zero): the same request, the same decision id.
	Attempts int
	// Now is the signing clock (time.Now when nil).
	Now func() time.Time
}

// ErrForbidden: the channel refused the caller (403). In AWS, IAM refused
// it: only the operator's role may call the channel.
var ErrForbidden = errors.New("the operator's channel refused the caller: only the operator's role may call it")

// Do sends req and returns the channel's answer.
//
// A settlement (VoidConfirmed, Accept) whose call brings back no answer (a
// transport error, or Lambda's own 502, 503 or 504), or whose answer is
// that an earlier call of it is still carrying it out (OutcomeInProgress,
// after its RetryAfter), is sent again, up to Attempts in all, unchanged:
// the function reads back what an earlier call of the same decision did
// before it does anything, so a decision is never carried out twice.
// Looks, read-backs and reconciliations are sent once.
//
// Errors: the transport's (no answer), ErrForbidden, an answer of another
// status (400 comes with its decoded Answer), or an answer that does not
// decode.
func (c *Client) Do(ctx context.Context, req Request) (Answer, error) {
	body, err := req.Encode()
	if err != nil {
		return Answer{}, err
	}
	attempts := 1
	if req.Action == VoidConfirmed || req.Action == Accept {
		attempts = max(1, c.Attempts)
	}
	for attempt := 1; ; attempt++ {
		a, retry, err := c.send(ctx, body)
		wait := time.Duration(attempt) * time.Second
		if err == nil && a.Outcome == OutcomeInProgress {
			retry, wait = true, time.Duration(min(max(a.RetryAfter, 1), 60))*time.Second
		}
		if !retry || attempt >= attempts || ctx.Err() != nil {
			return a, err
		}
		time.Sleep(wait)
	}
}

// send makes one call; retry says whether no answer came back.
func (c *Client) send(ctx context.Context, body []byte) (Answer, bool, error) {
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: c.Timeout}
	}
	creds, err := c.Credentials.Retrieve(ctx)
	if err != nil {
		return Answer{}, false, fmt.Errorf("the operator's AWS credentials: %w", err)
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, c.URL, bytes.NewReader(body))
	if err != nil {
		return Answer{}, false, fmt.Errorf("operator channel %q: %w", c.URL, err)
	}
	r.Header.Set("Content-Type", "application/json")
	sum := sha256.Sum256(body)
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	if err := v4.NewSigner().SignHTTP(ctx, creds, r, hex.EncodeToString(sum[:]), SigningService, c.Region, now()); err != nil {
		return Answer{}, false, fmt.Errorf("sign the request: %w", err)
	}
	resp, err := hc.Do(r)
	if err != nil {
		return Answer{}, true, fmt.Errorf("operator channel: no answer: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return Answer{}, true, fmt.Errorf("operator channel: the answer did not arrive: %w", err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
		a, err := DecodeAnswer(b)
		if err != nil {
			return Answer{}, false, fmt.Errorf("operator channel: its answer: %w", err)
		}
		return a, false, nil
	case http.StatusBadRequest:
		a, err := DecodeAnswer(b)
		if err != nil {
			return Answer{}, false, fmt.Errorf("operator channel: 400, and its answer: %w", err)
		}
		return a, false, fmt.Errorf("operator channel: the request was refused: %s", a.Detail)
	case http.StatusForbidden:
		return Answer{}, false, ErrForbidden
	case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return Answer{}, true, fmt.Errorf("operator channel: %s: no answer from the function", resp.Status)
	}
	return Answer{}, false, fmt.Errorf("operator channel: %s", resp.Status)
}

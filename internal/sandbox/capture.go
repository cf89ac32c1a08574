package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"time"

	"github.com/idempotent-payments/idempay/internal/acquirer"
)

// The decline codes of a capture and of a void, beside the refunds'
// (DeclineExceedsAuthorization, DeclineNoSuchAuthorization,
// DeclineCurrency).
const (
	// DeclineNotCapturable: the authorization was captured when it was
	// made, or declined: it holds nothing to capture or release.
	DeclineNotCapturable = "authorization_not_capturable"
	// DeclineAuthorizationClosed: a void or a final capture has closed it.
	DeclineAuthorizationClosed = "authorization_closed"
	// DeclineAuthorizationExpired: its window has passed.
	DeclineAuthorizationExpired = acquirer.DeclineAuthorizationExpired
	// DeclineNothingToRelease: a void of an authorization wholly captured.
	DeclineNothingToRelease = "nothing_to_release"
)

// DefaultAuthorizationWindow is how long an authorization made without
// its capture stays capturable unless SetAuthorizationWindow says
// otherwise: 7 days, as Stripe's and Checkout.com's card authorizations.
const DefaultAuthorizationWindow = 7 * 24 * time.Hour

// How an authorization made without its capture was closed (held.closed).
const (
	closedByVoid    = "voided"
	closedByCapture = "captured"
)

// held is what the sandbox knows of an authorization made without its
// capture, by its id: what its captures took, and how it was closed.
type held struct {
	captured int64
	closed   string
}

// answered is an action as the sandbox made it under a key: its answer
// and the HTTP status it is answered with, every time the key comes back.
type answered[T any] struct {
	answer T
	status int
}

// answerOf is a's answer.
func answerOf[T any](a answered[T]) T { return a.answer }

// SetCaptureBound turns the sandbox's own bounds on captures and voids on
// or off: captures together never beyond the authorization, none after a
// void, a final capture or the window's end, and no void of what is
// wholly captured or closed. It is on in a new sandbox; off, only the
// service's bounds stand between a request and the money.
func (s *Server) SetCaptureBound(enforced bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.captureBound = enforced
}

// SetAuthorizationWindow sets how long new authorizations made without
// their capture stay capturable (DefaultAuthorizationWindow in a new
// sandbox).
func (s *Server) SetAuthorizationWindow(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.window = d
}

// Captured is what the succeeded captures of authorization id add up to.
func (s *Server) Captured(authorizationID string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held[authorizationID].captured
}

// Captures returns every capture in the order they were made.
func (s *Server) Captures() []acquirer.Capture {
	return inOrder(s, &s.captureOrder, s.captures, answerOf[acquirer.Capture])
}

// Voids returns every void in the order they were made.
func (s *Server) Voids() []acquirer.Void {
	return inOrder(s, &s.voidOrder, s.voids, answerOf[acquirer.Void])
}

// inOrder is what m holds under each of *keys, read by answer under s's
// lock (keys grows under it, so it is read there too).
func inOrder[R, T any](s *Server, keys *[]string, m map[string]R, answer func(R) T) []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]T, len(*keys))
	for i, k := range *keys {
		out[i] = answer(m[k])
	}
	return out
}

// capturable is why an authorization cannot take a capture or a void
// (a decline code), or "". The caller holds mu.
func (s *Server) capturable(id, currency string) (stored, string) {
	auth, ok := s.authorization(id)
	switch {
	case !ok:
		return auth, DeclineNoSuchAuthorization
	case auth.auth.Status != acquirer.StatusAuthorized:
		return auth, DeclineNotCapturable
	case auth.auth.Currency != currency:
		return auth, DeclineCurrency
	case !s.captureBound:
		return auth, ""
	case s.held[id].closed != "":
		return auth, DeclineAuthorizationClosed
	case !s.Now().Before(auth.auth.ExpiresAt):
		return auth, DeclineAuthorizationExpired
	}
	return auth, ""
}

// recordCapture returns the capture under key, making it if there is
// none: one capture per key, however many requests carry it.
func (s *Server) recordCapture(key string, req acquirer.CaptureRequest) answered[acquirer.Capture] {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rec, ok := s.captures[key]; ok {
		return rec
	}
	sum := sha256.Sum256([]byte("capture:" + key))
	c := acquirer.Capture{
		ID: "cp_" + hex.EncodeToString(sum[:12]), Status: acquirer.CaptureSucceeded, AuthorizationID: req.AuthorizationID,
		Amount: req.Amount, Currency: req.Currency, Final: req.Final, IdempotencyKey: key, CreatedAt: s.Now().UTC().Truncate(time.Millisecond),
	}
	auth, decline := s.capturable(req.AuthorizationID, req.Currency)
	h := s.held[req.AuthorizationID]
	if decline == "" && s.captureBound && h.captured+req.Amount > auth.auth.Amount {
		decline = DeclineExceedsAuthorization
	}
	status := http.StatusCreated
	if decline != "" {
		c.Status, c.DeclineCode, status = acquirer.CaptureDeclined, decline, http.StatusPaymentRequired
	} else {
		h.captured += c.Amount
		if c.Final {
			h.closed = closedByCapture
		}
		s.held[req.AuthorizationID] = h
	}
	rec := answered[acquirer.Capture]{answer: c, status: status}
	s.captures[key] = rec
	s.captureOrder = append(s.captureOrder, key)
	return rec
}

// recordVoid returns the void under key, making it if there is none. It
// releases what the authorization's captures left, whatever the request
// said remains.
func (s *Server) recordVoid(key string, req acquirer.VoidRequest) answered[acquirer.Void] {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rec, ok := s.voids[key]; ok {
		return rec
	}
	sum := sha256.Sum256([]byte("void:" + key))
	v := acquirer.Void{
		ID: "vd_" + hex.EncodeToString(sum[:12]), Status: acquirer.VoidSucceeded, AuthorizationID: req.AuthorizationID,
		Currency: req.Currency, IdempotencyKey: key, CreatedAt: s.Now().UTC().Truncate(time.Millisecond),
	}
	auth, decline := s.capturable(req.AuthorizationID, req.Currency)
	h := s.held[req.AuthorizationID]
	remains := max(auth.auth.Amount-h.captured, 0)
	if decline == "" && s.captureBound && remains == 0 {
		decline = DeclineNothingToRelease
	}
	status := http.StatusCreated
	if decline != "" {
		v.Status, v.DeclineCode, status = acquirer.VoidDeclined, decline, http.StatusPaymentRequired
	} else {
		v.Amount = remains
		h.closed = closedByVoid
		s.held[req.AuthorizationID] = h
	}
	rec := answered[acquirer.Void]{answer: v, status: status}
	s.voids[key] = rec
	s.voidOrder = append(s.voidOrder, key)
	return rec
}

// Capture is the sandbox's capture called in process, without HTTP or
// faults.
func (s *Server) Capture(_ context.Context, key string, req acquirer.CaptureRequest) (acquirer.Capture, error) {
	return s.recordCapture(key, req).answer, nil
}

// LookupCapture is GET /v1/captures/{key} in process.
func (s *Server) LookupCapture(_ context.Context, key string) (acquirer.Capture, error) {
	return lookupIn(s, s.captures, key, answerOf[acquirer.Capture])
}

// Void is the sandbox's void called in process, without HTTP or faults.
func (s *Server) Void(_ context.Context, key string, req acquirer.VoidRequest) (acquirer.Void, error) {
	return s.recordVoid(key, req).answer, nil
}

// LookupVoid is GET /v1/voids/{key} in process.
func (s *Server) LookupVoid(_ context.Context, key string) (acquirer.Void, error) {
	return lookupIn(s, s.voids, key, answerOf[acquirer.Void])
}

// captureRoutes serves the captures' and voids' routes on s's mux.
func (s *Server) captureRoutes() {
	s.mux.HandleFunc("POST /v1/captures", moving(s, nil, func(r acquirer.CaptureRequest) bool {
		return r.Amount > 0 && r.Currency != "" && r.AuthorizationID != ""
	}, func(key string, r acquirer.CaptureRequest) (int, any) {
		rec := s.recordCapture(key, r)
		return rec.status, rec.answer
	}))
	s.mux.HandleFunc("GET /v1/captures/{key}", lookingUp(s.LookupCapture))
	s.mux.HandleFunc("GET /v1/captures", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"captures": s.Captures()})
	})
	s.mux.HandleFunc("POST /v1/voids", moving(s, nil, func(r acquirer.VoidRequest) bool {
		return r.Amount >= 0 && r.Currency != "" && r.AuthorizationID != ""
	}, func(key string, r acquirer.VoidRequest) (int, any) {
		rec := s.recordVoid(key, r)
		return rec.status, rec.answer
	}))
	s.mux.HandleFunc("GET /v1/voids/{key}", lookingUp(s.LookupVoid))
	s.mux.HandleFunc("GET /v1/voids", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"voids": s.Voids()})
	})
	s.mux.HandleFunc("PUT /_sandbox/capture-bound", settingBound(s.SetCaptureBound))
	s.mux.HandleFunc("PUT /_sandbox/authorization-window", func(w http.ResponseWriter, r *http.Request) {
		var b struct {
			Seconds *int64 `json:"seconds"`
		}
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<10))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&b); err != nil || b.Seconds == nil || *b.Seconds <= 0 {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": `want {"seconds": N}, N > 0`})
			return
		}
		s.SetAuthorizationWindow(time.Duration(*b.Seconds) * time.Second)
		writeJSON(w, http.StatusOK, b)
	})
}

// Package sandbox is a stateful acquirer for local runs and tests: a real
// HTTP server that authorizes charges, deduplicates them by Idempotency-Key,
// answers lookups, and injects faults on demand.
//
// Every authorization it answers echoes the Idempotency-Key it was made
// under (idempotency_key), so the client's check of the echo is tested.
//
// Routes:
//
//	POST   /v1/authorizations        authorize (Idempotency-Key required)
//	GET    /v1/authorizations/{key}  the authorization made under key, or 404
//	GET    /v1/authorizations        every authorization, for tests to count
//	POST   /v1/refunds               refund an authorization (Idempotency-Key required)
//	GET    /v1/refunds/{key}         the refund made under key, or 404
//	GET    /v1/refunds               every refund, and how many the bound refused
//	PUT    /_sandbox/faults          set Faults (JSON), for authorizations and refunds alike
//	DELETE /_sandbox/faults          clear them
//	PUT    /_sandbox/refund-bound    {"enforced": false} turns the refund bound off
//	POST   /v1/captures              capture part of an authorization made with "capture": false (Idempotency-Key required)
//	GET    /v1/captures/{key}        the capture made under key, or 404
//	GET    /v1/captures              every capture
//	POST   /v1/voids                 release what remains of such an authorization (Idempotency-Key required)
//	GET    /v1/voids/{key}           the void made under key, or 404
//	GET    /v1/voids                 every void
//	GET    /v1/reports/{day}         what it did that UTC day (YYYY-MM-DD), a page at a time (?cursor=&limit=)
//	PUT    /_sandbox/capture-bound   {"enforced": false} turns the bounds on captures and voids off
//	PUT    /_sandbox/authorization-window  {"seconds": N} sets the window of new authorizations
//
// Payment methods: pm_card_declined is declined (card_declined),
// pm_card_insufficient_funds is declined (insufficient_funds),
// pm_card_processing_error is answered 500 without being processed,
// pm_card_captures_tenfold is captured for ten times the amount asked (an
// acquirer that charged terms nobody asked for: its answer is a mismatch,
// and the record is held for an operator); every other method is captured.
//
// Refunds (refund.go) are bounded per authorization, as a real acquirer's
// are: refunds that would together exceed the authorization are declined
// (exceeds_authorization) and counted (RefundsRefused), unless the bound is
// turned off (SetRefundBound) so that a test sees the service's own bound
// alone. The refunds of an authorization made with
// pm_card_refunds_tenfold are made for ten times the amount asked.
//
// An authorization asked with "capture": false is answered "authorized",
// with its expires_at (DefaultAuthorizationWindow after it was made, or
// SetAuthorizationWindow's). Captures and voids (capture.go) are bounded
// as a real acquirer's are: captures together within the authorization,
// none after a void, a final capture or the window's end; a void
// releases what the captures left. SetCaptureBound turns those bounds
// off, so that a test sees the service's own alone. Refunds of such an
// authorization are bounded by what its captures took.
package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idempotent-payments/idempay/internal/acquirer"
)

// Faults are injected into POST /v1/authorizations and POST /v1/refunds,
// decided per request by a seeded random source. Rates are probabilities
// in [0, 1], checked in the order hang, error, drop.
type Faults struct {
	// LatencyMS delays every authorization before it is processed.
	LatencyMS int `json:"latency_ms"`
	// HangRate: the request is processed only after HangMS (past the
	// client's timeout), then answered: an authorization that lands after
	// the client gave up, as a real acquirer's can.
	HangRate float64 `json:"hang_rate"`
	HangMS   int     `json:"hang_ms"`
	// ErrorRate: answer 500 without processing.
	ErrorRate float64 `json:"error_rate"`
	// DropRate: process the request, then close the connection unanswered.
	DropRate float64 `json:"drop_rate"`
	// ResponseDelayMS delays every answer after the request was processed:
	// the authorization exists while the client still waits.
	ResponseDelayMS int `json:"response_delay_ms"`
	// DeclineRefunds declines every new refund (insufficient_funds at the
	// acquirer), so a test sees a decline free its reservation.
	DeclineRefunds bool `json:"decline_refunds"`
	// Seed makes the fault sequence repeatable.
	Seed uint64 `json:"seed"`
}

// PaymentMethodTenfold is captured for ten times the amount asked.
const PaymentMethodTenfold = "pm_card_captures_tenfold"

// Server is the sandbox acquirer. Its zero value is not usable; call New.
type Server struct {
	received atomic.Int64
	injected [4]atomic.Int64        // by fault kind
	apiKey   atomic.Pointer[string] // the credential /v1 requires ("" none)
	mux      *http.ServeMux

	mu     sync.Mutex
	byKey  map[string]stored
	order  []string
	faults Faults
	rng    *rand.Rand
	// dropped holds when each key's answer was last dropped; resent counts
	// the requests that came back with that key within resendWindow, as a
	// client library's own resend does (a caller's retry takes far longer).
	dropped map[string]time.Time
	resent  atomic.Int64
	// refunds by key, in refundOrder; refunded sums the succeeded refunds
	// of each authorization id, which refundBound caps at its amount.
	refunds         map[string]answered[acquirer.Refund]
	refundOrder     []string
	refunded        map[string]int64
	refundBound     bool
	refundsReceived atomic.Int64
	refundsRefused  atomic.Int64
	// held is what captures and voids did to each authorization made
	// without its capture, by its id; captures and voids by key, in
	// their order; captureBound and window as SetCaptureBound and
	// SetAuthorizationWindow set them.
	held         map[string]held
	captures     map[string]answered[acquirer.Capture]
	captureOrder []string
	voids        map[string]answered[acquirer.Void]
	voidOrder    []string
	captureBound bool
	window       time.Duration
	// Now is the sandbox's clock: authorizations' created_at and the resend
	// window (time.Now; a test may set it before serving).
	Now func() time.Time
}

// resendWindow tells a transport's resend of a dropped request from a
// retry: the resend follows at once, a retry waits a lease or a backoff.
const resendWindow = 200 * time.Millisecond

// Resent counts the dropped requests that were sent again at once with the
// same key: drops the caller's code never saw as "outcome unknown".
func (s *Server) Resent() int { return int(s.resent.Load()) }

type stored struct {
	auth   acquirer.Authorization
	status int
	// method is the payment method the authorization was asked with.
	method string
}

// New returns an empty sandbox. apiKey, when set, must be presented as a
// bearer credential on /v1 routes.
func New(apiKey string) *Server {
	s := &Server{
		byKey: map[string]stored{}, dropped: map[string]time.Time{}, Now: time.Now, rng: rand.New(rand.NewPCG(0, 0)), mux: http.NewServeMux(),
		refunds: map[string]answered[acquirer.Refund]{}, refunded: map[string]int64{}, refundBound: true,
		held: map[string]held{}, captures: map[string]answered[acquirer.Capture]{}, voids: map[string]answered[acquirer.Void]{}, captureBound: true,
		window: DefaultAuthorizationWindow,
	}
	s.apiKey.Store(&apiKey)
	s.mux.HandleFunc("POST /v1/authorizations", s.authorize)
	s.mux.HandleFunc("GET /v1/authorizations/{key}", s.lookup)
	s.mux.HandleFunc("GET /v1/authorizations", s.list)
	s.mux.HandleFunc("GET /v1/reports/{day}", s.reportRoute)
	s.refundRoutes()
	s.captureRoutes()
	s.mux.HandleFunc("PUT /_sandbox/faults", s.setFaults)
	s.mux.HandleFunc("DELETE /_sandbox/faults", s.clearFaults)
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The contract: the credential is checked before anything is read or
	// processed, so a refused request (401) never authorizes.
	if key := *s.apiKey.Load(); key != "" && strings.HasPrefix(r.URL.Path, "/v1/") && r.Header.Get("Authorization") != "Bearer "+key {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "unauthorized"})
		return
	}
	s.mux.ServeHTTP(w, r)
}

// SetAPIKey rotates the credential /v1 requires: from now on only key is
// accepted.
func (s *Server) SetAPIKey(key string) { s.apiKey.Store(&key) }

// Authorizations returns every authorization in the order they were made.
func (s *Server) Authorizations() []acquirer.Authorization {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]acquirer.Authorization, len(s.order))
	for i, k := range s.order {
		out[i] = s.byKey[k].auth
	}
	return out
}

// ByKey returns every authorization by the Idempotency-Key it was made under.
func (s *Server) ByKey() map[string]acquirer.Authorization {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]acquirer.Authorization, len(s.byKey))
	for k, rec := range s.byKey {
		out[k] = rec.auth
	}
	return out
}

// Received counts authorization requests that arrived, processed or not.
func (s *Server) Received() int { return int(s.received.Load()) }

// Injected counts the faults injected so far: hangs, 500s, drops.
func (s *Server) Injected() (hangs, errors, drops int) {
	return int(s.injected[faultHang].Load()), int(s.injected[faultError].Load()), int(s.injected[faultDrop].Load())
}

// SetFaults replaces the fault configuration and reseeds the random source.
func (s *Server) SetFaults(f Faults) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = f
	s.rng = rand.New(rand.NewPCG(f.Seed, f.Seed^0x9e3779b97f4a7c15))
}

type fault int

const (
	faultNone fault = iota
	faultHang
	faultError
	faultDrop
)

func (s *Server) draw() (fault, Faults) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.faults
	switch x := s.rng.Float64(); {
	case x < f.HangRate:
		return faultHang, f
	case x < f.HangRate+f.ErrorRate:
		return faultError, f
	case x < f.HangRate+f.ErrorRate+f.DropRate:
		return faultDrop, f
	}
	return faultNone, f
}

func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	if key == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "Idempotency-Key required"})
		return
	}
	var req acquirer.Request
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&req); err != nil || req.Amount <= 0 || req.Currency == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid authorization request"})
		return
	}
	s.received.Add(1)
	s.noteResend(key)
	if req.PaymentMethod == "pm_card_processing_error" {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "processing error"})
		return
	}
	s.withFaults(w, key, func() (int, any) {
		rec := s.record(key, req)
		return rec.status, rec.auth
	})
}

// noteResend counts a request under key that follows a dropped answer
// within resendWindow (Resent).
func (s *Server) noteResend(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if at, ok := s.dropped[key]; ok && s.Now().Sub(at) < resendWindow {
		s.resent.Add(1)
	}
}

// withFaults answers a request that moves money, under key, as the faults
// drawn for it say: process makes (or finds) its answer, after the latency
// and any hang; an injected error answers 500 without processing; a drop
// processes, then closes the connection unanswered.
func (s *Server) withFaults(w http.ResponseWriter, key string, process func() (status int, answer any)) {
	kind, f := s.draw()
	s.injected[kind].Add(1)
	time.Sleep(time.Duration(f.LatencyMS) * time.Millisecond)
	switch kind {
	case faultHang:
		time.Sleep(time.Duration(f.HangMS) * time.Millisecond)
	case faultError:
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "injected fault"})
		return
	}
	status, answer := process()
	time.Sleep(time.Duration(f.ResponseDelayMS) * time.Millisecond)
	if kind == faultDrop {
		s.mu.Lock()
		s.dropped[key] = s.Now()
		s.mu.Unlock()
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
			return
		}
	}
	writeJSON(w, status, answer)
}

// record returns the authorization under key, making it if there is none:
// one authorization per key, however many requests carry it.
func (s *Server) record(key string, req acquirer.Request) stored {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rec, ok := s.byKey[key]; ok {
		return rec
	}
	sum := sha256.Sum256([]byte(key))
	auth := acquirer.Authorization{
		ID:             "auth_" + hex.EncodeToString(sum[:12]),
		Status:         acquirer.StatusCaptured,
		Amount:         req.Amount,
		Currency:       req.Currency,
		IdempotencyKey: key,
		CreatedAt:      s.Now().UTC().Truncate(time.Millisecond),
	}
	if req.Capture != nil && !*req.Capture {
		auth.Status, auth.ExpiresAt = acquirer.StatusAuthorized, auth.CreatedAt.Add(s.window)
	}
	status := http.StatusCreated
	switch req.PaymentMethod {
	case "pm_card_declined":
		auth.Status, auth.DeclineCode, auth.ExpiresAt, status = acquirer.StatusDeclined, "card_declined", time.Time{}, http.StatusPaymentRequired
	case "pm_card_insufficient_funds":
		auth.Status, auth.DeclineCode, auth.ExpiresAt, status = acquirer.StatusDeclined, "insufficient_funds", time.Time{}, http.StatusPaymentRequired
	case PaymentMethodTenfold:
		auth.Amount *= 10
	}
	rec := stored{auth: auth, status: status, method: req.PaymentMethod}
	s.byKey[key] = rec
	s.order = append(s.order, key)
	return rec
}

func (s *Server) lookup(w http.ResponseWriter, r *http.Request) {
	auth, err := s.Lookup(r.Context(), r.PathValue("key"))
	if err != nil {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "not found"})
		return
	}
	writeJSON(w, http.StatusOK, auth)
}

func (s *Server) list(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"authorizations": s.Authorizations()})
}

func (s *Server) setFaults(w http.ResponseWriter, r *http.Request) {
	var f Faults
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil || f.HangRate < 0 || f.ErrorRate < 0 || f.DropRate < 0 || f.HangRate+f.ErrorRate+f.DropRate > 1 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid faults"})
		return
	}
	s.SetFaults(f)
	writeJSON(w, http.StatusOK, f)
}

func (s *Server) clearFaults(w http.ResponseWriter, _ *http.Request) {
	s.SetFaults(Faults{})
	w.WriteHeader(http.StatusNoContent)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

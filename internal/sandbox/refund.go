package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/idempotent-payments/idempay/internal/acquirer"
)

// PaymentMethodRefundsTenfold is captured as asked, but each of its
// refunds is made for ten times the amount asked: an acquirer that
// refunded terms nobody asked for.
const PaymentMethodRefundsTenfold = "pm_card_refunds_tenfold"

// The decline codes of a refund.
const (
	DeclineExceedsAuthorization = "exceeds_authorization"
	DeclineNoSuchAuthorization  = "authorization_not_found"
	DeclineCurrency             = "currency_differs"
	DeclineRefundFunds          = "insufficient_funds"
)

// SetRefundBound turns the bound on refunds per authorization on or off.
// It is on in a new sandbox.
func (s *Server) SetRefundBound(enforced bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refundBound = enforced
}

// Refunds returns every refund in the order they were made.
func (s *Server) Refunds() []acquirer.Refund {
	return inOrder(s, &s.refundOrder, s.refunds, answerOf[acquirer.Refund])
}

// Refunded is what the succeeded refunds of authorization id add up to.
func (s *Server) Refunded(authorizationID string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refunded[authorizationID]
}

// RefundsReceived counts refund requests that arrived, processed or not.
func (s *Server) RefundsReceived() int { return int(s.refundsReceived.Load()) }

// RefundsRefused counts the refunds declined because they would have
// exceeded their authorization (DeclineExceedsAuthorization).
func (s *Server) RefundsRefused() int { return int(s.refundsRefused.Load()) }

// moving is the handler of a request that moves money other than an
// authorization: the Idempotency-Key required, the body decoded and
// checked by valid, counted in received (when not nil) as it arrives,
// then process under the faults (withFaults).
func moving[Req any](s *Server, received *atomic.Int64, valid func(Req) bool, process func(key string, req Req) (int, any)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Idempotency-Key")
		if key == "" {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "Idempotency-Key required"})
			return
		}
		var req Req
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&req); err != nil || !valid(req) {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid request"})
			return
		}
		if received != nil {
			received.Add(1)
		}
		s.noteResend(key)
		s.withFaults(w, key, func() (int, any) { return process(key, req) })
	}
}

// lookingUp is the handler of GET .../{key}: what lookup finds, or 404.
func lookingUp[T any](lookup func(context.Context, string) (T, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		answer, err := lookup(r.Context(), r.PathValue("key"))
		if err != nil {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": "not found"})
			return
		}
		writeJSON(w, http.StatusOK, answer)
	}
}

// settingBound is the handler of PUT /_sandbox/...-bound:
// {"enforced": true|false}.
func settingBound(set func(bool)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var b struct {
			Enforced *bool `json:"enforced"`
		}
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<10))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&b); err != nil || b.Enforced == nil {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": `want {"enforced": true|false}`})
			return
		}
		set(*b.Enforced)
		writeJSON(w, http.StatusOK, b)
	}
}

// refundRoutes serves the refunds' routes on s's mux.
func (s *Server) refundRoutes() {
	s.mux.HandleFunc("POST /v1/refunds", moving(s, &s.refundsReceived, func(r acquirer.RefundRequest) bool {
		return r.Amount > 0 && r.Currency != "" && r.AuthorizationID != ""
	}, func(key string, r acquirer.RefundRequest) (int, any) {
		rec := s.recordRefund(key, r)
		return rec.status, rec.answer
	}))
	s.mux.HandleFunc("GET /v1/refunds/{key}", lookingUp(s.LookupRefund))
	s.mux.HandleFunc("GET /v1/refunds", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"refunds": s.Refunds(), "refused": s.RefundsRefused()})
	})
	s.mux.HandleFunc("PUT /_sandbox/refund-bound", settingBound(s.SetRefundBound))
}

// recordRefund returns the refund under key, making it if there is none:
// one refund per key, however many requests carry it. A refund of an
// authorization the sandbox did not make, or declined, in another
// currency, or beyond what remains of what it captured while the bound is
// on, is declined.
func (s *Server) recordRefund(key string, req acquirer.RefundRequest) answered[acquirer.Refund] {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rec, ok := s.refunds[key]; ok {
		return rec
	}
	sum := sha256.Sum256([]byte("refund:" + key))
	ref := acquirer.Refund{
		ID: "rf_" + hex.EncodeToString(sum[:12]), Status: acquirer.RefundSucceeded, AuthorizationID: req.AuthorizationID,
		Amount: req.Amount, Currency: req.Currency, IdempotencyKey: key, CreatedAt: s.Now().UTC().Truncate(time.Millisecond),
	}
	auth, ok := s.authorization(req.AuthorizationID)
	switch {
	case s.faults.DeclineRefunds:
		ref.DeclineCode = DeclineRefundFunds
	case !ok || auth.auth.Status != acquirer.StatusCaptured && auth.auth.Status != acquirer.StatusAuthorized:
		ref.DeclineCode = DeclineNoSuchAuthorization
	case auth.auth.Currency != req.Currency:
		ref.DeclineCode = DeclineCurrency
	case s.refundBound && s.refunded[req.AuthorizationID]+req.Amount > s.refundable(auth):
		ref.DeclineCode = DeclineExceedsAuthorization
		s.refundsRefused.Add(1)
	}
	status := http.StatusCreated
	if ref.DeclineCode != "" {
		ref.Status, status = acquirer.RefundDeclined, http.StatusPaymentRequired
	} else {
		if auth.method == PaymentMethodRefundsTenfold {
			ref.Amount *= 10
		}
		s.refunded[req.AuthorizationID] += ref.Amount
	}
	rec := answered[acquirer.Refund]{answer: ref, status: status}
	s.refunds[key] = rec
	s.refundOrder = append(s.refundOrder, key)
	return rec
}

// refundable is what refunds of auth may return in all: its amount when it
// was captured as it was made, what its captures took otherwise. The
// caller holds mu.
func (s *Server) refundable(auth stored) int64 {
	if auth.auth.Status == acquirer.StatusAuthorized {
		return s.held[auth.auth.ID].captured
	}
	return auth.auth.Amount
}

// authorization is the authorization with that id. The caller holds mu.
func (s *Server) authorization(id string) (stored, bool) {
	for _, rec := range s.byKey {
		if rec.auth.ID == id {
			return rec, true
		}
	}
	return stored{}, false
}

// Refund is the sandbox's refund called in process, without HTTP or
// faults: with LookupRefund it makes *Server the refund service's acquirer
// for benchmarks.
func (s *Server) Refund(_ context.Context, key string, req acquirer.RefundRequest) (acquirer.Refund, error) {
	return s.recordRefund(key, req).answer, nil
}

// LookupRefund is GET /v1/refunds/{key} in process.
func (s *Server) LookupRefund(_ context.Context, key string) (acquirer.Refund, error) {
	return lookupIn(s, s.refunds, key, answerOf[acquirer.Refund])
}

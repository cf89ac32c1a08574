package sandbox

import (
	"context"
	"net/http"
	"net/http/httptest"

	"github.com/idempotent-payments/idempay/internal/acquirer"
)

// InProcess returns an HTTP client whose every request is served by s in
// this process, without a socket: for handler tests and benchmarks that
// want the real acquirer client and the real sandbox but not the network.
func InProcess(s *Server) *http.Client {
	return &http.Client{Transport: roundTripper{s}}
}

type roundTripper struct{ s *Server }

func (rt roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	rt.s.ServeHTTP(rec, req)
	return rec.Result(), nil
}

// Authorize is the sandbox's authorization called in process, without HTTP
// or faults: with Lookup it makes *Server a charge.Acquirer for benchmarks.
func (s *Server) Authorize(_ context.Context, key string, req acquirer.Request) (acquirer.Authorization, error) {
	return s.record(key, req).auth, nil
}

// Lookup is GET /v1/authorizations/{key} in process.
func (s *Server) Lookup(_ context.Context, key string) (acquirer.Authorization, error) {
	return lookupIn(s, s.byKey, key, func(r stored) acquirer.Authorization { return r.auth })
}

// lookupIn is what m, one of s's maps, holds under key, read by answer
// under s's lock: acquirer.ErrNotFound for nothing.
func lookupIn[R, T any](s *Server, m map[string]R, key string, answer func(R) T) (T, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rec, ok := m[key]
	if !ok {
		var zero T
		return zero, acquirer.ErrNotFound
	}
	return answer(rec), nil
}

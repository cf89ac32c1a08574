package sandbox

import (
	"net/http"
	"net/http/httptest"
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

// Package conflictproxy answers a share of DynamoDB writes as a strongly
// consistent global table answers a write that races another region's, for
// local runs and tests of the multi-region mode, or as a failing table
// does (Failing). It imports only the
// standard library, so any test helper can.
package conflictproxy

import (
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
)

// conflictable are the writes a Proxy may refuse, by their
// DynamoDB operation.
var conflictable = map[string]bool{"PutItem": true, "UpdateItem": true, "DeleteItem": true}

// Proxy stands in front of DynamoDB and answers the writes its
// refuse chooses (PutItem, UpdateItem or DeleteItem, by operation name)
// with a ReplicatedWriteConflictException, without passing them on: what a
// strongly consistent global table answers a write that races another
// region's, which DynamoDB Local never does. Everything else passes
// through. Point a function at URL with AWS_ENDPOINT_URL_DYNAMODB.
type Proxy struct {
	URL      string
	refused  atomic.Int64
	listener net.Listener
	server   *http.Server
}

// New serves a proxy to target (an http URL) until Close.
func New(target string, refuse func(op string) bool) (*Proxy, error) {
	return serve(target, refuse, func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"__type":"com.amazonaws.dynamodb.v20120810#ReplicatedWriteConflictException",` +
			`"message":"Replicated write conflict: another region is writing the item"}`))
	})
}

// Failing is a Proxy whose refused writes are answered as a table that
// fails answers them: 500 InternalServerError, which the SDK retries and
// then reports, with nothing written.
func Failing(target string, fail func(op string) bool) (*Proxy, error) {
	return serve(target, fail, func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(`{"__type":"com.amazon.coral.availability#InternalServerError","message":"Internal server error"}`))
	})
}

// serve serves a proxy to target that answers the writes refuse chooses
// with answer.
func serve(target string, refuse func(op string) bool, answer func(http.ResponseWriter)) (*Proxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{URL: "http://" + l.Addr().String(), listener: l}
	pass := httputil.NewSingleHostReverseProxy(u)
	pass.ErrorLog = log.New(io.Discard, "", 0) // a killed function's cancelled call is not news
	p.server = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, op, _ := strings.Cut(r.Header.Get("X-Amz-Target"), ".") // "DynamoDB_20120810.PutItem"
		if conflictable[op] && refuse(op) {
			p.refused.Add(1)
			answer(w)
			return
		}
		pass.ServeHTTP(w, r)
	})}
	go func() { _ = p.server.Serve(l) }()
	return p, nil
}

// Refused is how many writes the proxy has refused.
func (p *Proxy) Refused() int { return int(p.refused.Load()) }

// Close stops the proxy.
func (p *Proxy) Close() error { return p.server.Close() }

// Share refuses about share of the writes, drawn from seed: a
// Proxy's refuse, safe for concurrent use.
func Share(share float64, seed uint64) func(op string) bool {
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(seed, seed+1))
	return func(string) bool {
		mu.Lock()
		defer mu.Unlock()
		return rng.Float64() < share
	}
}

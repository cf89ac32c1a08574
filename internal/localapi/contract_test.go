package localapi_test

import (
	"net/http"
	"testing"
)

func TestFirstChargeThenReplay(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	first := charge(t, s, "acct_a", "order-123-attempt", visa)
	if first.status != http.StatusCreated {
		t.Fatalf("first: %d %s", first.status, first.body)
	}
	again := charge(t, s, "acct_a", "order-123-attempt", visa)
	if again.status != http.StatusCreated || string(again.body) != string(first.body) || again.header.Get("Idempotent-Replay") != "true" {
		t.Fatalf("replay: %d %s %v", again.status, again.body, again.header)
	}
}

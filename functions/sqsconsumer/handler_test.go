package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/httpapi"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/idem/idemtest"
	"github.com/idempotent-payments/idempay/internal/sandbox"
)

// deadLetters records what was dead-lettered; the SQS path proper is tested
// against the emulator in internal/localapi.
type deadLetters struct {
	mu    sync.Mutex
	codes []string
}

func (d *deadLetters) Send(_ context.Context, _ string, attrs map[string]string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.codes = append(d.codes, attrs["reject_code"])
	return nil
}

type noDelay struct{}

func (noDelay) Delay(context.Context, string, time.Duration) error { return nil }

func TestHandleSQSEvent(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("testdata/batch.json")
	if err != nil {
		t.Fatal(err)
	}
	var ev events.SQSEvent
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	sb := sandbox.New("")
	guard := idem.NewGuard(idemtest.NewMemoryStore(), idem.Config{})
	dl := &deadLetters{}
	h := &Handler{Service: charge.NewService(guard, sb, httpapi.Answer, charge.Config{}), Commands: noDelay{}, DeadLetters: dl,
		Concurrency: 2, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	resp, err := h.Handle(context.Background(), ev)
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("resp %+v, %v; want every message settled", resp, err)
	}
	if len(sb.Authorizations()) != 1 {
		t.Fatalf("%d authorizations", len(sb.Authorizations()))
	}
	if len(dl.codes) != 2 {
		t.Fatalf("dead letters %v; want the keyless command and the malformed one", dl.codes)
	}
	// Redelivery of the same batch: a replay, nothing new.
	if resp, _ := h.Handle(context.Background(), ev); len(resp.BatchItemFailures) != 0 || len(sb.Authorizations()) != 1 {
		t.Fatalf("redelivery: %+v, %d authorizations", resp, len(sb.Authorizations()))
	}
}

// TestEveryOutcomeHasAVerdict: the table knows every outcome of the door
// (Get's Found and NotFound are not the door's).
func TestEveryOutcomeHasAVerdict(t *testing.T) {
	t.Parallel()
	for o := charge.Outcome(1); o.String() != "unknown"; o++ {
		if _, ok := verdicts[o]; !ok && o != charge.Found && o != charge.NotFound {
			t.Errorf("no verdict for %s", o)
		}
	}
}

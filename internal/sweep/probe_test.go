package sweep_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/dynamo/dynamotest"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/sweep"
)

// TestProbeAnswers: on every store, the probe of a table that answers is
// nil, records in flight or not, and it changes nothing: the records are
// swept as before.
func TestProbeAnswers(t *testing.T) {
	eachStore(t, func(t *testing.T, f *fixture) {
		s := f.sweeper(sweep.Config{})
		if err := s.Probe(context.Background()); err != nil {
			t.Fatalf("probe of an empty table: %v", err)
		}
		f.claim(t, "probe", 3)
		f.clock.Advance(time.Minute)
		if err := s.Probe(context.Background()); err != nil {
			t.Fatalf("probe with records in flight: %v", err)
		}
		if r, err := s.Run(context.Background()); err != nil || r.Flagged != 3 {
			t.Fatalf("sweep after the probes: %+v, %v", r, err)
		}
		if n := len(f.drain(t)); n != 3 {
			t.Fatalf("%d commands, want 3", n)
		}
	})
}

// unreadable is a store whose reads fail, as a table that does not answer.
type unreadable struct{ idem.Store }

func (unreadable) Get(context.Context, string, time.Time) (*idem.Record, error) {
	return nil, errors.New("connection refused")
}

// slowRead is a store whose reads last until their context ends.
type slowRead struct{ idem.Store }

func (slowRead) Get(ctx context.Context, _ string, _ time.Time) (*idem.Record, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestProbeFails: a read that fails (DynamoDB's answer for a table that
// is not there, a store that errs), or that does not answer within
// ProbeTimeout, is the probe's error; the probe never waits longer.
func TestProbeFails(t *testing.T) {
	t.Parallel()
	missing := dynamo.Open(dynamotest.Client(t), "no-such-table").Store()
	if err := sweep.New(missing, nil, sweep.Config{}).Probe(context.Background()); err == nil || !strings.Contains(err.Error(), "ResourceNotFound") {
		t.Fatalf("probe of a missing table: %v", err)
	}
	if err := sweep.New(unreadable{}, nil, sweep.Config{}).Probe(context.Background()); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("probe of an unreadable table: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := sweep.New(slowRead{}, nil, sweep.Config{}).Probe(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("probe of a table that does not answer: %v", err)
	}
}

package systemtest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/idempotent-payments/idempay/internal/event"
)

// BenchmarkOutcomeEventLatency: the time from a charge's ledger write (the
// event's created_at, the row's time) to its event's receipt on the HTTP
// subscriber's outcome queue, over the local stack: DynamoDB Local's
// stream, read as the event source mapping does, the publisher under the
// RIE, fauxqs's topic and queue, the subscriber long-polling. Charges are
// sent one after another, so the figure is the path's, not a queue's; it
// reports p50 and p99 in ms, and the publisher bootstraps' CPU per event
// (cpuOf, after a first charge started a runtime).
func BenchmarkOutcomeEventLatency(b *testing.B) {
	s, token, run := benchStack(b, "events")
	url := s.OutcomeQueues[event.ProducerHTTP]
	prefix := fmt.Sprintf("event-latency-%s-%d-", run, b.N)
	var (
		mu        sync.Mutex
		latencies []time.Duration
		pending   = map[string]bool{}
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { // the subscriber
		defer close(done)
		for ctx.Err() == nil {
			out, err := s.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
			if err != nil {
				continue
			}
			at := time.Now()
			for _, m := range out.Messages {
				var e event.Event
				if json.Unmarshal([]byte(aws.ToString(m.Body)), &e) == nil {
					mu.Lock()
					if pending[e.IdempotencyKey] {
						delete(pending, e.IdempotencyKey)
						latencies = append(latencies, at.Sub(e.CreatedAt))
					}
					mu.Unlock()
				}
				_, _ = s.SQS.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle})
			}
		}
	}()
	charges := func(keys ...string) {
		for _, key := range keys {
			mu.Lock()
			pending[key] = true
			mu.Unlock()
			if err := benchCharge(s, token, key, 201); err != nil {
				b.Fatal(err)
			}
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			mu.Lock()
			left := len(pending)
			mu.Unlock()
			if left == 0 {
				return
			}
			if time.Now().After(deadline) {
				b.Fatalf("%d of %d events not received within 30 s", left, len(keys))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	charges(prefix + "warm") // the publisher's runtime started
	mu.Lock()
	latencies = nil
	mu.Unlock()
	_, publishers := s.Publisher.Processes()
	cpuBefore := cpuOf(b, publishers...)
	keys := make([]string, b.N)
	for i := range keys {
		keys[i] = fmt.Sprint(prefix, i)
	}
	b.ResetTimer()
	charges(keys...)
	b.StopTimer()
	_, after := s.Publisher.Processes() // a runtime started during the run counts whole
	publisherCPU := cpuOf(b, after...) - cpuBefore
	cancel()
	<-done
	slices.Sort(latencies)
	pct := func(p float64) float64 {
		return float64(latencies[min(len(latencies)-1, int(p*float64(len(latencies))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(publisherCPU.Microseconds())/1000/float64(b.N), "publisher_cpu_ms/event")
	saveLatencies(b, latencies)
}

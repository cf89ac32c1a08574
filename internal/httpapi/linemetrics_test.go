package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/obs"
	"github.com/idempotent-payments/idempay/internal/refund"
)

// valueOn is what m counts on line, as its metric filter does: nothing
// when a member of Where differs or Positive is not above zero.
func valueOn(m obs.LineMetric, line map[string]any) (float64, bool) {
	for k, v := range m.Where {
		if line[k] != v {
			return 0, false
		}
	}
	if n, ok := line[m.Positive].(float64); m.Positive != "" && (!ok || n <= 0) {
		return 0, false
	}
	if m.Value == "" {
		return 1, true
	}
	n, ok := line[m.Value].(float64)
	return n, ok
}

// TestLineMetricsReadTheRequestLine: the metrics made from request lines
// are those the charge function's EMF line carried: on a first
// execution, Requests by its outcome, the latency and the acquirer's; on
// a charge left pending after two failed calls, AcquirerErrors 2; on a
// refund held on the acquirer's answer, Refunds and RefundMismatches. The filters read the
// members the line writes, under the names it writes them.
func TestLineMetricsReadTheRequestLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		tr    trail
		a     reply
		wants map[string]float64
	}{
		{"a first execution", trail{operation: charge.Operation, record: "r1", attempt: 1, acquirerLatency: 1900 * time.Microsecond},
			reply{idem.Response{StatusCode: 201}, false, obs.OutcomeExecuted, trail{}},
			map[string]float64{obs.MetricRequests: 1, obs.MetricLatencyMs: 14.2, obs.MetricAcquirerLatencyMs: 1.9}},
		{"a charge pending after two failed calls", trail{operation: charge.Operation, record: "r2", attempt: 2, acquirerLatency: 3 * time.Millisecond, acquirerErrors: 2},
			reply{idem.Response{StatusCode: 202}, false, obs.OutcomePending, trail{}},
			map[string]float64{obs.MetricRequests: 1, obs.MetricLatencyMs: 14.2, obs.MetricAcquirerLatencyMs: 3, obs.MetricAcquirerErrors: 2}},
		{"a refund held on the acquirer's answer", trail{operation: refund.Operation, record: "r3"},
			reply{idem.Response{StatusCode: 502}, false, obs.OutcomeAcquirerMismatch, trail{}},
			map[string]float64{obs.MetricRequests: 1, obs.MetricLatencyMs: 14.2, obs.MetricRefunds: 1, obs.MetricRefundMismatches: 1}},
		{"a request refused at the door", trail{}, reply{idem.Response{StatusCode: 400}, false, obs.OutcomeRequestInvalid, trail{}},
			map[string]float64{obs.MetricRequests: 1, obs.MetricLatencyMs: 14.2}},
	} {
		var buf bytes.Buffer
		obs.NewLogger(&buf, "INFO").LogAttrs(context.Background(), slog.LevelInfo, obs.MessageRequest, requestLine(tc.tr, tc.a, 14200*time.Microsecond)...)
		var line map[string]any
		if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		got := map[string]float64{}
		for _, m := range obs.LineMetrics() {
			if v, ok := valueOn(m, line); ok {
				got[m.Name] = v
				if m.Outcome != "" && line[m.Outcome] != string(tc.a.outcome) {
					t.Errorf("%s: %s's Outcome dimension reads %v", tc.name, m.Name, line[obs.KeyOutcome])
				}
			}
		}
		if !maps.Equal(got, tc.wants) {
			t.Errorf("%s: the line %s makes %v, want %v", tc.name, buf.String(), got, tc.wants)
		}
	}
}

// TestRequestLineCountsWhatFailed: the line names the acquirer calls
// that failed, nothing sent and outcome unknown, by obs's keys, and
// leaves out a count that is zero (the chaos run reads them so).
func TestRequestLineCountsWhatFailed(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	tr := trail{operation: charge.Operation, record: "r1", acquirerErrors: 1, acquirerNotSent: 1}
	obs.NewLogger(&buf, "INFO").LogAttrs(context.Background(), slog.LevelInfo, obs.MessageRequest,
		requestLine(tr, reply{idem.Response{StatusCode: 202}, false, obs.OutcomePending, trail{}}, time.Millisecond)...)
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatal(err)
	}
	if _, unknown := line[obs.KeyAcquirerUnknown]; line[obs.KeyAcquirerNotSent] != 1.0 || unknown {
		t.Errorf("the line %s: want %s 1 and no %s", buf.String(), obs.KeyAcquirerNotSent, obs.KeyAcquirerUnknown)
	}
}

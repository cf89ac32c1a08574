package obs

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"
)

// validateEMF checks a line against the rules of the CloudWatch Embedded
// Metric Format specification: the _aws member with an integer Timestamp and
// CloudWatchMetrics directives; each directive a Namespace of 1–1024
// characters, Dimensions as arrays of at most 30 member names whose root
// members are strings, and at most 100 Metrics whose Name is a root member
// holding a number (or up to 100 numbers) and whose Unit, if any, is one of
// CloudWatch's units.
func validateEMF(line []byte) error {
	var doc map[string]any
	if err := json.Unmarshal(line, &doc); err != nil {
		return fmt.Errorf("not JSON: %v", err)
	}
	aws, ok := doc["_aws"].(map[string]any)
	if !ok {
		return fmt.Errorf("no _aws object")
	}
	ts, ok := aws["Timestamp"].(float64)
	if !ok || ts != float64(int64(ts)) || ts <= 0 {
		return fmt.Errorf("Timestamp %v is not epoch milliseconds", aws["Timestamp"])
	}
	dirs, ok := aws["CloudWatchMetrics"].([]any)
	if !ok || len(dirs) == 0 {
		return fmt.Errorf("no CloudWatchMetrics directives")
	}
	units := map[string]bool{"Seconds": true, "Microseconds": true, "Milliseconds": true, "Bytes": true, "Kilobytes": true, "Megabytes": true,
		"Gigabytes": true, "Terabytes": true, "Bits": true, "Percent": true, "Count": true, "Bytes/Second": true, "Count/Second": true, "None": true}
	for _, d := range dirs {
		d := d.(map[string]any)
		ns, _ := d["Namespace"].(string)
		if len(ns) < 1 || len(ns) > 1024 {
			return fmt.Errorf("Namespace %q", ns)
		}
		for _, set := range d["Dimensions"].([]any) {
			set := set.([]any)
			if len(set) > 30 {
				return fmt.Errorf("dimension set of %d", len(set))
			}
			for _, name := range set {
				if _, ok := doc[name.(string)].(string); !ok {
					return fmt.Errorf("dimension %v has no string root member", name)
				}
			}
		}
		ms := d["Metrics"].([]any)
		if len(ms) == 0 || len(ms) > 100 {
			return fmt.Errorf("%d metrics", len(ms))
		}
		for _, m := range ms {
			m := m.(map[string]any)
			name, _ := m["Name"].(string)
			if _, ok := doc[name].(float64); !ok {
				return fmt.Errorf("metric %q has no numeric root member", name)
			}
			if u, ok := m["Unit"].(string); ok && !units[u] {
				return fmt.Errorf("metric %q: unit %q", name, u)
			}
		}
	}
	return nil
}

func TestMetricsAreValidEMF(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	m := NewMetrics(&buf, "charge", "dev")
	m.now = func() time.Time { return time.UnixMilli(1796105509000) }
	m.Record("executed", map[string]float64{"AcquirerLatencyMs": 12.5, "AcquirerErrors": 0})
	m.Record("replayed", nil)
	m.Record("swept", map[string]float64{"OldestStaleSeconds": 90})
	m.Record("executed", map[string]float64{"LatencyMs": math.NaN(), "AcquirerErrors": math.Inf(1)})
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines", len(lines))
	}
	for _, l := range lines {
		if err := validateEMF([]byte(l)); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
	}
	if !strings.Contains(lines[0], `"Outcome":"executed"`) || !strings.Contains(lines[0], `"Unit":"Milliseconds"`) {
		t.Fatalf("line %s", lines[0])
	}
	if !strings.Contains(lines[2], `{"Name":"OldestStaleSeconds","Unit":"Seconds"}`) {
		t.Fatalf("OldestStaleSeconds is not in seconds: %s", lines[2])
	}
	if strings.Contains(lines[3], "LatencyMs") || strings.Contains(lines[3], "AcquirerErrors") || !strings.Contains(lines[3], `"Requests":1`) {
		t.Fatalf("values that are no finite number: %s", lines[3])
	}
	// A name that JSON must escape is escaped, and the line stays valid.
	var odd bytes.Buffer
	o := NewMetrics(&odd, "charge", "dev \"β\"\n")
	o.Record("executed", map[string]float64{"LatencyMs": 1e22, "AcquirerErrors": -0.5})
	var doc map[string]any
	if err := validateEMF(odd.Bytes()); err != nil || json.Unmarshal(odd.Bytes(), &doc) != nil ||
		doc[DimensionEnvironment] != "dev \"β\"\n" || doc["LatencyMs"] != 1e22 || doc["AcquirerErrors"] != -0.5 {
		t.Fatalf("%s: %v", odd.String(), err)
	}
	// The validator is not a rubber stamp.
	for _, bad := range []string{`{"a":1}`, `{"_aws":{"Timestamp":1.5,"CloudWatchMetrics":[]}}`,
		`{"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"n","Dimensions":[["F"]],"Metrics":[{"Name":"X"}]}]},"F":"f"}`} {
		if validateEMF([]byte(bad)) == nil {
			t.Fatalf("validator accepted %s", bad)
		}
	}
}

// TestValuesCountNoRequest: a line of values alone (the sweeper's table
// probe) is valid EMF on the function and environment dimensions, and
// adds nothing to Requests or any Outcome, which the alarms count; no
// values write no line.
func TestValuesCountNoRequest(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	m := NewMetrics(&buf, FunctionSweeper, "prod")
	m.now = func() time.Time { return time.UnixMilli(1796105509000) }
	m.Values(nil)
	m.Values(map[string]float64{"X": math.NaN()}) // no value left: no line
	m.Values(map[string]float64{MetricTableProbe: 0})
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("%d lines: %q", len(lines), lines)
	}
	if err := validateEMF([]byte(lines[0])); err != nil {
		t.Fatalf("%s: %v", lines[0], err)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &doc); err != nil {
		t.Fatal(err)
	}
	dirs := doc["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)
	if doc[MetricTableProbe] != 0.0 || doc[DimensionFunction] != FunctionSweeper || doc[DimensionEnvironment] != "prod" ||
		doc[MetricRequests] != nil || doc[DimensionOutcome] != nil || len(dirs) != 1 ||
		asJSON(t, dirs[0]) != `{"Dimensions":[["Function","Environment"]],"Metrics":[{"Name":"TableProbe","Unit":"Count"}],"Namespace":"idempay"}` {
		t.Fatalf("line %s", lines[0])
	}
}

func asJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestLoggerUsesLambdaJSONFormat(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	NewLogger(&buf, "info").Info("charge", "outcome", "executed")
	NewLogger(&buf, "warn").Info("dropped")
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("%s: %v", buf.String(), err)
	}
	if line["message"] != "charge" || line["level"] != "INFO" || line["timestamp"] == nil || line["outcome"] != "executed" {
		t.Fatalf("line %v", line)
	}
}

func TestWithAttrs(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log := NewLogger(&buf, "INFO")
	ctx := WithAttrs(context.Background(), slog.String("requestId", "r-1"))
	ctx = WithAttrs(ctx, slog.String("record", "old"))
	ctx = WithAttrs(ctx, slog.String("record", "3f9c51a0b2d4e871"))
	log.With("function", "charge").WarnContext(ctx, "acquirer outcome unknown", "attempt", 1)
	log.InfoContext(context.Background(), "plain")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := `{"level":"WARN","message":"acquirer outcome unknown","function":"charge","attempt":1,"requestId":"r-1","record":"3f9c51a0b2d4e871"}`
	var got map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &got); err != nil {
		t.Fatal(err)
	}
	delete(got, "timestamp")
	if b, _ := json.Marshal(got); len(lines) != 2 || !jsonEqual(t, string(b), want) || strings.Count(lines[0], `"record"`) != 1 || strings.Contains(lines[1], "requestId") {
		t.Fatalf("lines %q", lines)
	}
}

func jsonEqual(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	return fmt.Sprint(x) == fmt.Sprint(y)
}

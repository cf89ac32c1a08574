// Package obs is what the functions tell operators: one JSON log line per
// request or message in Lambda's JSON log format, and CloudWatch Embedded
// Metric Format (EMF) lines whose dimensions stay low-cardinality (function,
// environment, outcome — never an account or a key).
package obs

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"
)

// NewLogger writes JSON lines as Lambda's JSON log format names them
// (timestamp, level, message). level is AWS_LAMBDA_LOG_LEVEL or LOG_LEVEL:
// DEBUG, INFO (default), WARN or ERROR.
func NewLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.ToUpper(level))); err != nil {
		l = slog.LevelInfo
	}
	return slog.New(contextHandler{slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l, ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) > 0 {
			return a
		}
		switch a.Key {
		case slog.TimeKey:
			a.Key = "timestamp"
			a.Value = slog.StringValue(a.Value.Time().UTC().Format(time.RFC3339Nano))
		case slog.MessageKey:
			a.Key = "message"
		}
		return a
	}})})
}

// WithAttrs returns a context whose log lines carry attrs: every line a
// NewLogger logger writes with it (the …Context methods), however deep in
// the code, names the request, message or record it belongs to. A key given
// again replaces the earlier value.
func WithAttrs(ctx context.Context, attrs ...slog.Attr) context.Context {
	old, _ := ctx.Value(attrsKey{}).([]slog.Attr)
	merged := make([]slog.Attr, 0, len(old)+len(attrs))
	for _, a := range old {
		if !slices.ContainsFunc(attrs, func(b slog.Attr) bool { return b.Key == a.Key }) {
			merged = append(merged, a)
		}
	}
	return context.WithValue(ctx, attrsKey{}, append(merged, attrs...))
}

type attrsKey struct{}

// contextHandler adds the context's attributes (WithAttrs) to each record.
type contextHandler struct{ slog.Handler }

func (h contextHandler) Handle(ctx context.Context, r slog.Record) error {
	if attrs, ok := ctx.Value(attrsKey{}).([]slog.Attr); ok {
		r.AddAttrs(attrs...)
	}
	return h.Handler.Handle(ctx, r)
}

func (h contextHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return contextHandler{h.Handler.WithAttrs(attrs)}
}

func (h contextHandler) WithGroup(name string) slog.Handler {
	return contextHandler{h.Handler.WithGroup(name)}
}

// Namespace of every metric.
const Namespace = "idempay"

// Metrics writes EMF lines for one function in one environment. Safe for
// concurrent use; each Record call is one line.
type Metrics struct {
	mu          sync.Mutex
	w           io.Writer
	line        bytes.Buffer      // the line being written, under mu
	enc         *jsontext.Encoder // writes into line, under mu
	function    string
	environment string
	now         func() time.Time
}

// NewMetrics returns a writer of EMF lines to w (the function's stdout,
// which Lambda ships to CloudWatch Logs, where EMF lines become metrics).
func NewMetrics(w io.Writer, function, environment string) *Metrics {
	m := &Metrics{w: w, function: function, environment: environment, now: time.Now}
	m.enc = jsontext.NewEncoder(&m.line)
	return m
}

// Record writes one EMF line: a count of 1 for outcome (the Outcome
// dimension), and the named values (milliseconds when the name
// ends in Ms, seconds when it ends in Seconds, counts otherwise) on the
// function and environment dimensions.
func (m *Metrics) Record(outcome Outcome, values map[string]float64) {
	m.write(&outcome, values)
}

// Values writes one EMF line of the named values alone, on the function
// and environment dimensions, with units as Record gives them: a
// measurement that is no request's outcome (the sweeper's table probe),
// so it adds nothing to the Requests counts the alarms read. Nothing is
// written for no values. Like every metric here they are standard
// resolution (no StorageResolution), which Route 53 requires of an alarm
// it reads.
func (m *Metrics) Values(values map[string]float64) {
	if len(values) > 0 {
		m.write(nil, values)
	}
}

// write writes one EMF line: Requests by outcome when outcome is not nil,
// and values on the function and environment dimensions. The line is
// written token by token (jsontext), values by name: a map and
// encoding/json's reflection cost a request three times as much CPU.
// A value that is not a finite number is left out (CloudWatch takes no
// other), and the rest of the line is written.
func (m *Metrics) write(outcome *Outcome, values map[string]float64) {
	names := slices.DeleteFunc(slices.Sorted(maps.Keys(values)), func(n string) bool {
		return math.IsNaN(values[n]) || math.IsInf(values[n], 0)
	})
	m.mu.Lock()
	defer m.mu.Unlock()
	m.line.Reset()
	m.enc.Reset(&m.line)
	var err error
	put := func(tokens ...jsontext.Token) {
		for _, t := range tokens {
			if err == nil {
				err = m.enc.WriteToken(t)
			}
		}
	}
	name := func(s string) jsontext.Token { return jsontext.String(s) }
	metric := func(n, unit string) {
		put(jsontext.BeginObject, name("Name"), name(n), name("Unit"), name(unit), jsontext.EndObject)
	}
	put(jsontext.BeginObject, name("_aws"), jsontext.BeginObject,
		name("Timestamp"), jsontext.Int(m.now().UnixMilli()), name("CloudWatchMetrics"), jsontext.BeginArray)
	if outcome != nil {
		put(jsontext.BeginObject, name("Namespace"), name(Namespace),
			name("Dimensions"), jsontext.BeginArray, jsontext.BeginArray, name(DimensionFunction), name(DimensionEnvironment), name(DimensionOutcome), jsontext.EndArray, jsontext.EndArray,
			name("Metrics"), jsontext.BeginArray)
		metric(MetricRequests, "Count")
		put(jsontext.EndArray, jsontext.EndObject)
	}
	if len(names) > 0 {
		put(jsontext.BeginObject, name("Namespace"), name(Namespace),
			name("Dimensions"), jsontext.BeginArray, jsontext.BeginArray, name(DimensionFunction), name(DimensionEnvironment), jsontext.EndArray, jsontext.EndArray,
			name("Metrics"), jsontext.BeginArray)
		for _, n := range names {
			unit := "Count"
			switch {
			case strings.HasSuffix(n, "Ms"):
				unit = "Milliseconds"
			case strings.HasSuffix(n, "Seconds"):
				unit = "Seconds"
			}
			metric(n, unit)
		}
		put(jsontext.EndArray, jsontext.EndObject)
	}
	put(jsontext.EndArray, jsontext.EndObject,
		name(DimensionFunction), name(m.function), name(DimensionEnvironment), name(m.environment))
	if outcome != nil {
		put(name(DimensionOutcome), name(string(*outcome)), name(MetricRequests), jsontext.Int(1))
	}
	for _, n := range names {
		put(name(n), jsontext.Float(values[n]))
	}
	put(jsontext.EndObject)
	if err != nil {
		return
	}
	_, _ = m.w.Write(m.line.Bytes())
}

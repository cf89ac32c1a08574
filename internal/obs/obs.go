// Package obs is what the functions tell operators: one JSON log line per
// request or message in Lambda's JSON log format, and CloudWatch Embedded
// Metric Format (EMF) lines whose dimensions stay low-cardinality (function,
// environment, outcome — never an account or a key).
package obs

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// timestampLayout is a line's time, to the millisecond as Lambda's own
// lines give it: the nanoseconds of time.RFC3339Nano are six bytes more
// on every line.
const timestampLayout = "2006-01-02T15:04:05.000Z07:00"

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
			a.Value = slog.StringValue(a.Value.Time().UTC().Format(timestampLayout))
		case slog.MessageKey:
			a.Key = KeyMessage
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

// Namespace of every metric the functions write as EMF lines.
const Namespace = "idempay"

// KeyMessage is the member of a log line that holds its message: Lambda's
// JSON log format's name, which NewLogger writes.
const KeyMessage = "message"

// LogNamespace is the namespace of the metrics CloudWatch Logs makes from
// function's log lines in environment (metric filters), in place of its
// EMF lines. A metric filter's dimensions can only be members of the line,
// so the Function and Environment that EMF names as dimensions are named
// by the namespace: idempay/ENVIRONMENT/FUNCTION.
func LogNamespace(environment, function string) string {
	return Namespace + "/" + environment + "/" + function
}

// Metrics writes EMF lines for one function in one environment. Safe for
// concurrent use; each Record call is one line.
type Metrics struct {
	mu          sync.Mutex
	w           io.Writer
	line        []byte // the line being written, under mu
	function    string
	environment string
	now         func() time.Time
}

// NewMetrics returns a writer of EMF lines to w (the function's stdout,
// which Lambda ships to CloudWatch Logs, where EMF lines become metrics).
func NewMetrics(w io.Writer, function, environment string) *Metrics {
	return &Metrics{w: w, function: function, environment: environment, now: time.Now}
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
// appended into one buffer kept under the lock, values by name: a map
// and encoding/json's reflection cost a request four times the CPU and
// seven times the allocations. A value that is not a finite number is
// left out (CloudWatch takes no other), and the rest of the line is
// written; no line is written when nothing is left.
func (m *Metrics) write(outcome *Outcome, values map[string]float64) {
	names := slices.DeleteFunc(slices.Sorted(maps.Keys(values)), func(n string) bool {
		return math.IsNaN(values[n]) || math.IsInf(values[n], 0)
	})
	if outcome == nil && len(names) == 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	b := append(m.line[:0], `{"_aws":{"Timestamp":`...)
	b = strconv.AppendInt(b, m.now().UnixMilli(), 10)
	b = append(b, `,"CloudWatchMetrics":[`...)
	directive := func(b []byte, dimensions []string, metrics []string) []byte {
		b = append(b, `{"Namespace":`...)
		b = appendString(b, Namespace)
		b = append(b, `,"Dimensions":[[`...)
		for i, d := range dimensions {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, d)
		}
		b = append(b, `]],"Metrics":[`...)
		for i, n := range metrics {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"Name":`...)
			b = appendString(b, n)
			b = append(b, `,"Unit":`...)
			b = appendString(b, UnitOf(n))
			b = append(b, '}')
		}
		return append(b, "]}"...)
	}
	if outcome != nil {
		b = directive(b, []string{DimensionFunction, DimensionEnvironment, DimensionOutcome}, []string{MetricRequests})
	}
	if len(names) > 0 {
		if outcome != nil {
			b = append(b, ',')
		}
		b = directive(b, []string{DimensionFunction, DimensionEnvironment}, names)
	}
	member := func(b []byte, name string) []byte {
		b = append(b, ',')
		b = appendString(b, name)
		return append(b, ':')
	}
	b = append(b, "]}"...)
	b = appendString(member(b, DimensionFunction), m.function)
	b = appendString(member(b, DimensionEnvironment), m.environment)
	if outcome != nil {
		b = appendString(member(b, DimensionOutcome), string(*outcome))
		b = append(member(b, MetricRequests), '1')
	}
	for _, n := range names {
		b = strconv.AppendFloat(member(b, n), values[n], 'f', -1, 64)
	}
	b = append(b, "}\n"...)
	m.line = b
	_, _ = m.w.Write(b)
}

// UnitOf is a metric's unit by its name: milliseconds when it ends in Ms,
// seconds when it ends in Seconds, a count otherwise.
func UnitOf(name string) string {
	switch {
	case strings.HasSuffix(name, "Ms"):
		return "Milliseconds"
	case strings.HasSuffix(name, "Seconds"):
		return "Seconds"
	}
	return "Count"
}

// appendString appends s as a JSON string: as it is between quotes when
// it is printable ASCII without a quote or a backslash (every name and
// dimension here), through encoding/json otherwise.
func appendString(b []byte, s string) []byte {
	plain := true
	for i := range len(s) {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			plain = false
			break
		}
	}
	if plain {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	quoted, _ := json.Marshal(s) // a string always marshals
	return append(b, quoted...)
}

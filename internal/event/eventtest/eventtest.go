// Package eventtest gives tests the events' documented schema,
// docs/events.schema.json, compiled, to check every event they receive.
package eventtest

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Schema compiles docs/events.schema.json, formats asserted.
func Schema(tb testing.TB) *jsonschema.Schema {
	tb.Helper()
	_, here, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(here), "..", "..", "..", "docs", "events.schema.json"))
	if err != nil {
		tb.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		tb.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("events.schema.json", doc); err != nil {
		tb.Fatal(err)
	}
	s, err := c.Compile("events.schema.json")
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

package cost

import (
	"go/ast"
	"go/parser"
	"go/token"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestPerMillion holds the arithmetic to an example worked by hand: a
// charge over HTTP at 128 MB billed 20 ms, writing 5 units, an event
// published once with a fifth of a receive-and-delete pair and a
// hundredth of a publisher invocation of 50 ms at 128 MB, and 1,000 bytes
// of logs.
func TestPerMillion(t *testing.T) {
	parts := PerMillion(Usage{
		MemoryMB: 128, BilledMS: 20, Invocations: 1, APIRequests: 1, WriteUnits: 5,
		Publishes: 1, EventRequests: 0.2, PublisherInvocations: 0.01, PublisherBilledMS: 50, PublisherMemoryMB: 128,
		LogBytes: 1000,
	})
	want := map[string]float64{
		PartDuration: 0.125 * 0.020 * 0.0000133334 * 1e6,                         // 0.125 GB × 20 ms = 0.0025 GB-s: $0.0333
		PartRequests: 0.20,                                                       // one invocation
		PartAPI:      1.00,                                                       // one request
		PartWrites:   5 * 0.625,                                                  // $3.125
		PartReads:    0,                                                          //
		PartCommands: 0,                                                          // over HTTP
		PartEvent:    0.50 + 0.2*0.40 + 0.01*(0.20+0.125*0.050*0.0000133334*1e6), // $0.5828
		PartLogs:     1000 * 1e6 / (1024 * 1024 * 1024) * 0.50,                   // 0.931 GB: $0.4657
	}
	if len(parts) != len(want) {
		t.Fatalf("%d parts, want %d", len(parts), len(want))
	}
	for _, p := range parts {
		if math.Abs(p.Dollars-want[p.Name]) > 1e-9 {
			t.Errorf("%s: $%.6f, by hand $%.6f", p.Name, p.Dollars, want[p.Name])
		}
	}
	if got := Total(parts); math.Abs(got-5.407) > 0.001 {
		t.Errorf("total $%.4f, by hand $5.407", got)
	}
	// An idle queue: one poller, a 20-second poll, 30 days: 129,600 requests.
	if got := IdleQueueMonthly(1); math.Abs(got-129600*0.40/1e6) > 1e-12 {
		t.Errorf("an idle queue: $%.6f a month", got)
	}
}

// TestPricesWrittenOnce: no Go file of the repository but prices.go (and
// this test) spells a price: none has the figures only prices have as a
// number, and no string says a dollar amount, so every price is read from
// the constants here.
func TestPricesWrittenOnce(t *testing.T) {
	figures := map[string]bool{"0.0000133334": true, "0.0000166667": true, "0.625": true}
	dollars := regexp.MustCompile(`\$[0-9]`)
	root, scanned := filepath.Join("..", ".."), 0
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "_cdk" || d.Name() == "cdk.out") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || filepath.Dir(path) == filepath.Join(root, "internal", "cost") {
			return nil
		}
		scanned++
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			switch {
			case !ok:
			case lit.Kind == token.FLOAT && figures[lit.Value]:
				t.Errorf("%s spells the price %s: read it from internal/cost", path, lit.Value)
			case lit.Kind == token.STRING && dollars.MatchString(lit.Value) && !strings.Contains(lit.Value, "$%"):
				t.Errorf("%s says a dollar amount %s: compute it from internal/cost", path, lit.Value)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if scanned < 100 {
		t.Fatalf("%d Go files scanned: the walk missed the repository", scanned)
	}
}

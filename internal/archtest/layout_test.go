package archtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeLayout holds the README's layout equal to the repository: every
// path it lists exists, and every package of the module is listed on a
// line of its own.
func TestReadmeLayout(t *testing.T) {
	listed := map[string]bool{}
	for _, line := range readmeBlock(t, "Layout") {
		path := strings.TrimSuffix(strings.Fields(line)[0], "/")
		listed[path] = true
		if _, err := os.Stat(filepath.Join("../..", path)); err != nil {
			t.Errorf("the layout lists %s, which does not exist", path)
		}
	}
	out, err := exec.Command("go", "list", "-f", "{{.Dir}}", "../../...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(root, dir)
		if err != nil {
			t.Fatal(err)
		}
		if rel != "." && !listed[filepath.ToSlash(rel)] {
			t.Errorf("package %s is not in the README's layout", rel)
		}
	}
}

// readmeBlock is the lines of the first code block of the README's
// section heading.
func readmeBlock(t *testing.T, heading string) []string {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## "+heading+"\n")
	if !ok {
		t.Fatalf("the README has no %s section", heading)
	}
	_, block, _ := strings.Cut(section, "```\n")
	block, _, _ = strings.Cut(block, "```")
	return strings.Split(strings.TrimSpace(block), "\n")
}

// maxWiringLines is the most lines a non-test file of a function may
// hold: a function only wires (reads its environment, builds an adapter
// from internal/, starts it).
const maxWiringLines = 60

// TestFunctionsOnlyWire holds every non-test .go file under functions/ to
// maxWiringLines lines, so handler and sweep logic live in the adapters
// under internal/, where they are tested with fixtures.
func TestFunctionsOnlyWire(t *testing.T) {
	files, err := filepath.Glob("../../functions/*/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no functions found (%v)", err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(b), "\n"); n > maxWiringLines {
			t.Errorf("%s has %d lines, more than %d: move its logic to an adapter under internal/", strings.TrimPrefix(f, "../../"), n, maxWiringLines)
		}
	}
}

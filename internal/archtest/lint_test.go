package archtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestLint runs the repository's own `make lint` on throwaway modules: a
// clean one passes, and each planted violation fails it, naming its check.
// So the checks make test runs on the three modules bite: among them a
// planted twin (two operations' copies of one function), which passes
// only once .twins accepts it, and an acceptance that outlived its twin.
func TestLint(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	const goMod = "module example.test/lint\n\ngo 1.26\n"
	clean := map[string]string{
		"go.mod":    goMod,
		"a.go":      "// Package lint is a throwaway module.\npackage lint\n\n// Twice doubles n.\nfunc Twice(n int) int { return 2 * n }\n",
		"a_test.go": "package lint\n\nimport \"testing\"\n\nfunc TestTwice(t *testing.T) {\n\tif Twice(2) != 4 {\n\t\tt.Fatal(Twice(2))\n\t}\n}\n",
	}
	for _, tc := range []struct {
		name, want string // want: what the failure names ("" passes)
		change     map[string]string
	}{
		{"clean", "", nil},
		{"not gofmt'd", "gofmt -l", map[string]string{"a.go": "// Package lint is a throwaway module.\npackage lint\n\n// Twice doubles n.\nfunc Twice(n int) int {return 2*n}\n"}},
		{"go vet", "Sprintf", map[string]string{"b.go": "package lint\n\nimport \"fmt\"\n\n// Bad formats badly.\nfunc Bad() string { return fmt.Sprintf(\"%d\", \"x\") }\n"}},
		{"staticcheck", "U1000", map[string]string{"b.go": "package lint\n\nfunc unused() {}\n"}},
		{"not tidy", "-require golang.org/x/sync", map[string]string{"go.mod": goMod + "\nrequire golang.org/x/sync v0.1.0\n"}},
		{"a twin", "twins: duplicate code", map[string]string{"charge.go": twin("Charge"), "refund.go": twin("Refund")}},
		{"an accepted twin", "", map[string]string{"charge.go": twin("Charge"), "refund.go": twin("Refund"), ".twins": "charge.go refund.go planted, and accepted\n"}},
		{"a stale acceptance", "no longer found", map[string]string{".twins": "charge.go refund.go accepted, and gone\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			for name, body := range clean {
				write(t, dir, name, body)
			}
			for name, body := range tc.change {
				write(t, dir, name, body)
			}
			cmd := exec.Command("make", "--no-print-directory", "-C", root, "lint", "LINT_MODULES="+dir)
			cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
			out, err := cmd.CombinedOutput()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("a clean module failed make lint: %v\n%s", err, out)
			case tc.want != "" && err == nil:
				t.Fatalf("make lint passed a module with a planted violation:\n%s", out)
			case tc.want != "" && !strings.Contains(string(out), tc.want):
				t.Fatalf("make lint failed, but not for the planted violation (want %q):\n%s", tc.want, out)
			}
		})
	}
}

// twin is a function named name whose body is the same for every name:
// two of them are a twin of 14 lines, as two operations' copies would be.
func twin(name string) string {
	return "package lint\n\n// " + name + " sums the amounts, capped.\nfunc " + name + "(xs []int) int {\n\ttotal := 0\n" +
		"\tfor _, x := range xs {\n\t\tif x > 0 {\n\t\t\ttotal += x\n\t\t} else {\n\t\t\ttotal -= x\n\t\t}\n\t}\n" +
		"\tif total > 100 {\n\t\treturn 100\n\t}\n\treturn total\n}\n"
}

func write(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

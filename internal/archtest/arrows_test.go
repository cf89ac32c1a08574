package archtest

import (
	"os/exec"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestReadmeArrows holds the README's arrows equal to the code: each
// "pkg ──► a, b" names exactly pkg's direct imports of this module (by
// their last path element; "AWS SDK" and parentheses are prose), and each
// package of the leaves line imports nothing of it.
func TestReadmeArrows(t *testing.T) {
	dirs := packageDirs(t)
	arrow := regexp.MustCompile(`([a-z/]+)(?: \([^)]*\))? ──► ((?:[a-zA-Z ]+(?: \([^)]*\))?(?:, )?)+?)(?:\s{2,}|$)`)
	for _, line := range readmeBlock(t, "Arrows") {
		if rest, ok := strings.CutSuffix(line, ": leaves"); ok {
			for _, name := range strings.Split(rest, ", ") {
				if got := imports(t, dirs, name); len(got) > 0 {
					t.Errorf("%s is listed as a leaf but imports %v", name, got)
				}
			}
			continue
		}
		for _, m := range arrow.FindAllStringSubmatch(line, -1) {
			name := m[1]
			if strings.HasPrefix(name, "infra") {
				continue // its own module, checked by its own tests
			}
			var want []string
			for _, w := range strings.Split(m[2], ", ") {
				w = strings.TrimSpace(regexp.MustCompile(`\s*\([^)]*\)`).ReplaceAllString(w, ""))
				if w != "" && w != "AWS SDK" {
					want = append(want, w)
				}
			}
			slices.Sort(want)
			if got := imports(t, dirs, name); !slices.Equal(got, want) {
				t.Errorf("README: %s ──► %v; the code imports %v", name, want, got)
			}
		}
	}
}

// packageDirs maps each package's README name (its directory below
// internal/, or functions/x) to its directory.
func packageDirs(t *testing.T) map[string]string {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}", "../../...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	dirs := map[string]string{}
	for _, p := range strings.Fields(string(out)) {
		rel := strings.TrimPrefix(p, module)
		if strings.HasPrefix(rel, "functions/") {
			dirs[rel] = rel
		} else if strings.HasPrefix(rel, "internal/") {
			dirs[path.Base(rel)] = rel
		}
	}
	return dirs
}

// imports are the README names of dir's direct imports of this module.
func imports(t *testing.T, dirs map[string]string, name string) []string {
	dir, ok := dirs[name]
	if !ok {
		t.Fatalf("the README names %s, which is no package", name)
	}
	out, err := exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, "../../"+dir).CombinedOutput()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", dir, err, out)
	}
	var got []string
	for _, p := range strings.Fields(string(out)) {
		if rel, ok := strings.CutPrefix(p, module+"internal/"); ok {
			got = append(got, path.Base(rel))
		}
	}
	slices.Sort(got)
	return got
}

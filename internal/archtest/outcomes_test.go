package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryOutcomeIsWritten: each name of the outcome vocabulary
// (obs.Outcome*) is written by some function's code, outside obs and
// outside tests, so the vocabulary and docs/operating.md's table name no
// outcome that never happens.
func TestEveryOutcomeIsWritten(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "../obs/outcomes.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	unused := map[string]bool{}
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
			for _, spec := range g.Specs {
				for _, n := range spec.(*ast.ValueSpec).Names {
					unused[n.Name] = true
				}
			}
		}
	}
	for _, root := range []string{"../../functions", "../../internal"} {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") || strings.Contains(p, "/obs/") {
				return err
			}
			file, err := parser.ParseFile(token.NewFileSet(), p, nil, 0)
			if err != nil {
				return err
			}
			ast.Inspect(file, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok {
					if x, ok := sel.X.(*ast.Ident); ok && x.Name == "obs" {
						delete(unused, sel.Sel.Name)
					}
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(unused) > 0 {
		t.Fatalf("outcomes no function writes: %v", unused)
	}
}

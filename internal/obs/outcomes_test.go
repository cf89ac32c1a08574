package obs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestOutcomesListsEveryName: Outcomes is every constant of type Outcome,
// each name once.
func TestOutcomesListsEveryName(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "outcomes.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	declared := 0
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			if v := spec.(*ast.ValueSpec); v.Type != nil && v.Type.(*ast.Ident).Name == "Outcome" {
				declared += len(v.Names)
			}
		}
	}
	names := map[Outcome]bool{}
	for _, o := range Outcomes() {
		if names[o] {
			t.Errorf("%s twice", o)
		}
		names[o] = true
	}
	if declared != len(Outcomes()) || len(names) != declared {
		t.Fatalf("outcomes.go declares %d outcomes, Outcomes lists %d (%d names)", declared, len(Outcomes()), len(names))
	}
}

// TestDocumentedOutcomes: docs/operating.md's table of outcomes names
// exactly the vocabulary, in its order.
func TestDocumentedOutcomes(t *testing.T) {
	doc, err := os.ReadFile("../../docs/operating.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(doc), "| outcome | written by | what it came to |\n|---|---|---|\n")
	if !ok {
		t.Fatal("docs/operating.md has no table of outcomes")
	}
	table, _, _ = strings.Cut(table, "\n\n")
	var documented []Outcome
	for row := range strings.Lines(table) {
		name, _, _ := strings.Cut(strings.TrimPrefix(row, "| `"), "`")
		documented = append(documented, Outcome(name))
	}
	if !slices.Equal(documented, Outcomes()) {
		t.Fatalf("docs/operating.md lists\n%v\nthe vocabulary is\n%v", documented, Outcomes())
	}
}

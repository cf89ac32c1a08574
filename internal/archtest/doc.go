// Package archtest holds the architecture's import rules as a test
// (archtest_test.go): the arrows of the README's package diagram, checked
// against `go list -deps`, so the picture cannot drift from the code.
package archtest

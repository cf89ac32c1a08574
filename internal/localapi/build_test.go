package localapi

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestFunctionsAreTheMakefiles: the stack runs the functions the
// Makefile builds for AWS.
func TestFunctionsAreTheMakefiles(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^FUNCTIONS := (.*)$`).FindSubmatch(b)
	if m == nil || !slices.Equal(strings.Fields(string(m[1])), Functions) {
		t.Fatalf("the Makefile's FUNCTIONS %q, the stack's %v", m, Functions)
	}
}

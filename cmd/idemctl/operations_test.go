package main

import (
	"testing"
)

// TestEveryOperationIsDescribed: inspect shows, and void-confirmed asks
// about, a record of every operation an operator acts on, and of no other.
func TestEveryOperationIsDescribed(t *testing.T) {
	names := operationNames()
	for _, name := range names {
		if describers[name] == nil || voidQuestions[name] == "" {
			t.Errorf("operation %s: no describer or no void question", name)
		}
	}
	if len(describers) != len(names) || len(voidQuestions) != len(names) {
		t.Errorf("%d describers, %d void questions, %d operations", len(describers), len(voidQuestions), len(names))
	}
}

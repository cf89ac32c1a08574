package main

import (
	"testing"

	"github.com/idempotent-payments/idempay/internal/operations"
)

// TestEveryOperationIsDescribed: inspect shows, and void-confirmed asks
// about, a record of every registered operation, and of no other.
func TestEveryOperationIsDescribed(t *testing.T) {
	regs := operations.All()
	for _, r := range regs {
		if describers[r.Name] == nil || voidQuestions[r.Name] == "" {
			t.Errorf("operation %s: no describer or no void question", r.Name)
		}
	}
	if len(describers) != len(regs) || len(voidQuestions) != len(regs) {
		t.Errorf("%d describers, %d void questions, %d operations", len(describers), len(voidQuestions), len(regs))
	}
}

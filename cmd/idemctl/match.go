package main

import (
	"context"
	"fmt"
	"time"

	"github.com/idempotent-payments/idempay/internal/match"
	"github.com/idempotent-payments/idempay/internal/operations"
)

// matchedLine is one line the daily match kept, as match shows it: what
// the table and the acquirer held when the match found it, and the row
// its movement names as the table holds it now (nil when none).
type matchedLine struct {
	match.Line
	RowNow *match.Row `json:"row_now,omitempty"`
}

// matchedDay is a day's kept lines, with their counts by kind.
type matchedDay struct {
	Day    string         `json:"day"`
	Counts map[string]int `json:"counts"`
	Lines  []matchedLine  `json:"lines"`
}

// match shows the daily match's kept lines of --date, read-only: from the
// table alone (idemctl holds no acquirer credential; the acquirer's side
// is the line as the match read it). A repair goes through the channel's
// decisions (accept, void-confirmed), never here.
func (t tool) match(ctx context.Context) error {
	if *t.flags.date == "" {
		return fmt.Errorf("match takes --date YYYY-MM-DD (UTC)")
	}
	day, err := time.Parse(time.DateOnly, *t.flags.date)
	if err != nil {
		return fmt.Errorf("--date %q: want YYYY-MM-DD", *t.flags.date)
	}
	books := t.matchBooks
	out := matchedDay{Day: day.Format(time.DateOnly), Counts: map[string]int{}, Lines: []matchedLine{}}
	lines, err := books.Lines(ctx, day)
	if err != nil {
		return err
	}
	for _, l := range lines {
		out.Counts[l.Kind]++
		ml := matchedLine{Line: l}
		if l.Movement != nil {
			if reg, ok := operations.ByMovement(l.Movement.Kind); ok {
				row, found, err := books.Row(ctx, reg.RowIDPrefix+l.Movement.Key)
				if err != nil {
					return err
				}
				if found {
					ml.RowNow = &row
				}
			}
		}
		out.Lines = append(out.Lines, ml)
	}
	return t.out.Encode(out)
}

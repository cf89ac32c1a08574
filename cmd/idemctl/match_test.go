package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/charge/chargetest"
	"github.com/idempotent-payments/idempay/internal/dynamo"
	"github.com/idempotent-payments/idempay/internal/httpapi"
	"github.com/idempotent-payments/idempay/internal/idem"
	"github.com/idempotent-payments/idempay/internal/match"
	"github.com/idempotent-payments/idempay/internal/op"
)

// TestMatchShowsADaysLines: match --date shows the lines the daily match
// kept for the day, each with what the table and the acquirer held and
// the row its movement names as the table holds it now; a day without
// lines shows none; a missing date or one that does not parse is refused.
func TestMatchShowsADaysLines(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	svc := chargetest.ServiceWith(idem.NewGuard(w.store, idem.Config{Protocol: w.protocol}), w.ledger, w.acq, httpapi.Render, charge.Config{})
	made := svc.Charge(ctx, charge.Input{Account: "acct_ops", Keys: []string{"ops-match-key"}, Body: body})
	if made.Outcome != op.Executed {
		t.Fatalf("setup: %s", made.Outcome)
	}
	day := acquirer.DayOf(time.Now())
	books := dynamo.Open(w.ddb, w.table).MatchBooks()
	key := strings.TrimPrefix(made.ChargeID, charge.IDPrefix)
	restated := acquirer.Movement{Kind: acquirer.MovementAuthorization, Key: key, AuthorizationKey: key, Status: acquirer.StatusCaptured, Amount: 1, Currency: "BRL", At: time.Now()}
	if _, err := books.Keep(ctx, day, match.Line{Kind: match.TermsDiffer, Ref: "authorization:" + key, ChargeID: made.ChargeID, Movement: &restated, At: restated.At}); err != nil {
		t.Fatal(err)
	}
	idemctl := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := run(ctx, args, w.shell(strings.NewReader(""), &out))
		return out.String(), err
	}
	out, err := idemctl("match", "--date", day.Format(time.DateOnly))
	var got matchedDay
	if err != nil || json.Unmarshal([]byte(out), &got) != nil || got.Counts[match.TermsDiffer] != 1 || len(got.Lines) != 1 ||
		got.Lines[0].Movement.Amount != 1 || got.Lines[0].RowNow == nil || got.Lines[0].RowNow.ID != made.ChargeID || got.Lines[0].RowNow.Terms.Amount == 1 {
		t.Fatalf("match: %v\n%s", err, out)
	}
	out, err = idemctl("match", "--date", day.Add(-24*time.Hour).Format(time.DateOnly))
	var none matchedDay
	if err != nil || json.Unmarshal([]byte(out), &none) != nil || len(none.Lines) != 0 || len(none.Counts) != 0 {
		t.Fatalf("a day without lines: %v\n%s", err, out)
	}
	for _, bad := range [][]string{{"match"}, {"match", "--date", "07/12/2026"}} {
		if _, err := idemctl(bad...); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}

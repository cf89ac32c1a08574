package sandbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/idempotent-payments/idempay/internal/acquirer"
	"github.com/idempotent-payments/idempay/internal/acquirer/acquirerhttp"
	"github.com/idempotent-payments/idempay/internal/sandbox"
)

var _ acquirer.Reporter = (*acquirerhttp.Client)(nil)

// TestReportOfADay: the report of a UTC day lists every authorization,
// capture, refund and void made that day, declined ones included, under
// its key, and nothing of the day before or after; read a page at a time,
// each movement comes once, in the report's order, even one made while
// the pages are read. Over HTTP, through the acquirer client, the first
// page is the same; a cursor it never gave is refused.
func TestReportOfADay(t *testing.T) {
	ctx := context.Background()
	day := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	now := day.Add(-time.Second) // the day before, at its last second
	sb := sandbox.New("")
	sb.Now = func() time.Time { return now }
	client, err := acquirerhttp.NewClient("http://sandbox.invalid", "", sandbox.InProcess(sb))
	if err != nil {
		t.Fatal(err)
	}
	capture := false
	authorize := func(key, method string) acquirer.Authorization {
		t.Helper()
		a, err := client.Authorize(ctx, key, acquirer.Request{Amount: 1000, Currency: "BRL", PaymentMethod: method, OrderID: "o", Capture: &capture})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	authorize("before", "pm_card_visa")
	now = day
	a := authorize("auth-1", "pm_card_visa")
	now = day.Add(time.Hour)
	authorize("auth-declined", "pm_card_declined")
	now = day.Add(2 * time.Hour)
	if _, err := client.Capture(ctx, "capture-1", acquirer.CaptureRequest{AuthorizationID: a.ID, Amount: 400, Currency: "BRL"}); err != nil {
		t.Fatal(err)
	}
	now = day.Add(3 * time.Hour)
	if _, err := client.Refund(ctx, "refund-1", acquirer.RefundRequest{AuthorizationID: a.ID, Amount: 100, Currency: "BRL"}); err != nil {
		t.Fatal(err)
	}
	b := authorize("auth 2", "pm_card_visa") // a key with a space: a page ends on it
	now = day.Add(4 * time.Hour)
	if _, err := client.Void(ctx, "void-1", acquirer.VoidRequest{AuthorizationID: b.ID, Amount: 1000, Currency: "BRL"}); err != nil {
		t.Fatal(err)
	}
	now = day.Add(24 * time.Hour) // the next day, at its first instant
	authorize("after", "pm_card_visa")

	want := []string{"authorization auth-1", "authorization auth-declined", "capture capture-1", "authorization auth 2", "refund refund-1", "void void-1"}
	lines := func(p acquirer.ReportPage) []string {
		var out []string
		for _, m := range p.Movements {
			out = append(out, m.Kind+" "+m.Key)
		}
		return out
	}
	// A page of two at a time; a movement made that day after the first
	// page was read comes on a later page.
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		p, err := sb.Report(ctx, day.Add(13*time.Hour), cursor, 2)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, lines(p)...)
		if pages == 0 {
			now = day.Add(5 * time.Hour)
			authorize("auth-late", "pm_card_visa")
			want = append(want, "authorization auth-late")
		}
		if p.Next == "" {
			break
		}
		cursor = p.Next
	}
	if !slices.Equal(got, want) {
		t.Fatalf("the day's report %v, want %v", got, want)
	}
	first, err := client.Report(ctx, day, "")
	if err != nil || !slices.Equal(lines(first), want) || first.Next != "" {
		t.Fatalf("over HTTP: %v, %v; want %v", lines(first), err, want)
	}
	for _, m := range first.Movements {
		if m.Key == "capture-1" && (m.Status != acquirer.CaptureSucceeded || m.Amount != 400 || m.AuthorizationID != a.ID || !m.At.Equal(day.Add(2*time.Hour))) {
			t.Fatalf("the capture's line %+v", m)
		}
		if m.Key == "auth-declined" && m.Status != acquirer.StatusDeclined {
			t.Fatalf("the decline's line %+v", m)
		}
	}
	for _, cursor := range []string{"nope", "bm9wZQ", "MTIz"} {
		if _, err := client.Report(ctx, day, cursor); !errors.Is(err, acquirer.ErrBadCursor) {
			t.Fatalf("cursor %q: %v, want ErrBadCursor", cursor, err)
		}
	}
}

// TestReportRouteRefusals: a day, a limit or a cursor that does not parse
// is 400 and lists nothing; a day with nothing is an empty page.
func TestReportRouteRefusals(t *testing.T) {
	srv := httptest.NewServer(sandbox.New(""))
	t.Cleanup(srv.Close)
	for path, want := range map[string]int{
		"/v1/reports/2026-12-01":               http.StatusOK,
		"/v1/reports/2026-12-01?limit=1000":    http.StatusOK,
		"/v1/reports/2026-13-01":               http.StatusBadRequest,
		"/v1/reports/yesterday":                http.StatusBadRequest,
		"/v1/reports/2026-12-01?limit=0":       http.StatusBadRequest,
		"/v1/reports/2026-12-01?limit=1001":    http.StatusBadRequest,
		"/v1/reports/2026-12-01?cursor=%25%25": http.StatusBadRequest,
		"/v1/reports/2026-12-01?cursor=bm9wZQ": http.StatusBadRequest,
	} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		var page acquirer.ReportPage
		decodeErr := json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%s: %d, want %d", path, resp.StatusCode, want)
		}
		if want == http.StatusOK && (decodeErr != nil || page.Movements == nil || len(page.Movements) != 0) {
			t.Errorf("%s: %+v, %v; want an empty page", path, page, decodeErr)
		}
	}
}

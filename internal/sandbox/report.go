package sandbox

import (
	"cmp"
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/idempotent-payments/idempay/internal/acquirer"
)

// DefaultReportPage is how many movements a page of the report holds
// when the request names no limit; MaxReportPage the most it may ask.
const (
	DefaultReportPage = 100
	MaxReportPage     = 1000
)

// Report is what the sandbox did on the UTC day of day (acquirer.Reporter):
// every authorization, capture, refund and void made that day, declined
// ones included, under the key each was asked under, in the order of
// their time (then kind, then key), limit to a page (DefaultReportPage
// when 0 or less), from cursor ("" for the first page). A cursor names
// the last movement of its page, so a movement made later that day comes
// after it or on a page already read, never twice.
func (s *Server) Report(_ context.Context, day time.Time, cursor string, limit int) (acquirer.ReportPage, error) {
	after, err := parseCursor(cursor)
	if err != nil {
		return acquirer.ReportPage{}, err
	}
	if limit <= 0 {
		limit = DefaultReportPage
	}
	day = acquirer.DayOf(day)
	end := day.Add(24 * time.Hour)
	var lines []acquirer.Movement
	for _, m := range s.movements() {
		if !m.At.Before(day) && m.At.Before(end) && (cursor == "" || compareMovements(m, after) > 0) {
			lines = append(lines, m)
		}
	}
	slices.SortFunc(lines, compareMovements)
	page := acquirer.ReportPage{Movements: lines[:min(limit, len(lines))]}
	if len(lines) > limit {
		page.Next = cursorOf(page.Movements[limit-1])
	}
	if page.Movements == nil {
		page.Movements = []acquirer.Movement{}
	}
	return page, nil
}

// movements are all the sandbox did, as report lines.
func (s *Server) movements() []acquirer.Movement {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []acquirer.Movement
	for _, k := range s.order {
		a := s.byKey[k].auth
		out = append(out, acquirer.Movement{Kind: acquirer.MovementAuthorization, Key: k, ID: a.ID, AuthorizationID: a.ID,
			Status: a.Status, Amount: a.Amount, Currency: a.Currency, At: a.CreatedAt})
	}
	out = append(out, linesOf(acquirer.MovementRefund, s.refundOrder, s.refunds, func(r acquirer.Refund) terms {
		return terms{r.ID, r.AuthorizationID, r.Status, r.Amount, r.Currency, r.CreatedAt}
	})...)
	out = append(out, linesOf(acquirer.MovementCapture, s.captureOrder, s.captures, func(c acquirer.Capture) terms {
		return terms{c.ID, c.AuthorizationID, c.Status, c.Amount, c.Currency, c.CreatedAt}
	})...)
	return append(out, linesOf(acquirer.MovementVoid, s.voidOrder, s.voids, func(v acquirer.Void) terms {
		return terms{v.ID, v.AuthorizationID, v.Status, v.Amount, v.Currency, v.CreatedAt}
	})...)
}

// terms are what a report line says of an action, besides its kind and key.
type terms struct {
	id, authorizationID, status string
	amount                      int64
	currency                    string
	at                          time.Time
}

// linesOf are the report lines of the actions of kind under keys, in m,
// each read by of. The caller holds mu.
func linesOf[T any](kind string, keys []string, m map[string]answered[T], of func(T) terms) []acquirer.Movement {
	out := make([]acquirer.Movement, 0, len(keys))
	for _, k := range keys {
		t := of(m[k].answer)
		out = append(out, acquirer.Movement{Kind: kind, Key: k, ID: t.id, AuthorizationID: t.authorizationID, Status: t.status,
			Amount: t.amount, Currency: t.currency, At: t.at})
	}
	return out
}

// compareMovements is the report's order: time, then kind, then key.
func compareMovements(a, b acquirer.Movement) int {
	return cmp.Or(a.At.Compare(b.At), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Key, b.Key))
}

// cursorOf is the cursor after m: its place in the report's order.
func cursorOf(m acquirer.Movement) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(m.At.UnixNano(), 10) + " " + m.Kind + " " + m.Key))
}

// parseCursor is the place a cursor names (the zero Movement for "").
func parseCursor(cursor string) (acquirer.Movement, error) {
	if cursor == "" {
		return acquirer.Movement{}, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	parts := strings.SplitN(string(b), " ", 3) // a key may hold a space
	if err != nil || len(parts) != 3 {
		return acquirer.Movement{}, acquirer.ErrBadCursor
	}
	ns, err := strconv.ParseInt(parts[0], 10, 64)
	if err != nil || parts[1] == "" || parts[2] == "" {
		return acquirer.Movement{}, acquirer.ErrBadCursor
	}
	return acquirer.Movement{At: time.Unix(0, ns).UTC(), Kind: parts[1], Key: parts[2]}, nil
}

// reportRoute serves GET /v1/reports/{day}?cursor=&limit=: day as
// YYYY-MM-DD (UTC), limit 1 to MaxReportPage. A day, a cursor or a limit
// that does not parse is 400.
func (s *Server) reportRoute(w http.ResponseWriter, r *http.Request) {
	day, err := time.Parse(time.DateOnly, r.PathValue("day"))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "day: want YYYY-MM-DD"})
		return
	}
	limit := DefaultReportPage
	if l := r.URL.Query().Get("limit"); l != "" {
		if limit, err = strconv.Atoi(l); err != nil || limit < 1 || limit > MaxReportPage {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("limit: want 1 to %d", MaxReportPage)})
			return
		}
	}
	page, err := s.Report(r.Context(), day, r.URL.Query().Get("cursor"), limit)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, page)
}

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
	keyOf := make(map[string]string, len(s.order)) // authorization id to its key
	for _, k := range s.order {
		a := s.byKey[k].auth
		keyOf[a.ID] = k
		out = append(out, a.Movement(k))
	}
	out = append(out, linesOf(s.refundOrder, s.refunds, keyOf, acquirer.Refund.Movement)...)
	out = append(out, linesOf(s.captureOrder, s.captures, keyOf, acquirer.Capture.Movement)...)
	return append(out, linesOf(s.voidOrder, s.voids, keyOf, acquirer.Void.Movement)...)
}

// linesOf are the report lines of the actions under keys, in m, each as
// movement states it, with its authorization's key (keyOf gives it by the
// authorization's id). The caller holds mu.
func linesOf[T any](keys []string, m map[string]answered[T], keyOf map[string]string, movement func(T, string) acquirer.Movement) []acquirer.Movement {
	out := make([]acquirer.Movement, 0, len(keys))
	for _, k := range keys {
		line := movement(m[k].answer, k)
		line.AuthorizationKey = keyOf[line.AuthorizationID]
		out = append(out, line)
	}
	return out
}

// Forget makes the sandbox forget what it did of kind (acquirer.Movement…)
// under key, as an acquirer that reversed it after answering: neither its
// report nor its lookups know it any more. It reports whether there was
// such a movement. A test plants with it a row whose movement is gone.
func (s *Server) Forget(kind, key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch kind {
	case acquirer.MovementAuthorization:
		if _, ok := s.byKey[key]; !ok {
			return false
		}
		delete(s.byKey, key)
		s.order = slices.DeleteFunc(s.order, func(k string) bool { return k == key })
		return true
	case acquirer.MovementRefund:
		return forget(s.refunds, &s.refundOrder, key)
	case acquirer.MovementCapture:
		return forget(s.captures, &s.captureOrder, key)
	case acquirer.MovementVoid:
		return forget(s.voids, &s.voidOrder, key)
	}
	return false
}

// Restate makes the sandbox state amount for what it did of kind under
// key, in its report and its lookups, as an acquirer whose books came to
// other terms than its answer. It reports whether there was such a
// movement. A test plants with it a movement whose terms differ.
func (s *Server) Restate(kind, key string, amount int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch kind {
	case acquirer.MovementAuthorization:
		rec, ok := s.byKey[key]
		if ok {
			rec.auth.Amount = amount
			s.byKey[key] = rec
		}
		return ok
	case acquirer.MovementRefund:
		return restate(s.refunds, key, func(r *acquirer.Refund) { r.Amount = amount })
	case acquirer.MovementCapture:
		return restate(s.captures, key, func(c *acquirer.Capture) { c.Amount = amount })
	case acquirer.MovementVoid:
		return restate(s.voids, key, func(v *acquirer.Void) { v.Amount = amount })
	}
	return false
}

// forget deletes key's action from m and its order. The caller holds mu.
func forget[T any](m map[string]answered[T], order *[]string, key string) bool {
	if _, ok := m[key]; !ok {
		return false
	}
	delete(m, key)
	*order = slices.DeleteFunc(*order, func(k string) bool { return k == key })
	return true
}

// restate changes key's action in m by set. The caller holds mu.
func restate[T any](m map[string]answered[T], key string, set func(*T)) bool {
	a, ok := m[key]
	if ok {
		set(&a.answer)
		m[key] = a
	}
	return ok
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

package acquirer

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

var reportDay = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// TestReadReportPage: a page is read strictly: a movement of another
// day, of no kind, without its key, its authorization's, its status or currency, or of a negative
// amount, and a case variant of a member, refuse the whole page.
func TestReadReportPage(t *testing.T) {
	good := `{"movements":[{"kind":"capture","key":"k-1","id":"cp_1","authorization_id":"auth_1","authorization_key":"a-1","status":"succeeded","amount":400,"currency":"BRL","at":"2026-12-01T02:00:00Z"}],"next":"c"}`
	p, err := ReadReportPage(reportDay, []byte(good))
	if err != nil || len(p.Movements) != 1 || p.Next != "c" || p.Movements[0].Amount != 400 {
		t.Fatalf("%+v, %v", p, err)
	}
	for name, body := range map[string]string{
		"another day":          `{"movements":[{"kind":"capture","key":"k","status":"succeeded","amount":1,"currency":"BRL","at":"2026-12-02T00:00:00Z"}]}`,
		"the day before":       `{"movements":[{"kind":"capture","key":"k","status":"succeeded","amount":1,"currency":"BRL","at":"2026-11-30T23:59:59.999Z"}]}`,
		"no kind":              `{"movements":[{"kind":"payout","key":"k","status":"succeeded","amount":1,"currency":"BRL","at":"2026-12-01T00:00:00Z"}]}`,
		"no key":               `{"movements":[{"kind":"capture","status":"succeeded","amount":1,"currency":"BRL","at":"2026-12-01T00:00:00Z"}]}`,
		"no authorization key": `{"movements":[{"kind":"capture","key":"k","status":"succeeded","amount":1,"currency":"BRL","at":"2026-12-01T00:00:00Z"}]}`,
		"no status":            `{"movements":[{"kind":"capture","key":"k","amount":1,"currency":"BRL","at":"2026-12-01T00:00:00Z"}]}`,
		"negative":             `{"movements":[{"kind":"capture","key":"k","status":"succeeded","amount":-1,"currency":"BRL","at":"2026-12-01T00:00:00Z"}]}`,
		"case variant":         `{"movements":[],"Next":"c"}`,
		"null":                 `null`,
		"two values":           `{"movements":[]}{}`,
	} {
		if _, err := ReadReportPage(reportDay, []byte(body)); err == nil {
			t.Errorf("%s: read", name)
		}
	}
}

// FuzzReadReportPage: whatever the acquirer answers, reading a report
// page never panics, and a page it accepts holds only lines of the day,
// each with its kind, key and status, which encode and read back the same.
func FuzzReadReportPage(f *testing.F) {
	f.Add(`{"movements":[{"kind":"refund","key":"k-1","id":"rf_1","authorization_id":"auth_1","authorization_key":"a-1","status":"succeeded","amount":100,"currency":"BRL","at":"2026-12-01T23:59:59.999999999Z"}],"next":"abc"}`)
	f.Add(`{"movements":[{"kind":"void","key":"k","status":"declined","amount":0,"currency":"BRL","at":"2026-12-01T00:00:00Z"}]}`)
	f.Add(`{"movements":null}`)
	f.Add(`{"movements":[{"kind":"authorization","key":"k","key":"l","status":"captured","amount":1,"currency":"BRL","at":"2026-12-01T00:00:00Z"}]}`)
	f.Fuzz(func(t *testing.T, body string) {
		p, err := ReadReportPage(reportDay, []byte(body))
		if err != nil {
			return
		}
		for _, m := range p.Movements {
			if m.Key == "" || m.Status == "" || m.Amount < 0 || m.At.Before(reportDay) || !m.At.Before(reportDay.Add(24*time.Hour)) {
				t.Fatalf("accepted %+v", m)
			}
		}
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ReadReportPage(reportDay, b)
		if err != nil || !reflect.DeepEqual(normalized(again), normalized(p)) {
			t.Fatalf("%s read back as %+v, %v; want %+v", b, again, err, p)
		}
	})
}

// normalized is p with its times in UTC, for comparing what two decodings
// of one instant give.
func normalized(p ReportPage) ReportPage {
	out := ReportPage{Next: p.Next}
	for _, m := range p.Movements {
		m.At = m.At.UTC()
		out.Movements = append(out.Movements, m)
	}
	return out
}

package acquirer

import (
	"errors"
	"testing"
)

// TestDecode: an authorization is read only when it means one thing;
// members the acquirer adds later are ignored.
func TestDecode(t *testing.T) {
	t.Parallel()
	const created = `"created_at":"2026-12-01T06:12:15.78Z"`
	for body, want := range map[string]string{
		`{"id":"auth_1","status":"captured","amount":100,"currency":"BRL",` + created + `}`:                 StatusCaptured,
		`{"id":"auth_1","status":"declined","decline_code":"card_declined",` + created + `,"risk":{"s":1}}`: StatusDeclined,
		`{"id":"auth_1","status":"declined","status":"captured"}`:                                           "",
		`{"id":"auth_1","status":"declined","Status":"captured"}`:                                           "",
		`{"id":"auth_1","Status":"captured"}`:                                                               "",
		"{\"id\":\"auth_\xff\",\"status\":\"captured\"}":                                                    "",
		`{"id":"auth_1","status":"captured"} {"id":"auth_2","status":"declined"}`:                           "",
		`{"status":"captured"}`: "",
	} {
		a, err := decode([]byte(body))
		switch {
		case want == "" && !errors.Is(err, ErrOutcomeUnknown):
			t.Errorf("decode(%q) = %+v, %v; want outcome unknown", body, a, err)
		case want != "" && (err != nil || a.Status != want):
			t.Errorf("decode(%q) = %+v, %v; want %s", body, a, err, want)
		}
	}
}

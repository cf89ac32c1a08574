package acquirer

import "testing"

// BenchmarkReadAuthorization: the strict decoding of an acquirer's
// authorization answer of the sandbox's size, as each first execution
// reads one.
func BenchmarkReadAuthorization(b *testing.B) {
	body := []byte(`{"id":"auth_0afadecbcf9dedc96ceaeca1","status":"captured","amount":2500,"currency":"BRL","idempotency_key":"3f9c51a0b2d4e8713f9c51a0b2d4e871","created_at":"2026-12-07T05:09:05.123456789Z"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ReadAuthorization(EndpointAuthorize, 201, body); err != nil {
			b.Fatal(err)
		}
	}
}

package scheduled

import (
	"testing"

	"github.com/idempotent-payments/idempay/internal/deploy"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestConfigSkipResponseCRC32(t *testing.T) {
	t.Parallel()
	for value, want := range map[string]bool{"": false, "false": false, "true": true} {
		s, err := ConfigFromEnv(envOf(map[string]string{"TABLE_NAME": "t", deploy.EnvReconcileQueueURL: "http://q", deploy.EnvSkipResponseCRC32: value}))
		if err != nil || s.SkipResponseCRC32 != want {
			t.Errorf("%s=%q: %v, %v; want %v", deploy.EnvSkipResponseCRC32, value, s.SkipResponseCRC32, err, want)
		}
	}
	if _, err := ConfigFromEnv(envOf(map[string]string{"TABLE_NAME": "t", deploy.EnvReconcileQueueURL: "http://q", deploy.EnvSkipResponseCRC32: "1"})); err == nil {
		t.Error("1 accepted")
	}
}

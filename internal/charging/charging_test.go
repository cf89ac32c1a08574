package charging

import (
	"strings"
	"testing"

	"github.com/idempotent-payments/idempay/internal/charge"
	"github.com/idempotent-payments/idempay/internal/deploy"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestFromEnvDefaults(t *testing.T) {
	t.Parallel()
	c, err := FromEnv(envOf(map[string]string{"TABLE_NAME": "t", "ACQUIRER_URL": "http://a", "ACQUIRER_ID": "acq"}))
	if err != nil {
		t.Fatal(err)
	}
	p := deploy.Deployed().Protocol
	if c.AccountClaim != deploy.DefaultAccountClaim || c.Retention != p.Retention || c.InTransitBound != p.InTransitBound ||
		c.ClockSkew != p.ClockSkew || c.LeaseMargin != p.LeaseMargin || c.AcquirerTimeout != p.AcquirerTimeout ||
		c.CacheSize != DefaultCacheSize || c.MaxAmount != charge.DefaultMaxAmount || c.AuthorizationWindow != charge.DefaultAuthorizationWindow {
		t.Fatalf("defaults: %+v, want the deployed protocol %+v", c, p)
	}
}

func TestFromEnvRejectsBadValues(t *testing.T) {
	t.Parallel()
	base := map[string]string{"TABLE_NAME": "t", "ACQUIRER_URL": "http://a", "ACQUIRER_ID": "acq"}
	for name, value := range map[string]string{
		"TABLE_NAME": "", "ACQUIRER_URL": "", "RETENTION_DAYS": "0", "LEASE_MARGIN": "soon",
		"IN_TRANSIT_BOUND": "1s", "ACQUIRER_TIMEOUT": "-1s", "CACHE_SIZE": "x", "MAX_AMOUNT": "-5",
		deploy.EnvAuthWindow:        "7d",
		deploy.EnvSkipResponseCRC32: "yes", deploy.EnvAcquirerID: "https://acquirer.example",
	} {
		env := map[string]string{}
		for k, v := range base {
			env[k] = v
		}
		env[name] = value
		if _, err := FromEnv(envOf(env)); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%q: err = %v, want one naming %s", name, value, err, name)
		}
	}
}

func TestSkipResponseCRC32(t *testing.T) {
	t.Parallel()
	for value, want := range map[string]bool{"": false, "false": false, "true": true} {
		c, err := FromEnv(envOf(map[string]string{"TABLE_NAME": "t", "ACQUIRER_URL": "http://a", "ACQUIRER_ID": "acq", deploy.EnvSkipResponseCRC32: value}))
		if err != nil || c.SkipResponseCRC32 != want {
			t.Errorf("%s=%q: %v, %v; want %v", deploy.EnvSkipResponseCRC32, value, c.SkipResponseCRC32, err, want)
		}
	}
}

package main

import (
	"testing"

	"github.com/idempotent-payments/idempay/internal/deploy"
)

// TestAnotherAcquirer: ACQUIRER_URL points `make run` at an acquirer it
// does not start, which must name its own id; the sandbox's settings are
// refused without it.
func TestAnotherAcquirer(t *testing.T) {
	t.Parallel()
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	cfg, err := stackConfig(env(map[string]string{}))
	if err != nil || cfg.AcquirerURL != "" || cfg.AcquirerID != "" {
		t.Fatalf("the sandbox by default: %+v, %v", cfg, err)
	}
	cfg, err = stackConfig(env(map[string]string{deploy.EnvAcquirerURL: "https://test.acquirer.example", deploy.EnvAcquirerID: "acquirer-test", deploy.EnvAcquirerAPIKey: "k"}))
	if err != nil || cfg.AcquirerURL != "https://test.acquirer.example" || cfg.AcquirerID != "acquirer-test" || cfg.AcquirerAPIKey != "k" {
		t.Fatalf("another acquirer: %+v, %v", cfg, err)
	}
	for name, m := range map[string]map[string]string{
		"a URL without an id":         {deploy.EnvAcquirerURL: "https://test.acquirer.example"},
		"a URL with the sandbox's id": {deploy.EnvAcquirerURL: "https://test.acquirer.example", deploy.EnvAcquirerID: "sandbox"},
		"an id without a URL":         {deploy.EnvAcquirerID: "acquirer-test"},
		"a credential without a URL":  {deploy.EnvAcquirerAPIKey: "k"},
	} {
		if _, err := stackConfig(env(m)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

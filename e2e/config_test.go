package e2e

import (
	"slices"
	"strings"
	"testing"

	"github.com/informer-conformance/informer-conformance/cluster"
)

// setenv sets an environment variable for the test and has the run's
// configuration read again, now and when the test ends.
func setenv(t *testing.T, name, value string) {
	t.Helper()
	t.Setenv(name, value)
	rereadConfig()
	t.Cleanup(rereadConfig)
}

// allVarNames are the variables of the harness and of every registered
// backend.
func allVarNames() []string {
	vars := slices.Clone(HarnessVars)
	for _, n := range cluster.BackendNames() {
		b, _ := cluster.LookupBackend(n)
		vars = append(vars, b.Vars...)
	}
	return cluster.VarNames(vars...)
}

// TestSettingsWithoutBackend: a run whose backend is not registered has
// its harness's and declared settings (the testing front end runs
// scenarios on the caller's cluster), but a bad value among them is still
// refused.
func TestSettingsWithoutBackend(t *testing.T) {
	DeclareVars(cluster.Var{Name: "TEST_SETTINGS_COUNT", Kind: cluster.Count, Doc: "a test's"})
	t.Cleanup(func() { declaredMu.Lock(); declared = declared[:len(declared)-1]; declaredMu.Unlock() })
	setenv(t, EnvBackend, "no-such")
	setenv(t, "TEST_SETTINGS_COUNT", "3")
	if _, err := Config(); err == nil {
		t.Fatal("no error for an unregistered backend")
	}
	env, err := Settings()
	if err != nil || env.Count("TEST_SETTINGS_COUNT", 1) != 3 {
		t.Errorf("Settings without a backend: %v, %v", env, err)
	}
	setenv(t, "TEST_SETTINGS_COUNT", "three")
	if _, err := Settings(); err == nil || !strings.Contains(err.Error(), "TEST_SETTINGS_COUNT") || strings.Contains(err.Error(), "no such backend") {
		t.Errorf("a bad setting without a backend: %v", err)
	}
}

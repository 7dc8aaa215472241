package e2e

import (
	"context"
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

// TestHarnessIsAValue: a harness made with its own environment reads its
// configuration from it, keeps its hooks and its pools apart from the
// process's, and reads the environment once.
func TestHarnessIsAValue(t *testing.T) {
	reads := 0
	h := NewHarness(func(name string) string {
		reads++
		if name == EnvBackend {
			return "no-such-backend"
		}
		return ""
	})
	if _, err := h.Config(); err == nil || !strings.Contains(err.Error(), "no-such-backend") {
		t.Errorf("the harness's configuration: %v, want its own environment's backend refused", err)
	}
	n := reads
	if _, err := h.Config(); err == nil || reads != n {
		t.Errorf("the configuration read again (%d reads, then %d)", n, reads)
	}
	h.SetHooks(Hooks{InformersName: "the harness's own"})
	if h.Hooks().InformersName != "the harness's own" || theHarness.Hooks().InformersName == "the harness's own" {
		t.Errorf("hooks: the harness's %q, the process's %q", h.Hooks().InformersName, theHarness.Hooks().InformersName)
	}
	if err := h.CloseSharedClusters(context.Background()); err != nil {
		t.Errorf("closing a harness that started nothing: %v", err)
	}
}

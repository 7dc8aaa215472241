package e2e

// The run's configuration: every environment variable a run reads is
// declared once (the harness's here, each backend's in cluster.Backend.Vars)
// and read once per process into a RunConfig, which refuses a bad value
// before any spec starts and hands the values down.

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/report"
)

// HarnessVars are the harness's own environment variables.
var HarnessVars = []cluster.Var{
	{Name: EnvRun, Doc: "1: RunSpecs runs the specs of a test binary (a plain go test ./... skips them)"},
	{Name: EnvBackend, Doc: "the backend the specs run on: " + DefaultBackend + " (default), kind or existing"},
	{Name: EnvAllowEmpty, Kind: cluster.Flag, Doc: "true: a suite whose label filter, focus or skip selects no spec passes (make e2e: one filter over several suites, the run judged as a whole)"},
	{Name: EnvClusterPerSpec, Kind: cluster.Flag, Doc: "true: every spec gets a cluster of its own, client-side specs too"},
	{Name: EnvSpares, Kind: cluster.Flag, Doc: "true: each test process starts its next own cluster while the current spec runs"},
	{Name: report.EnvArtifacts, Kind: cluster.Paths, Doc: "where the reports and logs go (default: _artifacts in the suite's package)"},
}

var (
	declaredMu sync.Mutex
	declared   []cluster.Var
)

// DeclareVars adds the variables of a package built on the harness (a
// scenario's parameters: scenarios.Scenario.Vars) to those every run reads.
// Call it from an init function, before the configuration is read.
func DeclareVars(vars ...cluster.Var) {
	declaredMu.Lock()
	defer declaredMu.Unlock()
	declared = append(declared, vars...)
}

// runVars are the harness's variables and the declared ones.
func runVars() []cluster.Var {
	declaredMu.Lock()
	defer declaredMu.Unlock()
	return append(slices.Clone(HarnessVars), declared...)
}

// RunConfig is a run's configuration, read once per process from the
// environment (Config).
type RunConfig struct {
	// Backend is the selected backend (EnvBackend).
	Backend cluster.Backend
	// Env holds the values of the harness's and the backend's variables.
	Env cluster.Env
}

// Vars are the variables the run reads: the harness's, those declared
// (DeclareVars) and the backend's.
func (rc RunConfig) Vars() []cluster.Var { return append(runVars(), rc.Backend.Vars...) }

// ReadConfig reads a run's configuration with getenv (os.Getenv: the
// process's environment): the backend EnvBackend names among those
// registered, and the values of the harness's and its variables, every bad
// value said at once. On error the configuration holds what was read
// (the harness's variables, those of its values that are good).
func ReadConfig(getenv func(string) string) (RunConfig, error) {
	name := getenv(EnvBackend)
	if name == "" {
		name = DefaultBackend
	}
	d, ok := cluster.LookupBackend(name)
	if !ok {
		registered := strings.Join(cluster.BackendNames(), ", ")
		if registered == "" {
			registered = "none (import github.com/informer-conformance/informer-conformance/cluster/backends, or the backend's package, in the suite)"
		}
		// A backend registers itself when its package is imported;
		// suites/conformance imports local and existing, so kind's library
		// enters only the modules that import cluster/kind.
		env, err := cluster.ReadEnv(getenv, runVars()...)
		return RunConfig{Env: env}, errors.Join(&NoBackendError{fmt.Sprintf(`%s=%q: no such backend (a backend registers itself when its package is imported, e.g. import _ "github.com/informer-conformance/informer-conformance/cluster/%s" in the test package); registered: %s`, EnvBackend, name, name, registered)}, err)
	}
	rc := RunConfig{Backend: d}
	env, err := cluster.ReadEnv(getenv, rc.Vars()...)
	rc.Env = env
	if err != nil {
		return rc, fmt.Errorf("the run's environment (backend %s): %w", d.Name, err)
	}
	return rc, nil
}

// NoBackendError is ReadConfig's error for a backend name no package
// registered.
type NoBackendError struct{ msg string }

func (e *NoBackendError) Error() string { return e.msg }

// Settings are the values of this run's harness variables and declared
// ones (a scenario's parameters), read with the configuration (Config);
// the error is a bad value's. A run without a backend (scenarios on a
// cluster the caller gives, the testing front end) has them too.
func Settings() (cluster.Env, error) {
	rc, err := Config()
	if j, ok := err.(interface{ Unwrap() []error }); ok && rc.Backend.Name == "" {
		// Not the backend's absence: the bad values, if any.
		var rest []error
		for _, e := range j.Unwrap() {
			if _, nb := e.(*NoBackendError); !nb {
				rest = append(rest, e)
			}
		}
		err = errors.Join(rest...)
	}
	return rc.Env, err
}

// Config is this process's run configuration (its harness's), read from
// its environment the first time it is asked for.
func Config() (RunConfig, error) { return theHarness.Config() }

// rereadConfig makes the next Config read the environment again (tests
// that set variables).
func rereadConfig() { theHarness.reread() }

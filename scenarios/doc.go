// Package scenarios holds the scenarios of the catalogue (S1, S2, S5, S7,
// ...) as plain functions: one implementation, two front ends. The Ginkgo
// specs of suites/conformance call them, and integrations/e2eframework runs
// the same functions as e2e-framework features, with the same instruments
// (the probe, the fault proxy, the convergence checks), the same
// assertions, failure messages and report. They reach the test framework
// only through the spec's front end, which their context carries and
// their Env keeps (e2e.By(ctx, ...), e2e.DeferCleanup(ctx, ...),
// e2e.StartEnv, env.Note, env.Skip, ...), and assert with Gomega.
package scenarios

import "github.com/informer-conformance/informer-conformance/cluster"

// The assertion families the scenarios' negative controls (Ginkgo's and
// the e2e-framework features') match: one constant per family, used by the
// assertion's message and by its controls.
const (
	// ResumesWatch: S1, the first request after the restart resumes the watch.
	ResumesWatch = "resumes its watch"
	// NeedlessReinit: S1, a relist where the server allowed a resume.
	NeedlessReinit = "re-initialisation where resuming was possible"
	// StaleRecovered: S2, every informer recovered within the bound.
	StaleRecovered = "recovered from the stale connection within"
	// OldObjectEnded: S7, the handler heard of the old object's end.
	OldObjectEnded = "the handler learned that the old object ended"
)

// apiServers is a cluster with several kube-apiservers a scenario can stop,
// start and reach one by one.
type apiServers interface {
	cluster.Cluster
	cluster.APIServerController
}

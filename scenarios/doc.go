// Package scenarios holds the scenarios of the catalogue (S1, S2, S5, S7,
// ...) as plain functions: one implementation, two front ends. The Ginkgo
// specs of suites/conformance call them, and integrations/e2eframework runs
// the same functions as e2e-framework features, with the same instruments
// (the probe, the fault proxy, the convergence checks), the same
// assertions, failure messages and report. They reach the test framework
// only through e2e's front end (e2e.By, e2e.DeferCleanup,
// e2e.AddReportEntry, e2e.StartEnv, ...) and assert with Gomega.
package scenarios

import "github.com/informer-conformance/informer-conformance/cluster"

// apiServers is a cluster with several kube-apiservers a scenario can stop,
// start and reach one by one.
type apiServers interface {
	cluster.APIServerController
	cluster.Addressable
}

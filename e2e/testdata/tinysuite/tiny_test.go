// Package tinysuite is a Ginkgo suite run through e2e.RunSpecs, as a
// downstream's test package is, with a few specs that need no cluster:
// TestEmptySelectionFails (package e2e) and hack/downstream's test build
// it and run it with selections that select nothing and with ones that
// select its specs.
package tinysuite

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/ginkgo/v2"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/e2e"
)

// A backend that starts nothing: the specs never ask for a cluster, but
// RunSpecs reads the run's configuration, which names one. Named local,
// the default, which the scripts running a downstream's package set
// (hack/downstream/run.sh, whose test runs this suite too).
func init() {
	cluster.RegisterBackend(cluster.Backend{
		Name:     "local",
		Supports: func(cluster.Spec) string { return "" },
		Start: func(context.Context, cluster.Spec, cluster.Harness) (cluster.Cluster, error) {
			return nil, errors.New("the tiny suite starts no cluster")
		},
	})
}

func TestTiny(t *testing.T) {
	e2e.RunSpecs(t, "tiny")
}

var _ = Describe("the tiny suite", func() {
	It("passes in scenario one", Label("S1", "fast"), func() {})
	It("passes in scenario two", Label("S2", "fast"), func() {})
	It("passes in scenario three", Label("S3"), func() {})
	It("passes in scenario five", Label("S5", "slow"), func() {})
	It("skips", Label("S7", "capability:none"), func() { Skip("the backend lacks capability none") })
})

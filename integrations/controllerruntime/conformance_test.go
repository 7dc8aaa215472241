package controllerruntime_test

import (
	"testing"

	// The ginkgo CLI runs a package as a Ginkgo suite (parallel processes,
	// its flags passed on) only when one of its _test.go files imports
	// ginkgo (ginkgo/internal/test_suite.go filesHaveGinkgoSuite).
	_ "github.com/onsi/ginkgo/v2"

	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/integrations/controllerruntime"
	_ "github.com/informer-conformance/informer-conformance/suites/conformance"
)

// TestConformance runs the suite's specs with every informer on the
// default stack built by a controller-runtime cache and heard through
// controller-runtime's event handler: the example of e2e.Hooks.Informers.
// The specs that build their informer with client-go's typed factory
// themselves skip, saying why. INFORMER_CONFORMANCE=1 runs them (make
// controller-runtime sets it).
func TestConformance(t *testing.T) {
	e2e.SetHooks(e2e.Hooks{Informers: controllerruntime.Informers(), InformersName: controllerruntime.Name})
	e2e.RunSpecs(t, "conformance on controller-runtime's cache")
}

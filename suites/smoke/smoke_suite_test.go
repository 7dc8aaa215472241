// Package smoke holds the first specs against the local backend: the control
// plane is real and an informer built the way controllers build it works
// against it, across a restart. The scenario suites come next to it.
package smoke

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestSmoke(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "smoke")
}

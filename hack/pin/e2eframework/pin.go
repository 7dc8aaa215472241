//go:build pin

// Package pin holds, for go mod tidy, one import of each module whose
// version go.mod pins (a build tag keeps it out of every build).
package pin

import (
	_ "github.com/onsi/gomega"
	_ "k8s.io/apimachinery/pkg/runtime"
	_ "k8s.io/client-go/kubernetes"
	_ "sigs.k8s.io/e2e-framework/pkg/env"
)

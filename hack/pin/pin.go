//go:build pin

// Package pin holds, for go mod tidy, one import of each module whose
// version go.mod pins for this repository's own builds (a build tag keeps it
// out of every build).
package pin

import (
	_ "github.com/Masterminds/semver/v3"
	_ "github.com/gofrs/flock"
	_ "github.com/onsi/ginkgo/v2"
	_ "github.com/onsi/gomega"
	_ "go.etcd.io/etcd/client/v3"
	_ "go.uber.org/goleak"
	_ "go.uber.org/zap"
	_ "golang.org/x/mod/semver"
	_ "golang.org/x/sync/errgroup"
	_ "k8s.io/api/core/v1"
	_ "k8s.io/apimachinery/pkg/runtime"
	_ "k8s.io/client-go/kubernetes"
	_ "k8s.io/klog/v2"
	_ "sigs.k8s.io/kind/pkg/cluster"
	_ "sigs.k8s.io/yaml"
)

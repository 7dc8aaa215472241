package conformance

// This repository's own runs offer every backend (make e2e BACKEND=kind);
// the package itself registers local and existing only (suite.go).
import _ "github.com/informer-conformance/informer-conformance/cluster/kind"

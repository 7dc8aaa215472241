// Package backends registers every backend of the suite with package
// cluster (cluster.RegisterBackend), for the harness to select one by name
// ($INFORMER_CONFORMANCE_BACKEND): local (the default), kind and existing.
// A suite imports it for its side effect:
//
//	import _ "github.com/informer-conformance/informer-conformance/cluster/backends"
//
// A suite that offers fewer backends imports theirs alone
// (cluster/local, ...); a backend of a downstream module's own registers
// itself the same way, from its package's init function.
package backends

import (
	// The backends, each registering itself from an init function.
	_ "github.com/informer-conformance/informer-conformance/cluster/existing"
	_ "github.com/informer-conformance/informer-conformance/cluster/kind"
	_ "github.com/informer-conformance/informer-conformance/cluster/local"
)

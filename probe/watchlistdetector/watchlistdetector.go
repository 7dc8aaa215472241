// Package watchlistdetector switches client-go's watch-list consistency
// detector on in every process that links it (the suites, their library
// users, the probe's own tests), unless the environment already says
// otherwise.
//
// client-go reads KUBE_WATCHLIST_INCONSISTENCY_DETECTOR once, in the init
// of k8s.io/client-go/util/consistencydetector (data_consistency_detector.go
// from v0.34, watch_list_data_consistency_detector.go in v0.31-v0.33): a
// test's TestMain or a package init that depends on client-go is too late.
// This package imports nothing but the standard library and
// internal/processenv (which imports only the standard library), and its import path
// sorts before "k8s.io/...": the Go specification (Package initialization,
// Go 1.21 on) initialises, at each step, the first package in import-path
// order whose imports are initialised, so this init runs before client-go's
// (consistencydetector imports os too, and once os is initialised this
// package is always the earlier candidate). It must keep importing nothing
// outside the standard library. TestDetectorOn (package probe) checks that
// client-go saw the value.
package watchlistdetector

import (
	"os"

	"github.com/informer-conformance/informer-conformance/internal/processenv"
)

// Env is the variable client-go's consistency detector reads.
const Env = "KUBE_WATCHLIST_INCONSISTENCY_DETECTOR"

// atStart is the variable as the process started: set says whether it was.
var atStart, set = os.LookupEnv(Env)

func init() {
	if !set {
		// The first setter in the process: it cannot conflict.
		_ = processenv.Set(Env, "true", "package watchlistdetector (client-go's watch-list consistency detector on)")
	}
}

// AtStart is the variable's value when the process started, and whether it
// was set then (unset, this package set it to "true").
func AtStart() (value string, wasSet bool) { return atStart, set }

// Package timing names where a spec's time goes: the harness and the
// scenarios record phases (a cluster's start, a wait on the server) as
// Ginkgo report entries named Entry, each holding one Phase; the informer
// report sums them per spec and `runcheck report` per run (the slowest
// specs, the share spent starting clusters). Plain Go without
// dependencies, so readers of reports need not link the harness or
// client-go.
package timing

import (
	"encoding/json"
	"time"
)

// Entry is the name of the report entries that hold a Phase.
const Entry = "time spent"

// The phases the harness records for every spec (scenarios add their own,
// named after what they wait for, e.g. "server: graceful shutdown").
const (
	// ClusterStart is starting the spec's own cluster, or the first
	// start of a process's shared one (later specs wait nothing).
	ClusterStart = "cluster start"
	// ClusterClose is stopping the spec's own cluster and removing its files.
	ClusterClose = "cluster close"
	// SharedCheck is readying a cluster the spec shares with others: its
	// recovery and health check.
	SharedCheck = "shared cluster check"
	// NamespaceCleanup is removing the spec's own namespace, and what it
	// holds, from a cluster it shared.
	NamespaceCleanup = "namespace cleanup"
	// EnvSetup is what StartEnv does after the cluster is there: the fault
	// proxy, the namespace, clients.
	EnvSetup = "env setup"
	// ClientSync is waiting for an informer's first sync (e2e.StartProbe).
	ClientSync = "client: initial sync"
	// ClientConverge is waiting for an informer's store to equal a quorum
	// read of the server (e2e's EventuallyConverged).
	ClientConverge = "client: store converges"
	// ClientHandlers is waiting, once the store converged, for the
	// handler calls to add up to the server's objects.
	ClientHandlers = "client: handlers add up"
)

// ClusterFrom is the name of the report entry saying where a spec's own
// cluster came from (a string): "started" when the spec asked, "spare
// ready" or "spare still starting" when it was started ahead, while the
// spec before ran (cluster/local.Spares).
const ClusterFrom = "cluster from"

// Phase is one stretch of a spec's time.
type Phase struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
}

// Of is the phase name that took d.
func Of(name string, d time.Duration) Phase { return Phase{Name: name, Seconds: d.Seconds()} }

// Decode reads a Phase from a report entry's JSON; ok is false when it is
// not one.
func Decode(asJSON string) (p Phase, ok bool) {
	if err := json.Unmarshal([]byte(asJSON), &p); err != nil || p.Name == "" {
		return Phase{}, false
	}
	return p, true
}

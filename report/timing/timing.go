// Package timing names where a spec's time goes: the harness and the
// scenarios time phases (a cluster's start, a wait on the server) into the
// spec's report.Spec (Time: seconds per phase); the informer report
// shows them per spec and `runcheck report` per run (the slowest specs, the
// share spent starting clusters). Plain Go without dependencies, so readers
// of reports need not link the harness or client-go.
package timing

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
	// ClientSync is waiting for an informer's first sync (e2e.Env.StartProbe).
	ClientSync = "client: initial sync"
	// ClientConverge is waiting for an informer's store to equal a quorum
	// read of the server (e2e's EventuallyConverged).
	ClientConverge = "client: store converges"
	// ClientHandlers is waiting, once the store converged, for the
	// handler calls to add up to the server's objects.
	ClientHandlers = "client: handlers add up"
	// Observations is deriving the comparable observations from every
	// probe's record when the spec ends (probe.Observations): what the
	// observations cost a run.
	Observations = "report: observations"
)

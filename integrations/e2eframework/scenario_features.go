package e2eframework

import (
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/informer-conformance/informer-conformance/scenarios"
)

// The scenario features by name, for the callers that pick one: each is
// Feature of the scenario's value (package scenarios). All has them all,
// and a scenario added since these were written too.

// APIServerRestart is S1: kube-apiserver 0 of two stops (gracefully, then
// hard) and starts again on the same address; the informer must resume,
// converge, deliver every delete, get a 2xx within its bound and relist
// only where the server told it to. It needs a cluster of two
// kube-apiservers with the fast-graceful-shutdown profile
// (local.WithAPIServers(2), local.WithProfile("fast-graceful-shutdown")),
// and skips on others.
func APIServerRestart(opts ...Option) features.Feature { return Feature(scenarios.S1Restart, opts...) }

// Blackhole is S2: the informers' HTTP/2 connection goes silent (the fault
// proxy drops its bytes both ways); client-go's health check must notice
// and every informer recover on a new connection within the bound. With
// the short check (2 s + 2 s, or WithHTTP2HealthCheck's) in each sync
// mode, and, slow, with client-go's default check (30 s read-idle + 15 s
// ping) in streaming-list mode.
func Blackhole(opts ...Option) features.Feature { return Feature(scenarios.S2Blackhole, opts...) }

// WatchTimeouts is S3: kube-apiserver ends each watch at its timeoutSeconds,
// and a client-side deadline fires while a protobuf watch frame is half
// read; either way the informer must resume its watch from its last
// resourceVersion, never relist, and miss no change.
func WatchTimeouts(opts ...Option) features.Feature { return Feature(scenarios.S3Timeouts, opts...) }

// ErrorClasses is S4's error classes on a watch (LIST+WATCH mode): each
// error the server can answer a watch with (scenarios.ErrorClasses, the
// Ginkgo table's entries) must re-initialise the informer exactly when it
// calls for it.
func ErrorClasses(opts ...Option) features.Feature { return Feature(scenarios.S4ErrorClasses, opts...) }

// Throttling is S4's throttling past the REST client: 429s opening
// resuming watches (without Retry-After, and more than the REST client
// retries with it) and 429 ERROR events in them, in each sync mode; then a
// relist's streaming list throttled (streaming-list mode). The reflector
// must back off and resume from its resourceVersion, never relist nor
// fall back to a LIST.
func Throttling(opts ...Option) features.Feature { return Feature(scenarios.S4Throttling, opts...) }

// Compaction is S5: deletes each followed at once by a compaction
// (etcd#10681) must not survive in the store, and a compaction the watch
// cache notices must not touch an open watch (slow: it waits for the watch
// cache's 15 s compaction poll); first with the cluster's watch cache, as
// before, then the Ginkgo suite's other entries: the same without the
// watch cache (flag profile no-watch-cache), and the resume after a drain
// of kube-apiserver 0, by fail-over to apiserver 1 with etcd compacted
// meanwhile or by its restart, with and without the watch cache (two
// kube-apiservers with fast-graceful-shutdown, plus no-watch-cache for the
// ones without). A cluster has one profile: the entries of the others skip.
func Compaction(opts ...Option) features.Feature { return Feature(scenarios.S5Compaction, opts...) }

// EtcdRestore is S6: etcd is restored from a snapshot taken earlier, plain
// (resourceVersions go backwards: the informer resumes a silent watch and
// stays stale, an upstream limitation) or with its revisions bumped and
// marked compacted (the resume is answered 410; the informer relists,
// converges and observes the vanished pod's delete).
func EtcdRestore(opts ...Option) features.Feature { return Feature(scenarios.S6Restore, opts...) }

// RelistAfterRestore is S6 continued: after a plain restore, a relist's
// LIST at the informer's resourceVersion is answered too large and the
// reflector must fall back to a consistent list (seconds in
// streaming-list mode; a minute, slow, in LIST+WATCH mode: the REST
// client's 11 tries).
func RelistAfterRestore(opts ...Option) features.Feature { return Feature(scenarios.S6Relist, opts...) }

// SameNameRecreate is S7: a pod is deleted and recreated under the same
// name while the informer is cut off and etcd is compacted; the informer
// must converge and its handler hear that the old object ended.
func SameNameRecreate(opts ...Option) features.Feature { return Feature(scenarios.S7Recreate, opts...) }

// Resync is S8: a resync re-delivers every object from the indexer and
// sends no request to the apiserver.
func Resync(opts ...Option) features.Feature { return Feature(scenarios.S8Resync, opts...) }

// SyncTimeout is S9: with the apiserver unreachable, the informer's sync
// gives up at the caller's bound, backs off meanwhile, and syncs once the
// apiserver is reachable.
func SyncTimeout(opts ...Option) features.Feature { return Feature(scenarios.S9SyncTimeout, opts...) }

// FactoryShutdown is S10: shutting the informer factory down leaves no
// goroutine, sends nothing more and leaves the clientset working, and
// returns promptly when the connection died before it.
func FactoryShutdown(opts ...Option) features.Feature { return Feature(scenarios.S10Shutdown, opts...) }

// HAFailover is S11: the informer fails over from one of two
// kube-apiservers to the other, warm (the resume is accepted, no
// re-initialisation) or freshly restarted (410, one relist).
func HAFailover(opts ...Option) features.Feature { return Feature(scenarios.S11Failover, opts...) }

// RelistStorm is S12 (slow): after an apiserver restart every informer of
// a storm (scenarios.StormSize: S12_INFORMERS, S12_OBJECTS) converges, each
// re-initialising a bounded number of times.
func RelistStorm(opts ...Option) features.Feature { return Feature(scenarios.S12Storm, opts...) }

// Goaway is S13: across two kube-apiservers sending GOAWAY (flag profile
// goaway), informers move with their connections and resume their watches
// on the other apiserver: no failed request, no re-initialisation.
func Goaway(opts ...Option) features.Feature { return Feature(scenarios.S13Goaway, opts...) }

// MissingBookmark is S14 (streaming-list mode, client-go v0.36+): a
// streaming list whose initial-events-end bookmark does not come. The
// informer waits on the open stream, retries at once each time the server
// ends a stream without it, and falls back to a LIST only when the stream
// ends within a second with no event.
func MissingBookmark(opts ...Option) features.Feature {
	return Feature(scenarios.S14Bookmark, opts...)
}

// CertRotation is S15: the client CA rotated, the informer reconnects
// without a new client; and (long: client-go re-reads a CA file after 5
// minutes; client-go v0.36+) the serving and client CAs rotated.
func CertRotation(opts ...Option) features.Feature {
	return Feature(scenarios.S15Rotation, opts...)
}

// HandlerOrder is S16: the handler hears a burst of changes to several
// objects in the server's order, with the consumer not slowed, a slow
// handler, and a slow index function.
func HandlerOrder(opts ...Option) features.Feature {
	return Feature(scenarios.S16Order, opts...)
}

// RelistView is S17: every handler call of a relist after a 410 sees a
// store the server once had (flag profile no-watch-cache).
func RelistView(opts ...Option) features.Feature {
	return Feature(scenarios.S17View, opts...)
}

// SlowConsumer is S18: with a consumer slower than the events, the watch
// keeps being read, stays open, and nothing is lost or relisted.
func SlowConsumer(opts ...Option) features.Feature {
	return Feature(scenarios.S18Slow, opts...)
}

// Transform is S19: an informer's transform runs once on every object of
// the store and of every handler call (lists, watch events, resyncs,
// tombstones; flag profile no-watch-cache).
func Transform(opts ...Option) features.Feature {
	return Feature(scenarios.S19Transform, opts...)
}

// RequestsOnLostConnection is S20: when the informers' connection is lost,
// the clientset's GET in flight and a LIST issued meanwhile are retried on
// a new connection and succeed.
func RequestsOnLostConnection(opts ...Option) features.Feature {
	return Feature(scenarios.S20Requests, opts...)
}

// StreamCut is S21 (streaming-list mode): a streaming list cut inside its
// initial events resumes from a resourceVersion it synced to and misses
// nothing.
func StreamCut(opts ...Option) features.Feature {
	return Feature(scenarios.S21StreamCut, opts...)
}

// ResyncWithWrites is S22: among writes, every change reaches the handler
// as a change and resyncs re-deliver only what it heard.
func ResyncWithWrites(opts ...Option) features.Feature {
	return Feature(scenarios.S22ResyncWrites, opts...)
}

// ShutdownOutlivesWatches is S23: kube-apiserver 0 of two shuts down with a
// watch open through its GOAWAY, the drain ended by its shutdown timeout
// (flag profile short-shutdown-timeout) or by SIGKILL (the default flags:
// it skips on a cluster with a profile); the watch must be resumed on the
// other apiserver, no relist.
func ShutdownOutlivesWatches(opts ...Option) features.Feature {
	return Feature(scenarios.S23Shutdown, opts...)
}

// LaggingAPIServer is S24: a relist through a kube-apiserver whose etcd
// link lags never goes back in time. It needs two kube-apiservers with a
// fault proxy between each and etcd (local.WithEtcdLinks(),
// kind.WithEtcdLinks()).
func LaggingAPIServer(opts ...Option) features.Feature {
	return Feature(scenarios.S24Lagging, opts...)
}

// RollingUpgrade is S25: both kube-apiservers of two run the previous
// minor's kube-apiserver, then each in turn is stopped gracefully and
// started from the cluster's own version on the same address; the informer
// must resume on the other version at each step, converge, deliver every
// delete and relist only where the server told it to. It needs a cluster of
// two kube-apiservers with the fast-graceful-shutdown profile whose backend
// runs another version in place (local), and the version to upgrade from
// built (`go run ./hack/build-binaries -kube-version VERSION`); it skips,
// saying why, on others.
func RollingUpgrade(opts ...Option) features.Feature {
	return Feature(scenarios.S25Upgrade, opts...)
}

// CancelledCall is S26: a clientset call whose context ends while client-go
// waits (a 429's Retry-After, the client-side rate limiter) returns when
// the context ends, with an error. It needs no informer: one mode.
func CancelledCall(opts ...Option) features.Feature {
	return Feature(scenarios.S26Cancelled, opts...)
}

// ListWithoutWatch is S27: an informer allowed to list but not to watch
// (RBAC) syncs, reports each refused watch as Forbidden and backs off.
func ListWithoutWatch(opts ...Option) features.Feature {
	return Feature(scenarios.S27ListOnly, opts...)
}

// WaitForCacheSync is S28: the factory's WaitForCacheSync and
// cache.WaitForCacheSync return promptly once the informer synced.
func WaitForCacheSync(opts ...Option) features.Feature {
	return Feature(scenarios.S28SyncWait, opts...)
}

// RetryWatcher is S29: client-go's tools/watch RetryWatcher resumes a watch
// the server ended and reports a 410 or a 403 as an ERROR event, then
// stops (and stops when asked, twice); UntilWithSync, through the same
// faults, hands every new object to its condition once. One mode.
func RetryWatcher(opts ...Option) features.Feature {
	return Feature(scenarios.S29RetryWatcher, opts...)
}

// HandlersDuringResync is S30: handlers added and removed on a running
// informer while its resyncs fire and its objects are written; each call
// returns within its bound (a watchdog), added handlers hear every object
// and then every change, removed ones nothing after. Adding a handler does
// not involve the reflector: one mode. WithHandler wraps every handler S30
// puts on the informer.
func HandlersDuringResync(opts ...Option) features.Feature {
	return Feature(scenarios.S30HandlersDuringResync, opts...)
}

// ResourceVersions is S31: the informers' resource-version APIs
// (SharedIndexInformer's, its GetController's and its store's; a
// cache.NewInformerWithOptions controller's and its indexer's; a bare
// reflector's and its store's) report what the server said after the
// initial sync, writes, a relist and a BOOKMARK, never going backwards,
// in agreement.
func ResourceVersions(opts ...Option) features.Feature {
	return Feature(scenarios.S31ResourceVersions, opts...)
}

// InformerMetrics is S32: the metrics a controller exports through
// client-go's metrics hooks (the workqueue's provider, the rest client's
// tools/metrics) are emitted and move with an informer's and a worker's
// work; the spec skips where another registrant took the process-global
// hooks first.
func InformerMetrics(opts ...Option) features.Feature { return Feature(scenarios.S32Metrics, opts...) }

// ContentNegotiation is S33: an informer of each stack (the CBOR stack
// aside: its gates off) asks for its stack's encoding and gets it; an
// informer answered in the Table format reports it, or, where client-go
// cannot (a streaming list), stays unsynced; a plain GET asking for a Table
// gets its rows.
func ContentNegotiation(opts ...Option) features.Feature {
	return Feature(scenarios.S33ContentNegotiation, opts...)
}

// InitialSyncMemory is S34 (slow: 32 MiB of ConfigMaps per assessment): the
// heap an informer's initial sync needs over many large objects, and the
// heap it keeps, with and without a transform stripping them; a streaming
// list holds no copy of the list beside its objects, and, from client-go
// v0.34.3, strips them as they arrive.
func InitialSyncMemory(opts ...Option) features.Feature {
	return Feature(scenarios.S34SyncMemory, opts...)
}

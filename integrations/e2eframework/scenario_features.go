package e2eframework

import (
	"context"

	"github.com/onsi/gomega"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/e2e-framework/pkg/features"

	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/probe"
	"github.com/informer-conformance/informer-conformance/scenarios"
)

// The scenario features, one per Describe of the Ginkgo suite
// (suites/conformance/sNN_*.go), named after it. Each assessment is an
// entry of its tables on the typed stack, in the entry's sync modes, and
// calls the same scenario function with the same input; the Ginkgo
// suite's negative controls are not among them (build one with WithClient
// or WithHandler and ExpectFailure). What a scenario needs of the cluster
// (docs/scenarios.md) is checked when it starts: a cluster that lacks it
// skips the assessment, saying what is missing.

var (
	needsRestart    = e2e.CapabilityAPIServerRestart
	needsHA         = e2e.CapabilityHA
	needsCompaction = e2e.CapabilityEtcdCompaction
	needsSnapshot   = e2e.CapabilityEtcdSnapshot
	needsCerts      = e2e.CapabilityCertRotation
	needsUpgrade    = e2e.CapabilityAPIServerUpgrade
)

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
func Blackhole(opts ...Option) features.Feature {
	o := apply(opts)
	sc := scenario{id: "S2", name: "S2 stale HTTP/2 connection (network blackhole)"}
	short := scenarios.StaleConnection{ReadIdle: ptr.To(scenarios.ShortReadIdle), Ping: ptr.To(scenarios.ShortPingTimeout)}
	if o.readIdle != nil {
		short.ReadIdle, short.Ping = o.readIdle, o.ping
	}
	short.Bound = scenarios.StaleRecoveryBound(*short.ReadIdle, *short.Ping)
	if *short.ReadIdle == 0 { // the check off: the bound of the default short check
		short.Bound = scenarios.StaleRecoveryBound(scenarios.ShortReadIdle, scenarios.ShortPingTimeout)
	}
	b := o.perMode(o.builder(sc), sc.name, entry{}, func(ctx context.Context, s e2e.Setup) { scenarios.RecoversFromStaleConnection(ctx, s, short) })
	if o.readIdle == nil {
		defaults := scenarios.StaleConnection{Bound: scenarios.StaleRecoveryBound(scenarios.DefaultReadIdle, scenarios.DefaultPingTimeout)}
		b = o.perMode(b, sc.name, entry{name: "client-go's default health check (30 s read-idle + 15 s ping)", modes: streamingOnly, speed: Slow},
			func(ctx context.Context, s e2e.Setup) { scenarios.RecoversFromStaleConnection(ctx, s, defaults) })
	}
	return b.Feature()
}

// WatchTimeouts is S3: kube-apiserver ends each watch at its timeoutSeconds,
// and a client-side deadline fires while a protobuf watch frame is half
// read; either way the informer must resume its watch from its last
// resourceVersion, never relist, and miss no change.
func WatchTimeouts(opts ...Option) features.Feature {
	o := apply(opts)
	sc := scenario{id: "S3", name: "S3 watch timeouts"}
	b := o.perMode(o.builder(sc), sc.name, entry{name: "kube-apiserver ends each watch at its timeoutSeconds"}, func(ctx context.Context, s e2e.Setup) {
		scenarios.ResumesAfterServerTimeouts(ctx, s)
	})
	b = o.perMode(b, sc.name, entry{name: "a client-side deadline fires while a protobuf watch frame is half read"}, func(ctx context.Context, s e2e.Setup) {
		scenarios.ResumesAfterDeadlineMidFrame(ctx, s, scenarios.MidFrameInput{})
	})
	return b.Feature()
}

// ErrorClasses is S4's error classes on a watch (LIST+WATCH mode): each
// error the server can answer a watch with (scenarios.ErrorClasses, the
// Ginkgo table's entries) must re-initialise the informer exactly when it
// calls for it.
func ErrorClasses(opts ...Option) features.Feature {
	o := apply(opts)
	sc := scenario{id: "S4", name: "S4 error classes on a watch"}
	b := o.builder(sc)
	for _, ec := range scenarios.ErrorClasses {
		b = o.perMode(b, sc.name, entry{name: ec.Name, modes: listWatchOnly}, func(ctx context.Context, s e2e.Setup) {
			scenarios.ExpectReinitialisations(ctx, s, ec)
		})
	}
	return b.Feature()
}

// Throttling is S4's throttling past the REST client: 429s opening
// resuming watches (without Retry-After, and more than the REST client
// retries with it) and 429 ERROR events in them, in each sync mode; then a
// relist's streaming list throttled (streaming-list mode). The reflector
// must back off and resume from its resourceVersion, never relist nor
// fall back to a LIST.
func Throttling(opts ...Option) features.Feature {
	o := apply(opts)
	sc := scenario{id: "S4", name: "S4 throttling past the REST client"}
	b := o.builder(sc)
	for _, t := range []struct {
		name string
		t    scenarios.Throttle
	}{
		{"2 429s without Retry-After opening resuming watches", scenarios.ThrottledNoRetryAfter},
		{"11 429s with Retry-After: 1 opening a resuming watch", scenarios.ThrottledPastRetries},
		{"2 429 ERROR events in resuming watches", scenarios.ThrottledEvents},
	} {
		b = o.perMode(b, sc.name, entry{name: t.name}, func(ctx context.Context, s e2e.Setup) { scenarios.ExpectThrottledRecovery(ctx, s, t.t) })
	}
	for _, t := range []struct {
		name string
		t    scenarios.Throttle
	}{
		{"a relist's streaming list: 2 429s without Retry-After", scenarios.ThrottledNoRetryAfter.OnRelist()},
		{"a relist's streaming list: 11 429s with Retry-After: 1", scenarios.ThrottledPastRetries.OnRelist()},
	} {
		b = o.perMode(b, sc.name, entry{name: t.name, modes: streamingOnly}, func(ctx context.Context, s e2e.Setup) { scenarios.ExpectThrottledRecovery(ctx, s, t.t) })
	}
	return b.Feature()
}

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
func Compaction(opts ...Option) features.Feature {
	o := apply(opts)
	sc := scenario{id: "S5", name: "S5 etcd compaction", needs: []e2e.Capability{needsCompaction}, disruptive: true}
	b := o.perMode(o.builder(sc), sc.name, entry{name: "delete then compact"}, func(ctx context.Context, s e2e.Setup) { scenarios.DeleteThenCompact(ctx, s, true) })
	b = o.perMode(b, sc.name, entry{name: "compacted while watching", speed: Slow}, func(ctx context.Context, s e2e.Setup) { scenarios.CompactedWhileWatching(ctx, s) })
	b = o.perMode(b, sc.name, entry{name: "delete then compact without the watch cache"}, func(ctx context.Context, s e2e.Setup) { scenarios.DeleteThenCompact(ctx, s, false) })
	// The Ginkgo specs' assertions on what ResumeAfterDrain returns
	// (suites/conformance/s5_compaction.go), by outcome.
	relisted := func(r scenarios.DrainResult) {
		gomega.Expect(r.Numbers.Reinitialisations).To(gomega.Equal(map[probe.Cause]int{probe.CauseGone: 1}), "one re-initialisation, caused by 410 Gone on the resume (%v)", r.Numbers.ReinitDetails)
		gomega.Expect(r.Tombstones).To(gomega.Equal(len(r.Deleted)), "every delete arrived as a DeletedFinalStateUnknown tombstone (the relist never saw the final state)")
	}
	resumed := func(r scenarios.DrainResult) {
		gomega.Expect(r.Numbers.Reinitialisations).To(gomega.BeEmpty(), "no re-initialisation (%v)", r.Numbers.ReinitDetails)
		gomega.Expect(r.Tombstones).To(gomega.BeZero(), "the resumed watch delivered each delete with its final state")
	}
	for _, d := range []struct {
		e      entry
		in     scenarios.DrainInput
		expect func(scenarios.DrainResult)
	}{
		{entry{name: "fail-over without the watch cache"}, scenarios.DrainInput{WatchCache: false, Compact: true, FailOver: true}, relisted},
		{entry{name: "fail-over with the watch cache", speed: Slow}, scenarios.DrainInput{WatchCache: true, Compact: true, FailOver: true}, func(r scenarios.DrainResult) {
			resumed(r)
			e2e.AddReportEntry("S5 outcome", "compaction does not reach a watch served by the watch cache: the resume at a compacted resourceVersion was accepted")
		}},
		{entry{name: "restart without the watch cache"}, scenarios.DrainInput{WatchCache: false}, resumed},
		{entry{name: "restart with the watch cache"}, scenarios.DrainInput{WatchCache: true}, relisted},
	} {
		d.in.Wrap = o.handler
		b = o.perMode(b, sc.name, d.e, func(ctx context.Context, s e2e.Setup) { d.expect(scenarios.ResumeAfterDrain(ctx, s, d.in)) })
	}
	return b.Feature()
}

// EtcdRestore is S6: etcd is restored from a snapshot taken earlier, plain
// (resourceVersions go backwards: the informer resumes a silent watch and
// stays stale, an upstream limitation) or with its revisions bumped and
// marked compacted (the resume is answered 410; the informer relists,
// converges and observes the vanished pod's delete).
func EtcdRestore(opts ...Option) features.Feature {
	o := apply(opts)
	sc := scenario{id: "S6", name: "S6 etcd restored from an earlier snapshot", needs: []e2e.Capability{needsSnapshot, needsRestart}, disruptive: true}
	b := o.perMode(o.builder(sc), sc.name, entry{name: "plain restore"}, func(ctx context.Context, s e2e.Setup) {
		scenarios.EtcdRestored(ctx, s, scenarios.EtcdRestoreInput{Wrap: o.handler})
	})
	b = o.perMode(b, sc.name, entry{name: "bumped restore"}, func(ctx context.Context, s e2e.Setup) {
		scenarios.EtcdRestored(ctx, s, scenarios.EtcdRestoreInput{Bumped: true, Wrap: o.handler})
	})
	return b.Feature()
}

// RelistAfterRestore is S6 continued: after a plain restore, a relist's
// LIST at the informer's resourceVersion is answered too large and the
// reflector must fall back to a consistent list (seconds in
// streaming-list mode; a minute, slow, in LIST+WATCH mode: the REST
// client's 11 tries).
func RelistAfterRestore(opts ...Option) features.Feature {
	o := apply(opts)
	sc := scenario{id: "S6", name: "S6 etcd restored from an earlier snapshot, then a relist", needs: []e2e.Capability{needsSnapshot, needsRestart}, disruptive: true}
	body := func(ctx context.Context, s e2e.Setup) { scenarios.RelistAfterPlainRestore(ctx, s) }
	b := o.perMode(o.builder(sc), sc.name, entry{modes: streamingOnly}, body)
	b = o.perMode(b, sc.name, entry{modes: listWatchOnly, speed: Slow}, body)
	return b.Feature()
}

// SameNameRecreate is S7: a pod is deleted and recreated under the same
// name while the informer is cut off and etcd is compacted; the informer
// must converge and its handler hear that the old object ended.
func SameNameRecreate(opts ...Option) features.Feature { return Feature(scenarios.S7Recreate, opts...) }

// Resync is S8: a resync re-delivers every object from the indexer and
// sends no request to the apiserver.
func Resync(opts ...Option) features.Feature {
	o := apply(opts)
	sc := scenario{id: "S8", name: "S8 resync"}
	return o.perMode(o.builder(sc), sc.name, entry{}, func(ctx context.Context, s e2e.Setup) {
		scenarios.ResyncSendsNoRequests(ctx, s, o.probe())
	}).Feature()
}

// SyncTimeout is S9: with the apiserver unreachable, the informer's sync
// gives up at the caller's bound, backs off meanwhile, and syncs once the
// apiserver is reachable.
func SyncTimeout(opts ...Option) features.Feature {
	o := apply(opts)
	sc := scenario{id: "S9", name: "S9 sync with an unreachable apiserver"}
	return o.perMode(o.builder(sc), sc.name, entry{}, func(ctx context.Context, s e2e.Setup) {
		scenarios.SyncWithUnreachableAPIServer(ctx, s)
	}).Feature()
}

// FactoryShutdown is S10: shutting the informer factory down leaves no
// goroutine, sends nothing more and leaves the clientset working, and
// returns promptly when the connection died before it.
func FactoryShutdown(opts ...Option) features.Feature {
	o := apply(opts)
	sc := scenario{id: "S10", name: "S10 factory shutdown"}
	b := o.perMode(o.builder(sc), sc.name, entry{}, func(ctx context.Context, s e2e.Setup) {
		scenarios.ShutdownLeavesNothing(ctx, s, o.probe(), false)
	})
	b = o.perMode(b, sc.name, entry{name: "connection died before the shutdown"}, func(ctx context.Context, s e2e.Setup) {
		scenarios.ShutdownLeavesNothing(ctx, s, o.probe(), true)
	})
	return b.Feature()
}

// HAFailover is S11: the informer fails over from one of two
// kube-apiservers to the other, warm (the resume is accepted, no
// re-initialisation) or freshly restarted (410, one relist).
func HAFailover(opts ...Option) features.Feature {
	o := apply(opts)
	sc := scenario{id: "S11", name: "S11 HA apiservers: failover", needs: []e2e.Capability{needsHA, needsRestart}, disruptive: true}
	b := o.perMode(o.builder(sc), sc.name, entry{name: "to a warm apiserver"}, func(ctx context.Context, s e2e.Setup) {
		scenarios.HAFailover(ctx, s, scenarios.FailoverInput{})
	})
	b = o.perMode(b, sc.name, entry{name: "to a freshly restarted apiserver"}, func(ctx context.Context, s e2e.Setup) {
		scenarios.HAFailover(ctx, s, scenarios.FailoverInput{FreshTarget: true})
	})
	return b.Feature()
}

// RelistStorm is S12 (slow): after an apiserver restart every informer of
// a storm (scenarios.StormSize: S12_INFORMERS, S12_OBJECTS) converges, each
// re-initialising a bounded number of times.
func RelistStorm(opts ...Option) features.Feature {
	o := apply(opts)
	sc := scenario{id: "S12", name: "S12 relist storm cost", needs: []e2e.Capability{needsRestart}, disruptive: true, slow: true}
	return o.perMode(o.builder(sc), sc.name, entry{speed: Slow}, func(ctx context.Context, s e2e.Setup) {
		scenarios.RelistStorm(ctx, s, scenarios.StormSize(ctx))
	}).Feature()
}

// Goaway is S13: across two kube-apiservers sending GOAWAY (flag profile
// goaway), informers move with their connections and resume their watches
// on the other apiserver: no failed request, no re-initialisation.
func Goaway(opts ...Option) features.Feature {
	o := apply(opts)
	sc := scenario{id: "S13", name: "S13 GOAWAY across HA kube-apiservers", needs: []e2e.Capability{needsHA}}
	return o.perMode(o.builder(sc), sc.name, entry{}, func(ctx context.Context, s e2e.Setup) {
		scenarios.GoawayRebalancing(ctx, s)
	}).Feature()
}

// MissingBookmark is S14 (streaming-list mode, client-go v0.36+): a
// streaming list whose initial-events-end bookmark does not come. The
// informer waits on the open stream, retries at once each time the server
// ends a stream without it, and falls back to a LIST only when the stream
// ends within a second with no event.
func MissingBookmark(opts ...Option) features.Feature {
	o := apply(opts)
	sc := scenario{id: "S14", name: "S14 streaming list without its end bookmark"}
	b := o.builder(sc)
	for _, e := range []struct {
		name string
		body func(ctx context.Context, s e2e.Setup)
	}{
		{"waits on the open stream", scenarios.WaitsForTheBookmark},
		{"retries when the server ends the stream", scenarios.RetriesWhenTheServerEndsTheStream},
		{"falls back to a LIST only on a very short stream", scenarios.FallsBackOnAVeryShortStream},
	} {
		b = o.perMode(b, sc.name, entry{name: e.name, modes: streamingOnly, clientGo: ">= 0.36.0"}, e.body)
	}
	return b.Feature()
}

// CertRotation is S15: the client CA rotated, the informer reconnects
// without a new client; and (long: client-go re-reads a CA file after 5
// minutes; client-go v0.36+) the serving and client CAs rotated.
func CertRotation(opts ...Option) features.Feature {
	o := apply(opts)
	sc := scenario{id: "S15", name: "S15 certificate rotation", needs: []e2e.Capability{needsCerts}, disruptive: true}
	b := o.perMode(o.builder(sc), sc.name, entry{name: "client CA rotated"}, func(ctx context.Context, s e2e.Setup) {
		scenarios.ClientCARotation(ctx, s)
	})
	b = o.perMode(b, sc.name, entry{name: "serving and client CA rotated", speed: Long, clientGo: ">= 0.36.0"}, func(ctx context.Context, s e2e.Setup) {
		scenarios.ServingCARotation(ctx, s)
	})
	return b.Feature()
}

// HandlerOrder is S16: the handler hears a burst of changes to several
// objects in the server's order, with the consumer not slowed, a slow
// handler, and a slow index function.
func HandlerOrder(opts ...Option) features.Feature {
	o := apply(opts)
	sc := scenario{id: "S16", name: "S16 handler order across objects"}
	b := o.builder(sc)
	for _, slow := range []scenarios.Slowness{scenarios.NotSlowed, scenarios.SlowHandler, scenarios.SlowIndex} {
		b = o.perMode(b, sc.name, entry{name: slow.Name}, func(ctx context.Context, s e2e.Setup) {
			scenarios.HandlerOrder(ctx, s, o.probe(), slow)
		})
	}
	return b.Feature()
}

// RelistView is S17: every handler call of a relist after a 410 sees a
// store the server once had (flag profile no-watch-cache).
func RelistView(opts ...Option) features.Feature {
	o := apply(opts)
	sc := scenario{id: "S17", name: "S17 what a handler sees of the store during a relist", needs: []e2e.Capability{needsCompaction}, disruptive: true}
	return o.perMode(o.builder(sc), sc.name, entry{}, func(ctx context.Context, s e2e.Setup) {
		scenarios.RelistView(ctx, s, o.probe())
	}).Feature()
}

// SlowConsumer is S18: with a consumer slower than the events, the watch
// keeps being read, stays open, and nothing is lost or relisted.
func SlowConsumer(opts ...Option) features.Feature {
	o := apply(opts)
	sc := scenario{id: "S18", name: "S18 a consumer slower than the events"}
	return o.perMode(o.builder(sc), sc.name, entry{}, func(ctx context.Context, s e2e.Setup) {
		scenarios.SlowConsumer(ctx, s, o.probe())
	}).Feature()
}

// Transform is S19: an informer's transform runs once on every object of
// the store and of every handler call (lists, watch events, resyncs,
// tombstones; flag profile no-watch-cache).
func Transform(opts ...Option) features.Feature {
	o := apply(opts)
	sc := scenario{id: "S19", name: "S19 an informer with a transform", needs: []e2e.Capability{needsCompaction}, disruptive: true}
	return o.perMode(o.builder(sc), sc.name, entry{}, func(ctx context.Context, s e2e.Setup) {
		scenarios.Transformed(ctx, s, o.probe())
	}).Feature()
}

// RequestsOnLostConnection is S20: when the informers' connection is lost,
// the clientset's GET in flight and a LIST issued meanwhile are retried on
// a new connection and succeed.
func RequestsOnLostConnection(opts ...Option) features.Feature {
	o := apply(opts)
	sc := scenario{id: "S20", name: "S20 the clientset's own requests when the informers' connection is lost"}
	return o.perMode(o.builder(sc), sc.name, entry{}, func(ctx context.Context, s e2e.Setup) {
		scenarios.RequestsOnLostConnection(ctx, s, o.probe(), scenarios.DefaultRetries)
	}).Feature()
}

// StreamCut is S21 (streaming-list mode): a streaming list cut inside its
// initial events resumes from a resourceVersion it synced to and misses
// nothing.
func StreamCut(opts ...Option) features.Feature {
	o := apply(opts)
	sc := scenario{id: "S21", name: "S21 a streaming list cut inside its initial events"}
	return o.perMode(o.builder(sc), sc.name, entry{modes: streamingOnly}, func(ctx context.Context, s e2e.Setup) {
		scenarios.StreamCutInsideInitialEvents(ctx, s, o.probe())
	}).Feature()
}

// ResyncWithWrites is S22: among writes, every change reaches the handler
// as a change and resyncs re-deliver only what it heard.
func ResyncWithWrites(opts ...Option) features.Feature {
	o := apply(opts)
	sc := scenario{id: "S22", name: "S22 resyncs among writes"}
	b := o.perMode(o.builder(sc), sc.name, entry{}, func(ctx context.Context, s e2e.Setup) {
		scenarios.ResyncWithWrites(ctx, s, o.probe())
	})
	return o.perMode(b, sc.name, entry{name: "three more handlers (resync 1 s, 3 s, none)"}, func(ctx context.Context, s e2e.Setup) {
		scenarios.ResyncWithWritesHandlers(ctx, s, o.probe(), scenarios.S22MixedHandlers)
	}).Feature()
}

// ShutdownOutlivesWatches is S23: kube-apiserver 0 of two shuts down with a
// watch open through its GOAWAY, the drain ended by its shutdown timeout
// (flag profile short-shutdown-timeout) or by SIGKILL (the default flags:
// it skips on a cluster with a profile); the watch must be resumed on the
// other apiserver, no relist.
func ShutdownOutlivesWatches(opts ...Option) features.Feature {
	o := apply(opts)
	sc := scenario{id: "S23", name: "S23 kube-apiserver shutdown outliving its watches", needs: []e2e.Capability{needsHA, needsRestart}, disruptive: true}
	b := o.builder(sc)
	for _, end := range []scenarios.ShutdownEnd{scenarios.ShutdownTimesOut, scenarios.ShutdownKilled} {
		e := entry{name: "drain ended by " + string(end)}
		if end == scenarios.ShutdownKilled {
			// Its cluster.Spec names no profile: the testing front end
			// would run it on any (fast-graceful-shutdown ends the
			// watches the drain must leave open).
			e.defaultFlags = "--shutdown-watch-termination-grace-period 0: the drain leaves the watches open until SIGKILL"
		}
		b = o.perMode(b, sc.name, e, func(ctx context.Context, s e2e.Setup) {
			scenarios.ShutdownOutlivesWatches(ctx, s, scenarios.ShutdownInput{End: end})
		})
	}
	return b.Feature()
}

// LaggingAPIServer is S24: a relist through a kube-apiserver whose etcd
// link lags never goes back in time. It needs two kube-apiservers with a
// fault proxy between each and etcd (local.WithEtcdLinks(),
// kind.WithEtcdLinks()).
func LaggingAPIServer(opts ...Option) features.Feature {
	o := apply(opts)
	sc := scenario{id: "S24", name: "S24 a relist through a lagging kube-apiserver", needs: []e2e.Capability{needsHA}, disruptive: true}
	return o.perMode(o.builder(sc), sc.name, entry{}, func(ctx context.Context, s e2e.Setup) {
		scenarios.LaggingAPIServer(ctx, s, nil)
	}).Feature()
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
	o := apply(opts)
	sc := scenario{id: "S25", name: "S25 rolling control-plane upgrade", needs: []e2e.Capability{needsUpgrade}, disruptive: true}
	return o.perMode(o.builder(sc), sc.name, entry{}, func(ctx context.Context, s e2e.Setup) {
		scenarios.RollingUpgrade(ctx, s, scenarios.UpgradeInput{})
	}).Feature()
}

// CancelledCall is S26: a clientset call whose context ends while client-go
// waits (a 429's Retry-After, the client-side rate limiter) returns when
// the context ends, with an error. It needs no informer: one mode.
func CancelledCall(opts ...Option) features.Feature {
	o := apply(opts)
	sc := scenario{id: "S26", name: "S26 a call whose context ends while client-go waits"}
	b := o.builder(sc)
	for _, w := range []scenarios.S26Wait{scenarios.WaitRetryAfter, scenarios.WaitRateLimiter} {
		for _, end := range []scenarios.S26End{scenarios.EndCancel, scenarios.EndDeadline} {
			b = o.perMode(b, sc.name, entry{name: string(w) + ", " + string(end), modes: listWatchOnly}, func(ctx context.Context, s e2e.Setup) {
				scenarios.CancelledCall(ctx, s, w, end)
			})
		}
	}
	return b.Feature()
}

// ListWithoutWatch is S27: an informer allowed to list but not to watch
// (RBAC) syncs, reports each refused watch as Forbidden and backs off.
func ListWithoutWatch(opts ...Option) features.Feature {
	o := apply(opts)
	sc := scenario{id: "S27", name: "S27 an informer allowed to list but not to watch"}
	return o.perMode(o.builder(sc), sc.name, entry{}, func(ctx context.Context, s e2e.Setup) {
		scenarios.ListWithoutWatch(ctx, s, o.probe())
	}).Feature()
}

// WaitForCacheSync is S28: the factory's WaitForCacheSync and
// cache.WaitForCacheSync return promptly once the informer synced.
func WaitForCacheSync(opts ...Option) features.Feature {
	o := apply(opts)
	sc := scenario{id: "S28", name: "S28 waiting for the cache sync"}
	return o.perMode(o.builder(sc), sc.name, entry{}, func(ctx context.Context, s e2e.Setup) {
		scenarios.WaitForCacheSync(ctx, s, o.probe(), nil)
	}).Feature()
}

// RetryWatcher is S29: client-go's tools/watch RetryWatcher resumes a watch
// the server ended and reports a 410 or a 403 as an ERROR event, then
// stops (and stops when asked, twice); UntilWithSync, through the same
// faults, hands every new object to its condition once. One mode.
func RetryWatcher(opts ...Option) features.Feature {
	o := apply(opts)
	sc := scenario{id: "S29", name: "S29 a RetryWatcher through the informers' faults"}
	b := o.builder(sc)
	for _, f := range []scenarios.S29Fault{scenarios.WatchEndedCleanly, scenarios.WatchExpired, scenarios.WatchRefused} {
		b = o.perMode(b, sc.name, entry{name: string(f), modes: listWatchOnly}, func(ctx context.Context, s e2e.Setup) {
			scenarios.RetryWatcher(ctx, s, f)
		})
		b = o.perMode(b, sc.name, entry{name: "UntilWithSync: " + string(f), modes: listWatchOnly}, func(ctx context.Context, s e2e.Setup) {
			scenarios.UntilWithSync(ctx, s, f)
		})
	}
	return b.Feature()
}

// HandlersDuringResync is S30: handlers added and removed on a running
// informer while its resyncs fire and its objects are written; each call
// returns within its bound (a watchdog), added handlers hear every object
// and then every change, removed ones nothing after. Adding a handler does
// not involve the reflector: one mode. WithHandler wraps every handler S30
// puts on the informer.
func HandlersDuringResync(opts ...Option) features.Feature {
	o := apply(opts)
	sc := scenario{id: "S30", name: "S30 handlers added and removed while resyncs fire"}
	var c scenarios.S30Controller
	if o.handler != nil {
		c.Wrap = func(h cache.ResourceEventHandler, _ bool, _ int) cache.ResourceEventHandler { return o.handler(h) }
	}
	return o.perMode(o.builder(sc), sc.name, entry{modes: listWatchOnly}, func(ctx context.Context, s e2e.Setup) {
		scenarios.HandlersDuringResync(ctx, s, o.probe(), c)
	}).Feature()
}

// ResourceVersions is S31: the informers' resource-version APIs
// (SharedIndexInformer's, its GetController's and its store's; a
// cache.NewInformerWithOptions controller's and its indexer's; a bare
// reflector's and its store's) report what the server said after the
// initial sync, writes, a relist and a BOOKMARK, never going backwards,
// in agreement.
func ResourceVersions(opts ...Option) features.Feature {
	o := apply(opts)
	sc := scenario{id: "S31", name: "S31 the informers' resource-version APIs"}
	return o.perMode(o.builder(sc), sc.name, entry{}, func(ctx context.Context, s e2e.Setup) {
		scenarios.ResourceVersionAPIs(ctx, s, nil)
	}).Feature()
}

// InformerMetrics is S32: the metrics a controller exports through
// client-go's metrics hooks (the workqueue's provider, the rest client's
// tools/metrics) are emitted and move with an informer's and a worker's
// work; the spec skips where another registrant took the process-global
// hooks first.
func InformerMetrics(opts ...Option) features.Feature {
	o := apply(opts)
	sc := scenario{id: "S32", name: "S32 informer metrics through client-go's metrics provider hooks"}
	return o.perMode(o.builder(sc), sc.name, entry{}, func(ctx context.Context, s e2e.Setup) {
		scenarios.InformerMetrics(ctx, s, o.probe(), scenarios.S32Breaks{})
	}).Feature()
}

// ContentNegotiation is S33: an informer of each stack (the CBOR stack
// aside: its gates off) asks for its stack's encoding and gets it; an
// informer answered in the Table format reports it, or, where client-go
// cannot (a streaming list), stays unsynced; a plain GET asking for a Table
// gets its rows.
func ContentNegotiation(opts ...Option) features.Feature {
	o := apply(opts)
	sc := scenario{id: "S33", name: "S33 content negotiation"}
	b := o.perMode(o.builder(sc), sc.name, entry{name: "each informer stack asks for its encoding and gets it"}, func(ctx context.Context, s e2e.Setup) {
		scenarios.StackEncodings(ctx, s)
	})
	for _, c := range scenarios.TableClients {
		b = o.perMode(b, sc.name, entry{name: "a list answered as a Table, " + string(c)}, func(ctx context.Context, s e2e.Setup) {
			scenarios.TableAnswers(ctx, s, c, nil)
		})
	}
	return b.Feature()
}

// InitialSyncMemory is S34 (slow: 32 MiB of ConfigMaps per assessment): the
// heap an informer's initial sync needs over many large objects, and the
// heap it keeps, with and without a transform stripping them; a streaming
// list holds no copy of the list beside its objects, and, from client-go
// v0.34.3, strips them as they arrive.
func InitialSyncMemory(opts ...Option) features.Feature {
	o := apply(opts)
	sc := scenario{id: "S34", name: "S34 memory of the initial sync", slow: true}
	return o.perMode(o.builder(sc), sc.name, entry{speed: Slow}, func(ctx context.Context, s e2e.Setup) {
		scenarios.InitialSyncMemory(ctx, s, o.probe(), scenarios.StripData)
	}).Feature()
}

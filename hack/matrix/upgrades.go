package main

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/mod/semver"
)

// What each upgrade step of a verdict run changes: the default-gate
// columns paired as a downstream upgrades (upgradeSteps) and compared as
// `matrix compare` compares two runs: outcomes, re-initialisations and
// observations (every change, also those that fail no spec), each
// observation change looked up in knownChanges.

// knownChange ties a change of an observation between two client-go
// versions to the upstream change that made it.
type knownChange struct {
	// Contains is a substring of the change's sentence (its observation's
	// key and values).
	Contains string
	// Pattern, when set, must match the sentence too (for a change whose
	// words are apart: "GET streaming list ... appeared").
	Pattern *regexp.Regexp
	// Server, for a change between two servers (knownServerChanges), is
	// the component whose versions Applies takes: "kube-apiserver" or
	// "etcd"; empty: client-go's.
	Server string
	// Applies says whether the entry explains the change from one version
	// to the other.
	Applies func(from, to string) bool
	// Kind is "documented change" or "regression".
	Kind     string
	Upstream string
}

// knownChanges are the observation changes tied to their upstream change.
var knownChanges = []knownChange{
	// Seen on every typed informer (S1 to S34) between v0.31 and v0.32.
	{
		Contains: `first request's Accept changed from "JSON, */*" to "protobuf, JSON"`,
		Applies:  addedIn(typedProtobufFrom),
		Kind:     "documented change",
		Upstream: typedProtobuf,
	},
	{
		Contains: `Content-Type of 2xx answers changed from "JSON" to "protobuf`,
		Applies:  addedIn(typedProtobufFrom),
		Kind:     "documented change",
		Upstream: typedProtobuf,
	},
	{
		Contains: `transform calls per object (the store's and the handler calls') changed from "1" to "1, 2"`,
		Applies: func(from, to string) bool {
			return olderThan(from, transformedTwiceFrom) && !olderThan(to, transformedTwiceFrom)
		},
		Kind:     "documented change",
		Upstream: "kubernetes PR #131799 (a streaming list's objects kept in a transforming temporary store, then transformed again by the queue's Replace: tools/cache/reflector.go watchList), in effect from v0.34.3, where TransformingStore embeds ReflectorStore, which the informers' queues implement (reasoning in kubernetes PR #133263)",
	},
	// An informer whose spec leaves the sync mode to client-go's default
	// (S10, S28, S32, ...) syncs with a streaming list from v0.35: its LIST
	// disappears, a streaming list appears.
	{
		Pattern:  regexp.MustCompile(`: GET list /\S+: .* disappeared \(BASE: `),
		Applies:  addedIn(watchListClientOnFrom),
		Kind:     "documented change",
		Upstream: watchListClientOn,
	},
	{
		Pattern:  regexp.MustCompile(`: GET streaming list /\S+: .* appeared: `),
		Applies:  addedIn(watchListClientOnFrom),
		Kind:     "documented change",
		Upstream: watchListClientOn,
	},
	{
		// S26: a call cancelled while the client-side rate limiter waits.
		Pattern:  regexp.MustCompile(`error changed from "client rate limiter Wait returned an error: context (canceled|deadline exceeded)" to "context (canceled|deadline exceeded)"`),
		Applies:  addedIn("v0.37.0"),
		Kind:     "documented change",
		Upstream: "kubernetes PR #137694 (client-go: return context error directly instead of wrapping as rate limiter error): rest/request.go tryThrottleWithInfo returns the context's error as it is; the text loses its \"client rate limiter Wait returned an error: \" prefix, errors.Is(err, context.Canceled) holds before and after; in v0.37.0",
	},
	{
		// S28's observation of the factory's wait.
		Contains: `the factory's WaitForCacheSync returns changed from "polled" to "at once"`,
		Applies:  addedIn(factoryWaitsAtOnceFrom),
		Kind:     "documented change",
		Upstream: "client-go v0.36.0: the generated informer factory's WaitForCacheSync calls WaitForCacheSyncWithContext, which waits on each informer's HasSyncedChecker with cache.WaitFor, without polling (informers/factory.go; before: cache.WaitForCacheSync, which looks every 100 ms, tools/cache/shared_informer.go syncedPollPeriod)",
	},
	// S32: the metrics hooks a release adds (an observation per hook:
	// "no such hook" before it).
	{
		Contains: `client-go metrics hook tools/metrics.ExecPluginPolicyCalls changed from "no such hook"`,
		Applies:  addedIn("v0.35.0"),
		Kind:     "documented change",
		Upstream: "kubernetes PR #134870 (client-go credential plugin allowlist): tools/metrics PolicyCallsMetric, RegisterOpts.ExecPluginPolicyCalls, counted by plugin/pkg/client/auth/exec/metrics.go; in v0.35.0 (metrics.Register of v0.35 and v0.36 assigns ExecPluginCalls in its place, fixed in v0.37)",
	},
	{
		Contains: `client-go metrics hook tools/metrics.TransportCAReloads changed from "no such hook"`,
		Applies:  addedIn("v0.36.0"),
		Kind:     "documented change",
		Upstream: "client-go v0.36.0: tools/metrics TransportCAReloadsMetric, counted by transport/ca_rotation.go when ClientsAllowCARotation reloads a CA file",
	},
	{
		Contains: `client-go metrics hook tools/metrics.TransportCertRotationGCCalls changed from "no such hook"`,
		Applies:  addedIn("v0.36.0"),
		Kind:     "documented change",
		Upstream: tlsCacheGC,
	},
	{
		Contains: `client-go metrics hook tools/metrics.TransportCacheGCCalls changed from "no such hook"`,
		Applies:  addedIn("v0.36.0"),
		Kind:     "documented change",
		Upstream: tlsCacheGC,
	},
	{
		Contains: `client-go metrics hook tools/cache.SetInformerMetricsProvider changed from "no such hook"`,
		Applies:  addedIn("v0.36.0"),
		Kind:     "documented change",
		Upstream: "kubernetes PRs #135782 (RealFIFO queue depth and processing latency by InformerNameAndResource) and #137419 (the store's resourceVersion): tools/cache SetInformerMetricsProvider (fifo_metrics.go; informer_metrics.go from v0.37, PR #139435); in v0.36.0",
	},
	{
		Contains: `client-go metrics hook tools/metrics.RegisterOpts.RegisterFn changed from "no such hook"`,
		Applies:  addedIn("v0.37.0"),
		Kind:     "documented change",
		Upstream: "kubernetes PR #138914 (Defer client-go metrics registration to runtime entry point via constructors): RegisterOpts.RegisterFn, called once by metrics.EnsureRegistered from rest.RESTClientFor, HTTPClientFor and transport.New; in v0.37.0",
	},
	{
		// S34's streaming-list spec: the same change, seen as memory. The
		// LIST+WATCH spec's peak with the transform does not move.
		Contains: "during the sync, with a transform stripping the data moved from",
		Applies: func(from, to string) bool {
			return olderThan(from, transformedTwiceFrom) && !olderThan(to, transformedTwiceFrom)
		},
		Kind:     "documented change",
		Upstream: "kubernetes PR #131799 (for client-go#1415, memory: the reflector's temporary store runs the informer's transform on a streaming list's objects as they arrive, tools/cache/reflector.go watchList), in effect from v0.34.3 (TransformingStore embeds ReflectorStore): a streaming list's peak heap with a stripping transform drops from every object whole to the stripped objects",
	},
}

// tlsCacheGC is the upstream change that added two transport metrics.
const tlsCacheGC = "kubernetes PR #136355 (Add GC to client-go TLS cache): tools/metrics TransportCertRotationGCCalls and TransportCacheGCCalls, counted by transport/cache.go's clean-ups, and TransportCreateCalls' \"miss-gc\"; in v0.36.0"

// addedIn is a knownChange's Applies for a change that came with release
// v: the step goes from before it to it or later.
func addedIn(v string) func(from, to string) bool {
	return func(from, to string) bool { return olderThan(from, v) && !olderThan(to, v) }
}

// typedProtobufFrom is the first client-go minor whose generated typed
// clients ask for protobuf when the rest.Config names no content type.
const typedProtobufFrom = "v0.32.0"

// typedProtobuf is that change upstream.
const typedProtobuf = "kubernetes PR #125314 (Use protobuf for core clients): the generated typed clients of built-in types ask for \"application/vnd.kubernetes.protobuf,application/json\" when the rest.Config sets no ContentType (gentype/type.go NewClient's prefersProtobuf, rest/request.go UseProtobufAsDefault); in v0.32.0"

// watchListClientOnFrom is the first client-go minor whose WatchListClient
// gate is on by default: informers sync with a streaming list.
const watchListClientOnFrom = "v0.35.0"

// watchListClientOn is that change upstream.
const watchListClientOn = "kubernetes PR #134180 (Promote/Enable WatchListClient feature for release 1.35): the WatchListClient gate on by default (features/known_features.go), so the reflector's initial sync is a watch with sendInitialEvents=true (tools/cache/reflector.go watchList) instead of a LIST; in v0.35.0"

// factoryWaitsAtOnceFrom is the first client-go minor whose informer
// factory waits for the sync without polling (S28's observation).
const factoryWaitsAtOnceFrom = "v0.36.0"

// transformedTwiceFrom is the first client-go tag that transforms a
// streaming list's objects twice (matrix bisect on S19's observation; S19
// expects it from scenarios.TransformedTwiceFrom).
const transformedTwiceFrom = "v0.34.3"

// explainChange is the known changes that explain a sentence of the step
// from one version to the other.
func explainChange(sentence, from, to string) []knownChange {
	var out []knownChange
	for _, k := range knownChanges {
		if strings.Contains(sentence, k.Contains) && (k.Pattern == nil || k.Pattern.MatchString(sentence)) && k.Applies(from, to) {
			out = append(out, k)
		}
	}
	return out
}

// upgradeStep is two default-gate columns an upgrade goes between.
type upgradeStep struct {
	from, to column
	// what says which step it is ("patches of v0.36", "v0.36 to v0.37",
	// "to the next minor's pre-release").
	what string
}

// upgradeSteps pairs the default-gate columns that ran: a minor's first
// patch to its newest (what its patches changed), a minor's newest to the
// next minor's newest (an upgrade), and the newest release to the next
// minor's pre-release (what the next release will change).
// Against several servers, the steps are taken per server, each named.
func upgradeSteps(cols []column) []upgradeStep {
	byServer := map[server][]column{}
	for _, c := range cols {
		if len(c.Gates) == 0 && c.Error == "" && c.NotApplicable == "" && c.Dir != "" {
			byServer[c.server()] = append(byServer[c.server()], c)
		}
	}
	srvs := slices.SortedFunc(maps.Keys(byServer), compareServers)
	var steps []upgradeStep
	for _, s := range srvs {
		ss := clientGoSteps(byServer[s])
		if len(srvs) > 1 {
			for i := range ss {
				ss[i].what += ", against kube-apiserver " + orDash(s.Kube)
				if s.Etcd != "" {
					ss[i].what += " on etcd " + s.Etcd
				}
			}
		}
		steps = append(steps, ss...)
	}
	return steps
}

// clientGoSteps is upgradeSteps for columns against one server.
func clientGoSteps(ran []column) []upgradeStep {
	slices.SortFunc(ran, func(a, b column) int { return semver.Compare(a.ClientGo, b.ClientGo) })
	var steps []upgradeStep
	var prevNewest *column
	for i := 0; i < len(ran); {
		minor := semver.MajorMinor(ran[i].ClientGo)
		j := i
		for j+1 < len(ran) && semver.MajorMinor(ran[j+1].ClientGo) == minor {
			j++
		}
		first, newest := ran[i], ran[j]
		if prevNewest != nil {
			what := semver.MajorMinor(prevNewest.ClientGo) + " to " + minor
			if semver.Prerelease(newest.ClientGo) != "" {
				what = "the next minor's pre-release: what " + minor + " will change"
			}
			steps = append(steps, upgradeStep{from: *prevNewest, to: newest, what: what})
		}
		if first.ClientGo != newest.ClientGo {
			steps = append(steps, upgradeStep{from: first, to: newest, what: "patches of " + minor})
		}
		prevNewest = &ran[j]
		i = j + 1
	}
	return steps
}

// writeUpgradeSteps writes the section of the verdict document that lists,
// per upgrade step, what changed.
func writeUpgradeSteps(b *strings.Builder, cols []column, n noise) {
	steps := upgradeSteps(cols)
	b.WriteString("\n## What each upgrade changes\n\n")
	if len(steps) == 0 {
		b.WriteString("No two default-gate columns with reports to compare (a document rendered from a matrix.json without the columns' directories, or one column).\n\n")
		return
	}
	b.WriteString("Each step compares two default-gate columns as `make compare` does: outcomes, re-initialisations and observations " +
		"(what the informers did, also where no spec fails: the first request's shape, the encodings, what the specs observe; " +
		"one run a column, so the observations that vary between runs of the same code, such as statuses under faults and call counts, are only counted). " +
		"An observation change is tied to its upstream change by hack/matrix/upgrades.go's knownChanges, or says it is not yet.\n\n")
	for _, s := range steps {
		fmt.Fprintf(b, "### %s → %s (%s)\n\n", s.from.ClientGo, s.to.ClientGo, s.what)
		writeComparison(b, s.from, s.to, func(sentence string) []knownChange {
			return explainChange(sentence, s.from.ClientGo, s.to.ClientGo)
		}, n)
	}
}

// writeComparison writes what changed from one column to the other, as
// `make compare` compares two runs; explain ties an observation change's
// sentence to its upstream changes.
func writeComparison(b *strings.Builder, from, to column, explain func(sentence string) []knownChange, n noise) {
	base, err := loadSide(from.Dir)
	if err != nil {
		fmt.Fprintf(b, "Not compared: %v.\n\n", err)
		return
	}
	head, err := loadSide(to.Dir)
	if err != nil {
		fmt.Fprintf(b, "Not compared: %v.\n\n", err)
		return
	}
	c := compareRuns(base, head, n)
	lines := 0
	list := func(title string, items []string) {
		if len(items) == 0 {
			return
		}
		fmt.Fprintf(b, "%s:\n\n", title)
		for _, it := range items {
			fmt.Fprintf(b, "- %s\n", it)
		}
		b.WriteString("\n")
		lines += len(items)
	}
	list("Outcomes changed for the worse", c.outcomes)
	list("Fixed", c.fixed)
	list("Ran in the newer only", c.onlyHead)
	list("Re-initialisations", c.causes)
	var obs []string
	for i, line := range observationLines(c.observations) {
		known := explain(c.observations[i].sentence)
		if len(known) == 0 {
			obs = append(obs, line+" — not yet tied to an upstream change")
			continue
		}
		for _, k := range known {
			obs = append(obs, fmt.Sprintf("%s — **%s**: %s", line, k.Kind, k.Upstream))
		}
	}
	list("Observations", obs)
	if c.varyingObservations > 0 {
		fmt.Fprintf(b, "(%d observations that vary between runs of the same code differ too; a series a side would tell which changed.)\n\n", c.varyingObservations)
	}
	if lines == 0 {
		fmt.Fprintf(b, "No change: %d specs, the same outcomes, re-initialisations and observations.\n\n", len(head.specs))
	}
}

package scenarios

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/e2e/httpfault"
	"github.com/informer-conformance/informer-conformance/probe"
)

// S24Lagging is S24's value: the relist in both sync modes, and its
// negative control.
var S24Lagging = Register(Scenario{
	ID: "S24", Title: "a relist through a lagging kube-apiserver", Labels: []string{"lagging-apiserver", "ha"},
	Needs: []cluster.Capability{cluster.CapabilityHA}, Disruptive: true,
	Specs: []Spec{
		{
			Text: "never goes back in time: no deleted object returns, no seen object vanishes or gets older", Sample: true,
			Entries: []Entry{{Run: RunWith(LaggingAPIServer, nil)}},
		},
		// What client-go did before kubernetes#59848 was fixed: the
		// lagging cache's state is served at once.
		{
			Text: "fails when the client relists at resourceVersion \"0\"", Mode: e2e.ListWatch,
			Run:   RunWith(LaggingAPIServer, ZeroRelists),
			Fails: []string{NeverBackInTime}, Because: "the S24 assertion catches a relist that goes back in time",
		},
	},
})

// S24 (issue 27 item 7; the kubernetes#59848 class): two kube-apiservers
// over one etcd behind one address (the fault proxy, new connections to
// apiserver 0), each reaching etcd through a fault point of its own
// (cluster.EtcdLinks). Apiserver 1's link is stalled (etcd's answers and
// watch events held, nothing lost), so its watch cache stays behind while
// objects are deleted, created and changed through apiserver 0, which the
// informer follows. Then the informer's connection is moved to apiserver 1
// (Pin(1), ResetAll) and its resumed watch is answered 410 "too old resource
// version" (as after a compaction: httpfault), so it relists, through the
// lagging apiserver. The stall holds for lagHold, then ends.
//
// Expected of client-go v0.36 (tools/cache/reflector.go): after a 410 on a
// watch the reflector does not mark its resourceVersion unavailable
// (watch(): "LIST call with ResourceVersion=RV already has a semantic that
// it returns data at least as fresh as provided RV"), so the relist asks
// for data not older than the last resourceVersion it synced to
// (relistResourceVersion, rewatchResourceVersion; a streaming list with
// resourceVersionMatch=NotOlderThan). kube-apiserver (k8s.io/apiserver
// pkg/storage/cacher) serves such a request from its watch cache only once
// the cache has reached it: it waits up to 3 s (waitUntilFreshAndBlock) and
// answers 504 "Too large resource version" with Retry-After, which the REST
// client retries; a streaming list is refused as too large and the
// reflector falls back to a LIST. Whatever path it takes, no answer shows
// the informer a state older than the one it had: no deleted object comes
// back, no object it has seen created disappears, no object goes back to an
// older resourceVersion, in the store or in a handler call. A client that
// relists at resourceVersion "0" (any state the cache has: what client-go
// did before kubernetes#59848 was fixed) gets the lagging cache's state at
// once.
const (
	// NeverBackInTime is S24's assertion family.
	NeverBackInTime = "the informer never showed a state older than it had"
	// lagHold is how long apiserver 1's etcd link stays stalled after the
	// informer's move: more than the watch cache's 3 s wait for freshness
	// plus the REST client's 1 s Retry-After, so the relist meets the
	// lagging cache at least once; well under the etcd client's keepalive
	// (30 s + 10 s timeout) that would drop the stalled connection.
	lagHold = 6 * time.Second
	// lagEvidenceTimeout bounds the wait for apiserver 1's watch cache to
	// show it lags (a LIST at resourceVersion "0" there).
	lagEvidenceTimeout = 5 * time.Second
)

// LaggingAPIServer runs S24. tweak, when set, changes the informer's lists
// and watches (negative controls break them).
func LaggingAPIServer(ctx context.Context, s e2e.Setup, tweak func(*metav1.ListOptions)) {
	env, ctx := e2e.StartEnv(ctx, s, cluster.Spec{APIServers: 2, EtcdLinks: true})
	c := e2e.Require[apiServers](ctx, env.Backend, "reach one of several kube-apiservers behind one address")
	links := e2e.Require[cluster.EtcdLinks](ctx, env.Backend, "a fault point between each kube-apiserver and etcd")
	restorePin, err := env.Proxy.Pin(0)
	Expect(err).NotTo(HaveOccurred())
	e2e.Defer(ctx, restorePin)
	Expect(c.APIServerAddrs()).To(HaveLen(2), "two kube-apiservers")

	api := env.SubjectsFor(env.ConfigThrough(cluster.Admin, 0))
	server := api.Quorum()
	for _, n := range []string{"keep", "gone", "changed"} {
		_, err := api.Create(ctx, n)
		Expect(err).NotTo(HaveOccurred())
	}
	in := &httpfault.Injector{Faults: env.Faults}
	obs := env.StartProbe(ctx, api.Name(), in.Instrument(env.User), probe.Options{Namespace: env.Namespace, TweakListOptions: tweak})
	obs.EventuallyConverged(ctx, server)

	e2e.By(ctx, "stalling apiserver 1's etcd link, then deleting, creating and changing objects through apiserver 0")
	unstall, held, had := lagAPIServer1(ctx, env, links, api, obs)

	e2e.By(ctx, "moving the informer to apiserver 1 and answering its resumed watch with 410, so it relists through the lagging apiserver")
	_, err = env.Proxy.Pin(1)
	Expect(err).NotTo(HaveOccurred())
	_, gone := in.EndWatchesWithError(httpfault.Watches, 1, 410, metav1.StatusReasonExpired, "too old resource version (S24)")
	moved := time.Now()
	Expect(env.Proxy.ResetAll()).To(BeNumerically(">=", 1), "the informer's connection to apiserver 0 was reset")
	endHold := env.TimePhase("fault: etcd link stalled")
	Consistently(func() string { return regression(obs, had) }).WithContext(ctx).WithTimeout(lagHold).WithPolling(20*time.Millisecond).
		Should(BeEmpty(), NeverBackInTime+" while it relisted through the lagging apiserver")
	Expect(gone()).To(Equal(1), "the informer's resumed watch was answered 410")
	e2e.By(ctx, "ending the stall")
	unstall()
	endHold()
	unstalled := time.Now()
	Expect(held()).To(BeNumerically(">", 0), "the stall held etcd's answers to apiserver 1")

	_, err = api.Create(ctx, "after")
	Expect(err).NotTo(HaveOccurred())
	recovery := obs.EventuallyConverged(ctx, server)
	n := obs.Report(recovery)
	rec := obs.Recorder.Snapshot()
	var through1 []string
	for _, r := range rec.Requests {
		if r.Start.After(moved) {
			through1 = append(through1, fmt.Sprintf("%s rv=%q match=%q sendInitialEvents=%v: %d (%s) after %s (%s)", r.Method, r.ResourceVersion, r.ResourceVersionMatch, r.SendInitialEvents, r.Status,
				r.Ended(), r.Start.Sub(moved).Round(time.Millisecond), durationOf(r, unstalled)))
		}
	}
	env.Note("S24 lagging apiserver", fmt.Sprintf("stall held %d bytes for %s; requests after the move: %s; re-initialisations %v",
		held(), unstalled.Sub(moved).Round(time.Millisecond), strings.Join(through1, "; "), n.ReinitDetails))
	Expect(historyRegression(rec.Events)).To(BeEmpty(), NeverBackInTime+": in its handler calls")
}

// lagAPIServer1 stalls apiserver 1's etcd link, then deletes, creates and
// changes objects through apiserver 0 until the informer converged and
// apiserver 1's watch cache shows it lags (a LIST at resourceVersion "0"
// there still has the deleted object, not the new one). It returns the
// stall's undo, the bytes it held, and the objects the server had.
func lagAPIServer1(ctx context.Context, env *e2e.Env, links cluster.EtcdLinks, api *e2e.Subjects, obs *e2e.Observed) (unstall func(), held func() int64, had []probe.Object) {
	server := api.Quorum()
	link, err := links.EtcdLink(1)
	Expect(err).NotTo(HaveOccurred())
	link.Faults = env.Faults // the link is the spec's cluster's: its stall is the spec's fault
	unstall, held = link.StallAfter(0)
	e2e.Defer(ctx, unstall)
	Expect(api.Delete(ctx, "gone")).To(Succeed())
	_, err = api.Create(ctx, "new")
	Expect(err).NotTo(HaveOccurred())
	Relabel(ctx, api, "changed", "while-lagging")
	obs.EventuallyConverged(ctx, server)
	had, err = server(ctx)
	Expect(err).NotTo(HaveOccurred())
	lagging := env.SubjectsFor(env.ConfigThrough(cluster.Admin, 1))
	Eventually(func(g Gomega) {
		cached, err := lagging.List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(keysOf(cached)).To(And(ContainElement(api.Key("gone")), Not(ContainElement(api.Key("new")))))
	}).WithContext(ctx).WithTimeout(lagEvidenceTimeout).WithPolling(100*time.Millisecond).Should(Succeed(),
		"precondition: apiserver 1's watch cache lags (a LIST at resourceVersion \"0\" there still has the deleted object, not the new one)")
	return unstall, held, had
}

// keysOf lists the keys of objs.
func keysOf(objs []probe.Object) []string {
	keys := make([]string, 0, len(objs))
	for _, o := range objs {
		keys = append(keys, o.Key)
	}
	return keys
}

// regression says how the informer's store is older than had (the server's
// state it had converged to, at one resourceVersion): an object gone from
// had present again, one of had missing, or one at an older
// resourceVersion. "" when it is not.
func regression(obs *e2e.Observed, had []probe.Object) string {
	want := map[string]probe.Object{}
	for _, o := range had {
		want[o.Key] = o
	}
	var problems []string
	seen := map[string]bool{}
	for _, item := range obs.Informer.GetStore().List() {
		o, err := probe.ObjectOf(item)
		if err != nil {
			return err.Error()
		}
		seen[o.Key] = true
		w, ok := want[o.Key]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s (uid %s) is in the store, but it was gone", o.Key, o.UID))
		case o.UID != w.UID:
			problems = append(problems, fmt.Sprintf("%s has uid %s, had %s", o.Key, o.UID, w.UID))
		case rvLess(o.ResourceVersion, w.ResourceVersion):
			problems = append(problems, fmt.Sprintf("%s at resourceVersion %s, had %s", o.Key, o.ResourceVersion, w.ResourceVersion))
		}
	}
	for k := range want {
		if !seen[k] {
			problems = append(problems, k+" is missing from the store")
		}
	}
	slices.Sort(problems)
	return strings.Join(problems, "; ")
}

// historyRegression lists the handler calls that went back in time: any
// call for an object (UID) after its delete, or at an older
// resourceVersion than a call before it.
func historyRegression(events []probe.Event) []string {
	last := map[string]string{}
	deleted := map[string]bool{}
	var problems []string
	for _, e := range events {
		switch {
		case deleted[e.UID]:
			problems = append(problems, fmt.Sprintf("%s %s (uid %s) at resourceVersion %s after its delete", e.Kind, e.Key, e.UID, e.ResourceVersion))
		case rvLess(e.ResourceVersion, last[e.UID]):
			problems = append(problems, fmt.Sprintf("%s %s at resourceVersion %s after %s", e.Kind, e.Key, e.ResourceVersion, last[e.UID]))
		}
		if e.Kind == probe.Delete {
			deleted[e.UID] = true
		}
		if !rvLess(e.ResourceVersion, last[e.UID]) {
			last[e.UID] = e.ResourceVersion
		}
	}
	return problems
}

// rvLess compares resourceVersions as kube-apiserver's etcd storage makes
// them (etcd revisions); "" is older than any.
func rvLess(a, b string) bool {
	if b == "" {
		return false
	}
	x, _ := strconv.ParseUint(a, 10, 64) // "" or not a revision: 0, older than any
	y, _ := strconv.ParseUint(b, 10, 64)
	return x < y
}

// durationOf says how long r took, and whether it was answered before or
// after the stall's end.
func durationOf(r probe.Request, unstalled time.Time) string {
	if r.End.IsZero() {
		return "still open"
	}
	when := "before the stall's end"
	if r.End.After(unstalled) {
		when = "after the stall's end"
	}
	return fmt.Sprintf("took %s, ended %s", r.End.Sub(r.Start).Round(time.Millisecond), when)
}

// ZeroRelists is S24's negative control: every list and streaming list asks
// for resourceVersion "0" (any state the server's cache has), as
// client-go's relists did before kubernetes#59848 was fixed.
func ZeroRelists(o *metav1.ListOptions) {
	if !o.AllowWatchBookmarks || o.SendInitialEvents != nil && *o.SendInitialEvents {
		o.ResourceVersion = "0"
		if !o.AllowWatchBookmarks {
			o.ResourceVersionMatch = ""
		}
	}
}

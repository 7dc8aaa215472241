package scenarios

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	. "github.com/onsi/gomega"
	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/faultproxy"
	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/e2e/httpfault"
	"github.com/informer-conformance/informer-conformance/probe"
)

// S12Storm is S12's value: the storm in both sync modes, and its negative
// control; slow.
var S12Storm = Register(Scenario{
	ID: "S12", Title: "relist storm cost", Labels: []string{"relist-storm"},
	Needs: []cluster.Capability{cluster.CapabilityAPIServerRestart}, Disruptive: true,
	Vars: []cluster.Var{
		{Name: envStormInformers, Kind: cluster.Count, Doc: fmt.Sprintf("S12's informers (default %d)", defaultStormInformers)},
		{Name: envStormObjects, Kind: cluster.Count, Doc: fmt.Sprintf("the pods S12's informers watch (default %d)", defaultStormObjects)},
	},
	Specs: []Spec{
		{
			Text: "every informer converges after an apiserver restart, each re-initialising a bounded number of times", Speed: Slow,
			Entries: []Entry{{Run: func(ctx context.Context, s e2e.Setup, _ Input) {
				RelistStorm(ctx, s, StormSize(ctx))
			}}},
		},
		// A client whose next LISTs after the restart fail (500) relists
		// over and over before it gets through: maxReinitsPerInformer+1
		// failures make every informer exceed the bound however the
		// backoff's jitter falls, and still converge well within
		// stormConvergeBound (the backoff doubles from 800 ms: at most
		// 1.6+3.2+6.4+12.8+25.6 s). A small storm proves the bound; LIST+WATCH
		// mode, where a relist is a LIST.
		{
			Text: "fails when every informer needs many LISTs to get through", Mode: e2e.ListWatch, Speed: Slow,
			Client: ListsFailAfterTheFirst,
			Run:    RunWith(RelistStorm, StormParams{Informers: 3, Objects: 20}),
			Fails:  []string{StormReinits}, Because: "the S12 bound catches a client that relists on every watch end",
		},
	},
})

// S12 (seeds 000, 001): the cost of a relist storm. N informers, each a
// controller of its own (own factory, own client, own connection), watch M
// pods through the proxy; kube-apiserver is killed and comes back; a few
// pods change. Measured and reported: re-initialisations by cause, bytes the
// proxy carried to the clients from the restart until every store
// converged, the new apiserver's peak memory (VmHWM), and the time until all
// N stores equal the server. Asserted: every store converges within
// stormConvergeBound, every informer saw the deletes, no re-initialisation
// of unknown cause, and none re-initialised more than maxReinitsPerInformer
// times - a client that relists on every watch end blows that bound (the
// negative control).
//
// Expected of client-go v0.36: the killed connection ends each informer's
// watch with a transport error, so each relists once it can reach the new
// apiserver (tools/cache/reflector.go ListAndWatch after watch() returns;
// with WatchListClient on, watchList opens a WATCH with
// sendInitialEvents=true, off: list() pages through a LIST, both after
// wait.Backoff from the reflector's backoffManager, 800 ms initial). Until
// the new apiserver's RBAC caches sync the least-privileged user is answered
// 403, which counts as a failed re-initialisation ("other status"), so an
// informer may take a couple of attempts. The streaming list is served from
// the watch cache one object at a time; the LIST of the 1.36 apiserver is
// served from the watch cache too (consistent reads from cache), so the
// difference shows in bytes and memory rather than in etcd load.
//
// Sizes: S12_INFORMERS and S12_OBJECTS override the defaults below for a
// bigger run (the seed's incident had hundreds of informers and tens of
// thousands of objects).
const (
	// StormReinits is S12's per-informer bound; its negative control matches it.
	StormReinits          = "re-initialisations of informer"
	defaultStormInformers = 50
	defaultStormObjects   = 300
	// stormPayload makes each pod about 2 KiB on the wire, so bytes count.
	stormPayload = 1536
	// stormWriters is how many creates run at once while filling the
	// namespace.
	stormWriters = 16
	// stormChanges is how many pods are deleted and created after the restart.
	stormChanges = 5
	// stormConvergeBound bounds the time from the apiserver being ready
	// again to every store equal to the server.
	stormConvergeBound = 60 * time.Second
	// maxReinitsPerInformer: one relist after the transport error, plus
	// attempts answered 403 while the new apiserver's RBAC caches sync and
	// the streaming-list fallback to a LIST.
	maxReinitsPerInformer = 4
)

// StormParams is the size of a storm: how many informers watch how many pods.
type StormParams struct{ Informers, Objects int }

// The variables of S12's size (S12Storm.Vars).
const (
	envStormInformers = "S12_INFORMERS"
	envStormObjects   = "S12_OBJECTS"
)

// StormSize is the storm's size: the defaults, or S12_INFORMERS and
// S12_OBJECTS (the run's configuration: positive numbers).
func StormSize(ctx context.Context) StormParams {
	env, err := e2e.Settings()
	Expect(err).NotTo(HaveOccurred(), "the run's configuration")
	p := StormParams{Informers: env.Count(envStormInformers, defaultStormInformers), Objects: env.Count(envStormObjects, defaultStormObjects)}
	Expect(p.Informers).To(BeNumerically(">", stormChanges), "%s must be more than %d", envStormInformers, stormChanges)
	Expect(p.Objects).To(BeNumerically(">", stormChanges), "%s must be more than %d", envStormObjects, stormChanges)
	return p
}

// stormNumbers is what S12 reports for the whole storm.
type stormNumbers struct {
	SyncMode             string         `json:"syncMode"`
	Informers            int            `json:"informers"`
	Objects              int            `json:"objects"`
	Reinitialisations    map[string]int `json:"reinitialisations"`
	MaxReinitsOneInform  int            `json:"maxReinitialisationsOfOneInformer"`
	Dials                int            `json:"dials"`
	BytesToClients       int64          `json:"bytesToClients"`
	ConvergeSeconds      float64        `json:"convergeSeconds"`
	APIServerPeakBefore  string         `json:"apiserverPeakMemoryBefore"`
	APIServerPeakAfter   string         `json:"apiserverPeakMemoryAfter"`
	InitialSyncSeconds   float64        `json:"initialSyncSeconds"`
	InitialBytesToClient int64          `json:"initialBytesToClients"`
}

func (n stormNumbers) String() string {
	return fmt.Sprintf("%s, %d informers x %d pods: initial sync %.2fs (%d bytes); after restart: re-initialisations %v (max %d per informer), dials %d, %d bytes to clients, all converged in %.2fs; apiserver peak memory %s before, %s after",
		n.SyncMode, n.Informers, n.Objects, n.InitialSyncSeconds, n.InitialBytesToClient, n.Reinitialisations, n.MaxReinitsOneInform, n.Dials, n.BytesToClients, n.ConvergeSeconds, n.APIServerPeakBefore, n.APIServerPeakAfter)
}

// RelistStorm runs S12 (above) in s's sync mode with size informers and
// pods, each built with s.Client when set (a negative control breaks their
// requests).
func RelistStorm(ctx context.Context, s e2e.Setup, size StormParams) {
	env, ctx := e2e.StartEnv(ctx, s, cluster.Spec{})
	c := e2e.Require[cluster.APIServerController](ctx, env.Backend, "restart kube-apiserver")

	createStormPods(ctx, env, size.Objects)
	started := time.Now()
	probes := startStormInformers(ctx, env, size.Informers)
	n := stormNumbers{SyncMode: s.Mode.Name, Informers: size.Informers, Objects: size.Objects, InitialSyncSeconds: time.Since(started).Seconds(),
		InitialBytesToClient: bytesDown(env.Proxy.Stats().Connections)}
	n.APIServerPeakBefore = peakMemory(env.Backend)

	e2e.By(ctx, "killing kube-apiserver and starting it again")
	connsBefore := len(env.Proxy.Stats().Connections)
	endRestart := env.TimePhase("server: kube-apiserver restart")
	Expect(c.RestartAPIServer(ctx, 0, cluster.Hard)).To(Succeed())
	endRestart()
	ready := time.Now()

	deleted := stormChangesAfterRestart(ctx, env)
	stormConverges(ctx, env, probes, ready)
	n.ConvergeSeconds = time.Since(ready).Seconds()
	n.APIServerPeakAfter = peakMemory(env.Backend)
	n.BytesToClients = bytesDown(env.Proxy.Stats().Connections[connsBefore:])
	perInformer := n.countReinits(probes)
	env.Note("S12 storm", n)
	// One informer's numbers in the per-informer table is enough; the
	// storm's totals are in "S12 storm".
	probes[0].Report(time.Since(ready))
	e2e.Logf(ctx, "S12: %s", n)

	for _, p := range probes {
		p.ExpectDeletesObserved(deleted...)
	}
	Expect(n.Reinitialisations).NotTo(HaveKey(string(probe.CauseUnknown)), "re-initialisations of unknown cause: %v", n)
	for name, reinits := range perInformer {
		Expect(len(reinits)).To(BeNumerically("<=", maxReinitsPerInformer), StormReinits+" %s: %v (storm: %s)", name, reinits, n)
	}
}

// createStormPods creates the storm's objects pods of about 2 KiB.
func createStormPods(ctx context.Context, env *e2e.Env, objects int) {
	e2e.By(ctx, fmt.Sprintf("creating %d pods of about 2 KiB", objects))
	// Random (base64) payloads: kube-apiserver gzips large LIST
	// responses, and a repeated character would make them unrealistically
	// small next to the watch events of a streaming list, which are not
	// compressed.
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(stormWriters)
	for i := range objects {
		g.Go(func() error {
			raw := make([]byte, stormPayload*3/4)
			_, _ = rand.Read(raw)
			pod := e2e.Pod(env.Namespace, fmt.Sprintf("storm-%04d", i))
			pod.Annotations = map[string]string{"payload": base64.StdEncoding.EncodeToString(raw)}
			_, err := env.Writer.CoreV1().Pods(env.Namespace).Create(gctx, pod, metav1.CreateOptions{})
			return err
		})
	}
	Expect(g.Wait()).To(Succeed(), "create the storm's pods")
}

// startStormInformers starts n informers, each with its own client and
// connection (a probe's recording Dial keeps client-go from sharing its
// transport: transport/cache.go tlsTransportCache.get), and waits for each
// to sync.
func startStormInformers(ctx context.Context, env *e2e.Env, n int) []*e2e.Observed {
	e2e.By(ctx, fmt.Sprintf("starting %d informers, each with its own client and connection", n))
	probes := make([]*e2e.Observed, n)
	for i := range probes {
		probes[i] = env.StartProbeUnsynced(fmt.Sprintf("informer-%03d", i), env.User, probe.Options{Namespace: env.Namespace})
		probes[i].SyncMeasuresLoad = true // n informers syncing at once
		probes[i].Fleet = "storm"         // observed as one: n alike
	}
	for _, p := range probes {
		syncCtx, cancel := context.WithTimeout(ctx, e2e.SyncTimeout)
		Expect(p.WaitForSync(syncCtx)).To(Succeed(), "informer %s synced within %s", p.Name, e2e.SyncTimeout)
		cancel()
	}
	return probes
}

// stormChangesAfterRestart deletes stormChanges of the storm's pods and
// creates as many, returning the deleted ones.
func stormChangesAfterRestart(ctx context.Context, env *e2e.Env) []probe.Object {
	e2e.By(ctx, fmt.Sprintf("deleting %d pods and creating %d", stormChanges, stormChanges))
	var deleted []probe.Object
	for i := range stormChanges {
		name := fmt.Sprintf("storm-%04d", i)
		old, err := env.Writer.CoreV1().Pods(env.Namespace).Get(ctx, name, metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(env.Writer.CoreV1().Pods(env.Namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})).To(Succeed())
		deleted = append(deleted, probe.Object{Key: env.Namespace + "/" + name, UID: string(old.UID), ResourceVersion: old.ResourceVersion})
		_, err = env.Writer.CoreV1().Pods(env.Namespace).Create(ctx, e2e.Pod(env.Namespace, fmt.Sprintf("storm-new-%04d", i)), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
	}
	return deleted
}

// stormConverges waits until every informer's store and handlers equal
// the server, within stormConvergeBound of the apiserver being ready, and
// records the bound in the timeline.
func stormConverges(ctx context.Context, env *e2e.Env, probes []*e2e.Observed, ready time.Time) {
	e2e.By(ctx, "waiting for every store to equal the server")
	pending := map[int]bool{}
	for i := range probes {
		pending[i] = true
	}
	converged := false
	defer func() {
		if !converged { // the bound failed the spec: the timeline shows it missed
			env.RecordBound(fmt.Sprintf("all %d informers converged, from the apiserver ready", len(probes)), ready, time.Now(), stormConvergeBound, false)
		}
	}()
	Eventually(ctx, func(ctx context.Context) error {
		server, err := env.Pods(ctx)
		if err != nil {
			return err
		}
		snapshot := func(context.Context) ([]probe.Object, error) { return server, nil }
		var errs []string
		for i := range pending {
			if err := probe.Converged(ctx, probes[i].Informer.GetStore(), snapshot); err != nil {
				errs = append(errs, fmt.Sprintf("%s: %v", probes[i].Name, err))
				continue
			}
			// The store converged: its handler calls are queued
			// (e2e.HandlerLagTimeout), so the next polls see them.
			if err := probe.HandlersConverged(ctx, probes[i].Recorder.Snapshot(), snapshot); err != nil {
				errs = append(errs, fmt.Sprintf("%s: %s: %v", probes[i].Name, e2e.HandlersAddUp, err))
				continue
			}
			delete(pending, i)
		}
		if len(errs) > 0 {
			return fmt.Errorf("%d of %d informers not converged, first: %s", len(errs), len(probes), errs[0])
		}
		return nil
	}).WithTimeout(stormConvergeBound).WithPolling(200*time.Millisecond).Should(Succeed(),
		"every informer converges within %s of the apiserver being ready", stormConvergeBound)
	converged = true
	env.RecordBound(fmt.Sprintf("all %d informers converged, from the apiserver ready", len(probes)), ready, time.Now(), stormConvergeBound, true)
}

// countReinits counts the informers' re-initialisations by cause, the
// most of one informer and their dials into n, and returns each
// informer's.
func (n *stormNumbers) countReinits(probes []*e2e.Observed) map[string][]probe.Reinit {
	n.Reinitialisations = map[string]int{}
	perInformer := map[string][]probe.Reinit{}
	for _, p := range probes {
		reinits := probe.Reinitialisations(p.Recorder.Snapshot())
		perInformer[p.Name] = reinits
		n.MaxReinitsOneInform = max(n.MaxReinitsOneInform, len(reinits))
		for cause, k := range probe.CountByCause(reinits) {
			n.Reinitialisations[string(cause)] += k
		}
		n.Dials += len(p.Recorder.Snapshot().Dials)
	}
	return perInformer
}

// ListsFailAfterTheFirst is S12's negative control's client (in LIST+WATCH
// mode): a transport whose first LIST (the initial sync) goes through and
// whose next maxReinitsPerInformer LISTs are answered 500, as a client that
// needs many LISTs to get through.
func ListsFailAfterTheFirst(cfg *rest.Config) *rest.Config {
	in := &httpfault.Injector{}
	var lists atomic.Int32
	afterTheFirst := func(r *http.Request) bool { return httpfault.Lists(r) && lists.Add(1) > 1 }
	in.FailRequests(afterTheFirst, maxReinitsPerInformer, 500, metav1.StatusReasonInternalError, "injected: list failed")
	return in.Instrument(cfg)
}

func bytesDown(conns []faultproxy.ConnStats) int64 {
	var total int64
	for _, c := range conns {
		total += c.BytesDown
	}
	return total
}

// peakMemory is kube-apiserver 0's VmHWM (peak resident set size) from
// /proc, or why it could not be read (on a backend whose processes are not
// this machine's).
func peakMemory(c cluster.Cluster) string {
	procs, ok := c.(cluster.ProcessInspector)
	if !ok {
		return fmt.Sprintf("unknown (backend %s runs no processes of this machine)", c.Name())
	}
	for name, pid := range procs.Pids() {
		if name != "kube-apiserver-0" {
			continue
		}
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			return err.Error()
		}
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
				return strings.TrimSpace(v)
			}
		}
	}
	return "unknown"
}

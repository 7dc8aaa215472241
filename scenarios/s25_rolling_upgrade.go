package scenarios

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/binaries"
	"github.com/informer-conformance/informer-conformance/cluster/faultproxy"
	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/probe"
)

// S25Upgrade is S25's value: the upgrade in both sync modes, and its
// negative controls; slow.
var S25Upgrade = Register(Scenario{
	ID: "S25", Title: "rolling control-plane upgrade", Labels: []string{"apiserver-upgrade"},
	Needs: []cluster.Capability{cluster.CapabilityAPIServerUpgrade}, Disruptive: true, Speed: Slow,
	Specs: []Spec{
		{
			Text: "each kube-apiserver upgraded in turn: the watch resumes on the other version, nothing missed, no needless relist", Sample: true,
			Entries: []Entry{{Run: RunWith(RollingUpgrade, UpgradeInput{})}},
		},
		// S1's broken transport: each upgrade step's end of the watch
		// becomes an error, and the informer relists instead of resuming.
		{
			Text: "fails when the client relists whenever a watch ends", Mode: e2e.StreamingList,
			Client: EndOfWatchAsError,
			Run:    RunWith(RollingUpgrade, UpgradeInput{}),
			Fails:  []string{NeedlessUpgradeReinit}, Because: "the S25 relist assertion catches a client that relists on every watch end",
		},
		{
			Text:  "fails when the handler drops updates and deletes",
			Run:   RunWith(RollingUpgrade, UpgradeInput{Probe: probe.Options{WrapHandler: DeafHandler, NoHandlerCheck: true}}),
			Fails: []string{HeardEveryEnd}, Because: "the S25 delete assertion catches a handler that never hears of a delete",
		},
	},
})

// S25: a rolling control-plane upgrade under running informers. Two
// kube-apiservers over one etcd behind one address (the fault proxy) run
// the previous minor's kube-apiserver (binaries.PreviousRelease of the
// cluster's, KUBE_UPGRADE_FROM to choose); the informer syncs through the
// proxy while a writer creates, deletes and recreates pods under a few
// names, through whichever apiserver is not being upgraded. Each apiserver
// in turn is stopped gracefully (SIGTERM, the fast-graceful-shutdown
// profile) with the proxy already sending new connections to the other one,
// and started again from the cluster's own kube-apiserver on the same
// port, certificates, flags and etcd. Between the two steps the control
// plane runs two versions, and the informer's watch resumes on the other
// version at each step.
//
// Expected of client-go v0.36 (the same reasoning as S1 and S11): the
// graceful stop ends the informer's watch (a GOAWAY, then the connection
// closes; apimachinery pkg/watch/streamwatcher.go receive() takes the end as
// a normal close), and tools/cache/reflector.go watch() re-watches from its
// last resourceVersion, through the proxy, on the apiserver that stays. Its
// watch cache holds that resourceVersion (the writes never stopped), so the
// resume is accepted; a 410 from a watch cache that started past it, or a
// 403 from an apiserver whose authorizer is still starting, is the only
// reason to relist (S1Allowed). No connection to a stopped apiserver
// outlives it; every delete of a pod the informer saw reaches its handler,
// a pod recreated under the same name as a new object.
const (
	// UpgradeConverged is S25's convergence bound's text.
	UpgradeConverged = "the informer converged after the rolling upgrade"
	// NeedlessUpgradeReinit is S25's relist assertion's text; the relist
	// control matches it.
	NeedlessUpgradeReinit = "a re-initialisation the upgrade did not need"
	// HeardEveryEnd is S25's delete assertion's text; the deaf handler's
	// control matches it.
	HeardEveryEnd = "heard the end of every pod it saw that was deleted (a Delete, or an Update to the new pod of the same name after a relist)"
	// upgradeConvergeBound bounds the time from the last write to the
	// informer's store equal to the server (as S11's failover bound).
	upgradeConvergeBound = 10 * time.Second
	// upgradeWritesPerStep is how many writes happen before each step and
	// after the last.
	upgradeWritesPerStep = 10
	// upgradeNames are the names the writer creates, deletes and recreates.
	upgradeNames = 4
	// switchTimeout bounds one apiserver's graceful stop and start.
	switchTimeout = 2 * time.Minute
)

// UpgradeInput configures one run of RollingUpgrade.
type UpgradeInput struct {
	// Probe are the informer's probe options (its namespace is the spec's):
	// a negative control wraps its handler.
	Probe probe.Options
}

// RollingUpgrade runs S25 (above).
func RollingUpgrade(ctx context.Context, s e2e.Setup, in UpgradeInput) {
	env, ctx := e2e.StartEnv(ctx, s, cluster.Spec{APIServers: 2, Profile: "fast-graceful-shutdown"})
	u := e2e.Require[cluster.APIServerUpgrader](ctx, env.Backend, "run a kube-apiserver at another version in place")
	from, to := upgradeVersions(ctx, env)
	// Whatever happens, the cluster ends as it started: every apiserver on
	// its own version again.
	e2e.DeferCleanup(ctx, 0, func(ctx context.Context) error {
		for i := range u.NumAPIServers() {
			if u.APIServerVersion(i) != to {
				if err := u.SwitchAPIServer(ctx, i, to, cluster.Hard); err != nil {
					return err
				}
			}
		}
		return nil
	})
	e2e.By(ctx, fmt.Sprintf("running both kube-apiservers at %s, the version to upgrade from", from))
	for i := range u.NumAPIServers() {
		switchAPIServer(ctx, env, u, i, from)
	}

	writers := [2]kubernetes.Interface{}
	for i := range writers {
		var err error
		writers[i], err = kubernetes.NewForConfig(env.ConfigThrough(cluster.Admin, i))
		Expect(err).NotTo(HaveOccurred())
	}
	server := probe.QuorumPods(writers[1], env.Namespace)
	opts := in.Probe
	opts.Namespace = env.Namespace
	pods := env.StartProbe(ctx, "pods", env.User, opts)
	pods.ServersVary = true // answered by both versions during the upgrade
	pods.EventuallyConverged(ctx, server)

	w := startChurn(ctx, writers, env.Namespace)
	e2e.Defer(ctx, func() { w.Stop() })
	w.WaitFor(upgradeWritesPerStep)
	var steps []upgradeStep
	for _, i := range []int{0, 1} {
		steps = append(steps, upgradeOne(ctx, env, u, w, i, to))
	}
	deleted := w.Stop()

	recovery := convergesWithin(ctx, env, pods, server, upgradeConvergeBound, "converged after the rolling upgrade, from the last write", UpgradeConverged)
	if pods.HandlerChecked {
		env.EventuallyHandlersConverged(ctx, pods.Name, pods.Recorder, server, pods.Dir)
	}
	pods.ExpectStackEncoding()
	owed, unseen := seenBefore(pods.Recorder.Snapshot(), deleted)
	replaced, err := probe.EndsObserved(pods.Recorder.Snapshot(), owed)
	Expect(err).NotTo(HaveOccurred(), "informer pods "+HeardEveryEnd+" (record and logs: %s)", pods.Dir)
	n := pods.Report(recovery)
	expectAllowedUpgradeReinits(pods.Recorder.Snapshot(), steps, n)
	env.Note("S25 rolling upgrade", fmt.Sprintf("kube-apiserver %s to %s, one apiserver at a time; %d writes, %d deletes (%d of pods the informer never saw, %d heard as an Update to the pod recreated under the name: a relist found it); re-initialisations: %v; steps: %s",
		from, to, w.Count(), len(deleted), unseen, replaced, n.ReinitDetails, stepsString(steps)))
}

// upgradeVersions are the kube-apiserver versions S25 upgrades from and
// to: the cluster's own (whatever an earlier spec left running) and the
// release before it, built; the spec skips, saying why, without one.
func upgradeVersions(ctx context.Context, env *e2e.Env) (from, to string) {
	to = e2e.Require[cluster.ServerVersioner](ctx, env.Backend, "say its kube-apiserver version").ServerVersion()
	rc, _ := e2e.Config() // the spec's cluster started: the configuration is good
	from, err := binaries.PreviousRelease(to, rc.Env.Get(binaries.EnvUpgradeFrom))
	if err != nil {
		env.Skip(fmt.Sprintf("S25 needs a kube-apiserver to upgrade from: %v", err))
	}
	if _, _, err := binaries.Built(from, binaries.OptionsIn(rc.Env)); err != nil {
		env.Skip(fmt.Sprintf("S25 upgrades from kube-apiserver %s to %s: %v", from, to, err))
	}
	return from, to
}

// upgradeOne upgrades apiserver i to version to while new connections and
// the writes go to the other one, then waits for upgradeWritesPerStep more
// writes; it returns the step's times.
func upgradeOne(ctx context.Context, env *e2e.Env, u cluster.APIServerUpgrader, w *churn, i int, to string) upgradeStep {
	other := 1 - i
	e2e.By(ctx, fmt.Sprintf("upgrading apiserver %d to %s: new connections and the writes go to apiserver %d (%s)", i, to, other, u.APIServerVersion(other)))
	_, err := env.Proxy.Pin(other)
	Expect(err).NotTo(HaveOccurred())
	w.through(other)
	start := time.Now()
	end := env.TimePhase(fmt.Sprintf("server: kube-apiserver %d stop (graceful)", i))
	sctx, cancel := context.WithTimeout(ctx, switchTimeout)
	Expect(u.StopAPIServer(sctx, i, cluster.Graceful)).To(Succeed(), "apiserver %d stops", i)
	cancel()
	end()
	gone := time.Now() // the old process has exited
	Eventually(func() []faultproxy.ConnStats { return onUpstream(env.Proxy.Stats().Active(), i) }).
		WithTimeout(e2e.EventTimeout).WithPolling(20*time.Millisecond).
		Should(BeEmpty(), "no connection to apiserver %d outlives its old process", i)
	switchAPIServer(ctx, env, u, i, to)
	step := upgradeStep{apiserver: i, start: start, gone: gone, ready: time.Now(), resumedOn: u.APIServerVersion(other)}
	w.WaitFor(w.Count() + upgradeWritesPerStep)
	return step
}

// expectAllowedUpgradeReinits: every re-initialisation has a cause, and
// one that the upgrade's steps allow (allowedInUpgrade).
func expectAllowedUpgradeReinits(rec probe.Record, steps []upgradeStep, n e2e.Numbers) {
	for _, ri := range probe.Reinitialisations(rec) {
		Expect(ri.Cause).NotTo(Equal(probe.CauseUnknown), "every re-initialisation has a cause: %s", ri)
		if ri.After != nil && ri.After.Reinitialises() && !(ri.After.Watch && ri.After.InitialEventsEnd) {
			continue // the relist in progress trying again (a streaming list that synced is a watch like any other)
		}
		Expect(allowedInUpgrade(ri, steps)).To(BeTrue(),
			NeedlessUpgradeReinit+": %s (allowed: after 410 Gone, 403 Forbidden, or a terminating apiserver ending a re-watch at once; all: %v)", ri, n.ReinitDetails)
	}
}

// upgradeStep is one apiserver's switch: when it began and ended, and the
// version the informer's watch resumed on meanwhile.
type upgradeStep struct {
	apiserver          int
	start, gone, ready time.Time
	resumedOn          string
}

func stepsString(steps []upgradeStep) string {
	s := ""
	for i, st := range steps {
		if i > 0 {
			s += "; "
		}
		s += fmt.Sprintf("apiserver %d down and up in %s, the watch resumed on %s", st.apiserver, st.ready.Sub(st.start).Round(time.Millisecond), st.resumedOn)
	}
	return s
}

// allowedInUpgrade is S1Allowed for the step whose stop the
// re-initialisation followed (a graceful stop each time).
func allowedInUpgrade(ri probe.Reinit, steps []upgradeStep) bool {
	for _, st := range steps {
		if ri.After != nil && !ri.After.Start.Before(st.start) && S1Allowed(ri, cluster.Graceful, st.gone) {
			return true
		}
	}
	return false
}

// switchAPIServer switches apiserver i to version (a graceful stop) and
// waits until it authorises the test user.
func switchAPIServer(ctx context.Context, env *e2e.Env, u cluster.APIServerUpgrader, i int, version string) {
	ginkgo.GinkgoHelper()
	end := env.TimePhase(fmt.Sprintf("server: kube-apiserver %d switched to %s", i, version))
	sctx, cancel := context.WithTimeout(ctx, switchTimeout)
	defer cancel()
	Expect(u.SwitchAPIServer(sctx, i, version, cluster.Graceful)).To(Succeed(), "apiserver %d runs %s", i, version)
	end()
	Expect(u.APIServerVersion(i)).To(Equal(version))
	waitAuthorised(ctx, env, i)
}

// churn is S25's writer: it creates, deletes and recreates pods under
// upgradeNames names, through the apiserver it is told.
type churn struct {
	*Writer
	target atomic.Int32
}

// startChurn starts writing: pod u-<k> created, then deleted, then created
// again (a new object under the same name), k cycling over upgradeNames.
func startChurn(ctx context.Context, clients [2]kubernetes.Interface, namespace string) *churn {
	c := &churn{}
	live := map[string]probe.Object{} // the steps run one at a time
	c.Writer = StartWriter(ctx, "the pod writes", func(ctx context.Context, i int) (*probe.Object, error) {
		target := int(c.target.Load())
		api := clients[target].CoreV1().Pods(namespace)
		name := fmt.Sprintf("u-%d", i%upgradeNames)
		if o, ok := live[name]; ok {
			if err := api.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
				return nil, fmt.Errorf("write %d (delete %s) through apiserver %d: %w", i, name, target, err)
			}
			delete(live, name)
			return &o, nil
		}
		p, err := api.Create(ctx, e2e.Pod(namespace, name), metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("write %d (create %s) through apiserver %d: %w", i, name, target, err)
		}
		live[name] = probe.Object{Key: namespace + "/" + name, UID: string(p.UID)}
		return nil, nil
	})
	return c
}

// through sends the next writes to apiserver i.
func (c *churn) through(i int) { c.target.Store(int32(i)) }

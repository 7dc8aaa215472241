package e2e

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/faultlog"
	"github.com/informer-conformance/informer-conformance/cluster/faultproxy"
	"github.com/informer-conformance/informer-conformance/cluster/pool"
	"github.com/informer-conformance/informer-conformance/probe"
	"github.com/informer-conformance/informer-conformance/report"
	"github.com/informer-conformance/informer-conformance/report/timing"
)

// Env is what most specs start from: a cluster with a fault proxy in front
// of it, an admin clientset for the spec's own writes (straight to the
// apiserver, never through the proxy), the server's pods for convergence
// checks, and the least-privileged test user's config through the proxy for
// the informers under test.
type Env struct {
	// Backend is the cluster, whatever its backend. Specs reach its faults
	// through cluster's capability interfaces (Require), never its type.
	Backend cluster.Cluster
	Proxy   *faultproxy.Proxy
	Writer  kubernetes.Interface
	Pods    probe.Lister
	// Subjects are the objects of the spec's stack's resource (pods, or
	// the custom resource on the CRD stacks), written with the admin's
	// clients like Writer's.
	Subjects *Subjects
	User     *rest.Config
	// Namespace is where the spec puts its objects and its informers
	// watch: "default" on a backend that starts a cluster per spec
	// (local), a namespace of the spec's own on a shared one (removed with
	// the spec).
	Namespace string
	// Faults is the spec's fault log: the fault proxy records in it, the
	// backends too when called with the context StartEnv returns, and an
	// HTTP fault injector given it (httpfault.Injector.Faults). The spec's
	// timeline draws it.
	Faults *faultlog.Log

	// fe is the spec's front end (its context's: FrontEndOf), to which
	// the Env and its instruments report.
	fe FrontEnd
	// h is the harness the spec started with (its hooks, its pools).
	h     *Harness
	setup Setup
	// stack is the informer stack of the spec's probes: setup's, typed
	// when it names none.
	stack probe.Stack
	// timeline is the spec's, drawn in its report.
	timeline *specTimeline
	// detectorNoted: the spec's report has its DetectorNote.
	detectorNoted bool
	// data is what the harness measures of the spec, for its report.
	data *specData
	// limiter records what the client-side rate limiter held the
	// informers' requests (watchRateLimiter).
	limiter *probe.MetricsTap
}

// Setup is what a scenario runs with, handed to StartEnv: the sync mode
// (and informer stack) of its informers and, in a negative control, the
// broken client they are built with.
type Setup struct {
	Mode SyncMode
	// Client, when set, rewrites the rest.Config of every informer the
	// spec's Env starts (StartProbe), after the scenario's own wrappers and
	// before the downstream's hooks: a negative control's broken client
	// (a transport that turns the end of a watch into an error, ...).
	Client func(*rest.Config) *rest.Config
}

// Setup is a scenario's plain set-up in mode m: client-go as built.
func (m SyncMode) Setup() Setup { return Setup{Mode: m} }

// WithClient is a set-up in mode m whose informers are built with client, a
// negative control's broken client.
func (m SyncMode) WithClient(client func(*rest.Config) *rest.Config) Setup {
	return Setup{Mode: m, Client: client}
}

// Mode is the spec's sync mode.
func (e *Env) Mode() SyncMode { return e.setup.Mode }

// FrontEnd is the spec's front end: the test framework the Env reports to
// (its context's when StartEnv started it).
func (e *Env) FrontEnd() FrontEnd { return e.fe }

// Stack is the informer stack of the spec's probes (its mode's; typed by
// default).
func (e *Env) Stack() probe.Stack { return e.stack }

// StartEnv starts an Env for the current spec on the selected backend;
// everything stops with it. It switches client-go to s's sync mode for the
// rest of the spec (SyncMode's use) and keeps s for the spec's probes. The
// spec skips, saying why, when the backend cannot give it what spec asks
// or what its "capability:*" and "backend:*" labels need. A backend that
// starts a cluster per spec starts one for spec; on a shared one the spec
// gets a namespace of its own.
//
// The context it returns is ctx carrying the spec's fault log
// (faultlog.NewContext): the scenario calls the backend's fault methods
// with it, so that its timeline shows their windows.
func StartEnv(ctx context.Context, s Setup, spec cluster.Spec) (*Env, context.Context) {
	ginkgo.GinkgoHelper()
	fe := FrontEndOf(ctx)
	ctx = WithFrontEnd(ctx, fe)
	// First: the spec's data is written after every other clean-up.
	e := &Env{fe: fe, h: harnessOf(fe), data: newSpecData(fe), setup: s, Faults: faultlog.New(), Namespace: metav1.NamespaceDefault}
	e.stack = s.Mode.use(fe)
	if s.Mode.Name != "" {
		e.data.set(func(d *report.Spec) { d.SyncMode, d.Stack = s.Mode.Name, string(e.stack) })
	}
	ctx = faultlog.NewContext(ctx, e.Faults)
	if e.stack.CBOR() {
		// The server side of CBOR: a backend that cannot set
		// kube-apiserver's gates skips, naming the profile.
		spec.Profile = strings.TrimPrefix(spec.Profile+"+"+CBORProfile, "+")
	}
	c, shared := fe.Cluster(ctx, spec, e.data)
	defer e.TimePhase(timing.EnvSetup)()
	e.Backend, e.Proxy = c, StartProxy(ctx, c)
	e.Proxy.Faults = e.Faults
	admin, err := c.RESTConfig(cluster.Admin)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	// The spec's own writes are the tool, not the subject: no client-side
	// rate limit (client-go's default of 5 QPS makes filling a namespace
	// with hundreds of objects take minutes).
	admin.QPS = -1
	e.Writer, err = kubernetes.NewForConfig(admin)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	if shared {
		e.Namespace = e.useOwnNamespace(ctx)
	}
	e.Pods = probe.QuorumPods(e.Writer, e.Namespace)
	if e.stack.CustomResource() {
		requireCRDs(fe, c, e.stack)
	}
	dc, err := dynamic.NewForConfig(admin)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	e.Subjects, err = NewSubjects(e.Writer, dc, e.stack.Resource(), e.Namespace)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	e.User, err = c.RESTConfigFor(cluster.TestUser, e.Proxy.URL())
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	e.watchRateLimiter(e.User.Host)
	// The spec's time axis starts here, the cluster ready.
	e.startTimeline()
	return e, ctx
}

// useOwnNamespace creates a namespace for the current spec, returns its
// name (the Env's Namespace), and removes it and what the spec created in it when the spec
// ends (cleanupNamespace, bounded by NamespaceCleanupTimeout): whatever
// is left is named in a report entry and on GinkgoWriter, without failing
// the spec.
//
// The removal goes through the cluster as the spec left it: a
// cluster.Recoverer first recovers (a kube-apiserver the scenario left
// stopped is started again: the e2e-framework features share one cluster
// among disruptive scenarios too), and the admin's rest.Config is asked for
// again (a scenario that rotated certificates made the one from the start
// stale).
func (e *Env) useOwnNamespace(ctx context.Context) string {
	cs := e.Writer
	ginkgo.GinkgoHelper()
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: NamespacePrefix,
		Labels:       map[string]string{"app.kubernetes.io/created-by": "informer-conformance"},
	}}, metav1.CreateOptions{})
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "create the spec's namespace")
	e.fe.AddReportEntry("namespace", ns.Name)
	deferCleanup(e.fe, pool.RecoverTimeout+NamespaceCleanupTimeout+10*time.Second, func(ctx context.Context) error {
		defer e.TimePhase(timing.NamespaceCleanup)()
		if r, ok := e.Backend.(cluster.Recoverer); ok {
			rctx, cancel := context.WithTimeout(ctx, pool.RecoverTimeout)
			err := r.Recover(rctx)
			cancel()
			if err != nil {
				return fmt.Errorf("namespace %s left on the cluster, which did not recover: %w", ns.Name, err)
			}
		}
		admin, err := e.Backend.RESTConfig(cluster.Admin)
		if err != nil {
			return fmt.Errorf("namespace %s left on the cluster: %w", ns.Name, err)
		}
		admin.QPS = -1
		cs, err := kubernetes.NewForConfig(admin)
		if err != nil {
			return fmt.Errorf("namespace %s left on the cluster: %w", ns.Name, err)
		}
		ctx, cancel := context.WithTimeout(ctx, NamespaceCleanupTimeout)
		defer cancel()
		left, err := cleanupNamespace(ctx, cs, admin, ns.Name)
		if len(left) > 0 {
			AddReportEntry(ctx, "left on the cluster", strings.Join(left, "\n"))
			Logf(ctx, "namespace %s: left on the cluster: %s", ns.Name, strings.Join(left, "; "))
		}
		return err
	})
	// With the ServiceAccount admission plugin (every real cluster), a pod
	// is refused until its namespace's "default" service account exists,
	// which the controller-manager creates asynchronously: create it now
	// (the controller's own create then finds it).
	_, err = cs.CoreV1().ServiceAccounts(ns.Name).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		gomega.Expect(err).NotTo(gomega.HaveOccurred(), "create the default service account of the spec's namespace")
	}
	return ns.Name
}

// CBORProfile is the flag profile (fixtures/profiles/cbor.yaml) that turns
// kube-apiserver's CBORServingAndStorage gate on: StartEnv adds it to the
// cluster of a spec on a CBOR stack.
const CBORProfile = "cbor"

// Pod is a minimal pod in namespace. Nothing schedules it: the local
// backend has no nodes, and on a real cluster its scheduler name is one no
// scheduler answers to, so no status update muddles the specs' counts.
func Pod(namespace, name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: corev1.PodSpec{
			SchedulerName: "informer-conformance-no-scheduler",
			Containers:    []corev1.Container{{Name: "c", Image: "example.invalid/none"}},
		},
	}
}

// ConfigThrough is a config for user that reaches kube-apiserver i by its
// own address, not through the spec's fault proxy: a writer that keeps
// working through apiserver 1 while the spec stops apiserver 0, or a client
// pinned to one apiserver. The spec skips when the backend has no apiserver
// i of its own (a single-address cluster asked for the second).
func (e *Env) ConfigThrough(user cluster.User, i int) *rest.Config {
	ginkgo.GinkgoHelper()
	c := e.Backend
	addrs := c.APIServerAddrs()
	if i < 0 || i >= len(addrs) {
		e.fe.Skip(fmt.Sprintf("backend %s has %d kube-apiserver address(es), the spec asks for number %d", e.Backend.Name(), len(addrs), i))
	}
	cfg, err := c.RESTConfigFor(user, "https://"+addrs[i])
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "a client of kube-apiserver %d", i)
	return cfg
}

// Require returns c's capability T, or skips the spec of ctx saying which
// backend lacks what (for example a kubeconfig-only backend cannot restart
// etcd).
func Require[T any](ctx context.Context, c cluster.Cluster, what string) T {
	ginkgo.GinkgoHelper()
	v, ok := c.(T)
	if !ok {
		Skip(ctx, fmt.Sprintf("backend %s cannot %s", c.Name(), what))
	}
	return v
}

// By names the step the spec is at, on its front end.
func (e *Env) By(text string) { e.fe.By(text) }

// Logf writes a line to the spec's log.
func (e *Env) Logf(format string, args ...any) { logf(e.fe, format, args...) }

// Skip ends the spec as skipped, saying why.
func (e *Env) Skip(reason string) { e.fe.Skip(reason) }

// Fail fails the spec and ends it.
func (e *Env) Fail(message string) { e.fe.Fail(message) }

// Defer runs f when the spec ends (a clean-up that cannot fail: an undo, a
// Stop).
func (e *Env) Defer(f func()) { deferOn(e.fe, f) }

// DeferCleanup runs f when the spec ends, with a context bounded by timeout
// (none if 0) that carries the spec's front end; an error fails the spec.
func (e *Env) DeferCleanup(timeout time.Duration, f func(ctx context.Context) error) {
	deferCleanup(e.fe, timeout, f)
}

// CallWithin is the package's CallWithin for the spec: the goroutine dump of
// a call that did not return goes to the spec's artifacts directory.
func (e *Env) CallWithin(name, what string, d time.Duration, f func()) error {
	return withDump(probe.CallWithin(what, d, f), e.fe.ArtifactsDir(), name)
}

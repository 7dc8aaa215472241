package scenarios

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/features"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/probe"
)

// S15Rotation is S15's value: the client CA rotated in both sync modes,
// its negative control, and (long, client-go v0.36+) the serving and client
// CAs rotated.
var S15Rotation = Register(Scenario{
	ID: "S15", Title: "certificate rotation", Labels: []string{"cert-rotation"},
	Needs: []cluster.Capability{cluster.CapabilityCertRotation}, Disruptive: true,
	Specs: []Spec{
		// Short texts: the artifacts directory takes the first 100 characters
		// of the spec's full name, which must still tell the sync modes apart.
		{
			Text: "client CA rotated, reconnects without a new client", Sample: true,
			Entries: []Entry{{Feature: "client CA rotated", Run: RunBody(ClientCARotation)}},
		},
		// The same credentials as data (what a flattened kubeconfig or a
		// rest.Config filled in code gives): TLSConfigFor makes them a
		// static certificate, so the informer keeps presenting the old
		// one and is refused (401) forever.
		{
			Text: "fails when the client holds its certificate in memory", Mode: e2e.StreamingList,
			Client: InlineCredentials,
			Run:    RunBody(ClientCARotation),
			Fails:  []string{RotationRecovers}, Because: "the S15 recovery bound catches a client that cannot reload its certificate",
		},
		{
			Context: "serving and client CA rotated", Speed: Long,
			Text:    "5-minute reload with ClientsAllowCARotation, never without",
			Entries: []Entry{{Feature: "serving and client CA rotated", ClientGo: ">= 0.36.0", Run: RunBody(ServingCARotation)}},
		},
	},
})

// S15 (k8s#120621; client certificate reload: kubernetes#79083; CA reload:
// kubernetes#119483, fixed behind ClientsAllowCARotation by #132922): the
// cluster's certificate authority is rotated for real under a running pod
// informer. The local backend stops its kube-apiserver
// (SIGKILL), makes a new CA, rewrites the test user's client certificate and
// key (signed by the new CA) at the paths its kubeconfig names, and starts
// the apiserver again with --client-ca-file trusting only the new CA
// (cluster.CertRotator). The informer is built once, before, from a
// kubeconfig that names its certificate-authority, client-certificate and
// client-key by path (FileKubeconfig, read by clientcmd), and must carry on
// without a new client. It talks to the apiserver directly, not through the
// fault proxy, as S1 does and for the same reason: a dead address refuses
// connections, while a TCP proxy in front of a dead upstream accepts and
// resets them, which client-go handles differently (S1's comment).
//
// Expected of client-go v0.36:
//   - Files are reloaded, inline data never: transport/transport.go
//     loadTLSFiles sets TLS.ReloadTLSFiles when the certificate and key are
//     files with no data, whatever the feature gates. transport/cache.go
//     (tlsTransportCache.get) then wraps the dialer in a certRotatingDialer
//     (transport/cert_rotation.go), whose GetClientCertificate, called in
//     every TLS handshake, reads the files again (TLSConfigFor's
//     cachingCertificateLoader: at most once a second). Every 5 minutes
//     (CertCallbackRefreshDuration, an exported var "so that integration
//     tests can crank up the reload speed") a poll does the same. Whoever
//     first sees a different certificate (dynamicClientCert.loadClientCert)
//     closes every connection the dialer made (connrotation CloseAll).
//     The spec leaves CertCallbackRefreshDuration alone: the restart
//     already ends every connection, the next handshake reads the files,
//     and a shorter poll would only hide what a production client does.
//   - So the first connection to reach the restarted apiserver is closed by
//     client-go itself in the middle of its handshake: GetClientCertificate
//     sees the new certificate and CloseAll closes that connection too (it
//     is tracked from the dial on), and the handshake fails with "use of
//     closed network connection". The REST client retries that error
//     (rest/request.go Watch and request: net.IsProbableEOF, after the
//     artificial 1 s Retry-After of rest/with_retry.go
//     retryAfterResponse), so the reflector never sees it. Exactly one such
//     failure; no 401 ever (the old certificate never reaches the new
//     apiserver); the first request after the stop resumes the watch.
//   - Otherwise it is S1's hard restart: a connection that reaches the
//     killed process's listener as it dies is reset ("connection reset by
//     peer"), which the REST client retries as well (IsProbableEOF); while
//     the apiserver is down the resumed watch is refused and retried
//     (reflector.go isWatchErrorRetriable); the new apiserver accepts the
//     resume (measured: the REST client's 1 s retries often carry one
//     Watch call across the whole restart) or answers 410 or, in its
//     first second, 403 (S1's comment), and only those start a relist;
//     at most one relist succeeds.
//   - A serving CA rotation (the apiserver's certificate from the new CA,
//     the certificate-authority file rewritten) needs the
//     ClientsAllowCARotation feature (beta, on by default from client-go
//     v0.36; features/known_features.go). With it loadTLSFiles sets
//     TLS.ReloadCAFiles for a CA file without data, and get() wraps the
//     transport in an atomicTransportHolder (transport/ca_rotation.go):
//     each RoundTrip at least caRefreshDuration (5 minutes, a literal in
//     newAtomicTransportHolder: no knob) after the last check, the first
//     one at the transport's creation, reads the file and, if it changed,
//     swaps in a transport trusting the new CA. Until then every handshake
//     fails verifying the apiserver ("x509: certificate signed by unknown
//     authority"), before the client certificate is sent (crypto/tls
//     verifies the server first): no 401. Not a retriable watch error, so
//     the reflector relists and backs off, up to 60 s between tries
//     (reflector.go defaultBackoffMax 30 s, jitter 1.0; the backoff
//     starts again at 800 ms every 2 minutes, defaultBackoffReset), until
//     the reload: the first success is a relist, no sooner than 5 minutes
//     after the transport was made and within a backoff of it (measured in
//     four runs: 1-40 s after the 5 minutes, 301-340 s after the rotation;
//     15-39 handshakes failed first). The client
//     certificate has been reloaded by then: the 5-minute poll of the
//     dialer, started before the CA holder was made, saw it first, so at
//     most one connection (a handshake racing that poll) is closed.
//     Without the feature (client-go before v0.36, or the gate off) the
//     CA is read once, when the transport is made: the informer never
//     recovers, and needs a new client. An upstream limitation; the spec
//     asserts it and flags it in the report. The serving CA specs take 5
//     minutes and more: `slow`.
const (
	// RotationRecovers is the assertion the negative control must fail.
	RotationRecovers = "reconnects with the rotated certificate within"
	// clientRotationBound bounds the time from the apiserver being ready
	// with the new CA to the informer's first 2xx: S1's FirstSuccessBound
	// (the reflector's pending backoff after a restart) plus the REST
	// client's 1 s wait before it retries the connection client-go closed.
	clientRotationBound = FirstSuccessBound + restRetryWait
	restRetryWait       = time.Second
	// caRefreshDuration is transport/ca_rotation.go newAtomicTransportHolder's
	// caRefreshDuration.
	caRefreshDuration = 5 * time.Minute
	// reflectorMaxWait is the longest wait between two ListAndWatch rounds:
	// defaultBackoffMax with defaultBackoffJitter 1.0 (reflector.go).
	reflectorMaxWait = 60 * time.Second
	// caRotationSlack covers the REST client's retry and a relist's own time.
	caRotationSlack = 5 * time.Second
	// s15PollInterval polls the probe's record.
	s15PollInterval = 100 * time.Millisecond
)

// caRotationGate is features.ClientsAllowCARotation, named by its value so
// the suite still compiles with client-go before v0.36 (where the serving
// CA specs skip).
const caRotationGate = features.Feature("ClientsAllowCARotation")

// certRotation is what S15 needs of the cluster.
type certRotation interface {
	cluster.Cluster
	cluster.CertRotator
}

// The kinds of failure of a request that got no answer.
const (
	failRefused   = "connection refused"
	failReset     = "connection reset by the killed apiserver"
	failClosed    = "connection closed by client-go on the new certificate"
	failUnknownCA = "apiserver certificate signed by an unknown authority"
	// A published port (kind's single node: docker-proxy) accepts while
	// the apiserver behind it is down and closes the connection: EOF where
	// a direct dial is refused.
	failProxyClosed = "connection closed by a proxy in front of the stopped apiserver"
	// A starting apiserver listens before it answers handshakes promptly:
	// on a loaded machine (a verdict column at load 30 on 2 cores) a
	// handshake begun then runs into net/http's 10 s TLSHandshakeTimeout
	// (client-go's transport default, transport/cache.go); a certificate
	// the client refuses fails the handshake at once instead.
	failHandshakeTimeout = "TLS handshake timeout against the starting apiserver"
	failOther            = "other"
	closedConnection     = "use of closed network connection"
)

func failureKind(r probe.Request) string {
	switch {
	case strings.Contains(r.Err, "connection refused"):
		return failRefused
	case strings.Contains(r.Err, "connection reset by peer"):
		return failReset
	case strings.Contains(strings.ToLower(r.Err), closedConnection):
		return failClosed
	case strings.Contains(r.Err, "certificate signed by unknown authority"):
		return failUnknownCA
	}
	return failOther
}

// rotationNumbers is what S15 reports of one informer.
type rotationNumbers struct {
	Informer string `json:"informer"`
	Rotation string `json:"rotation"`
	// From the rotation's start (the apiserver killed) and from the
	// apiserver being ready with the new CA (as its readiness poll saw it,
	// every 25 ms: the informer may be first) to the start of the
	// informer's first 2xx request.
	SecondsFromRotation float64 `json:"secondsFromRotation"`
	SecondsFromReady    float64 `json:"secondsFromReady"`
	FirstSuccess        string  `json:"firstSuccess"`
	// Failures before the first 2xx, from the stop on: dials that failed,
	// requests that got no answer (by kind), 401 answers.
	FailedDials    int            `json:"failedDials"`
	FailedRequests map[string]int `json:"failedRequests"`
	Unauthorized   int            `json:"unauthorized"`
}

// rotationOutcome reads what happened to an informer from the request that
// was open before the rotation on.
type rotationOutcome struct {
	after   []probe.Request // requests after the one open before the rotation
	first   probe.Request   // first 2xx of them
	ok      bool
	failed  map[string][]probe.Request // unanswered before first, by kind
	dials   int                        // failed dials between the rotation and first
	unauth  int                        // 401 answers after the rotation
	numbers rotationNumbers
}

func outcomeOf(o *e2e.Observed, rotation string, before probe.Request, rotated, ready time.Time) rotationOutcome {
	rec := o.Recorder.Snapshot()
	out := rotationOutcome{after: RequestsAfter(rec, before.ID), failed: map[string][]probe.Request{}}
	for _, r := range out.after {
		if r.Status >= 200 && r.Status < 300 {
			out.first, out.ok = r, true
			break
		}
	}
	end := time.Now()
	if out.ok {
		end = out.first.Start
	}
	n := rotationNumbers{Informer: o.Name, Rotation: rotation, FailedRequests: map[string]int{}}
	for _, r := range out.after {
		if r.Status == http.StatusUnauthorized {
			out.unauth++
		}
		if r.Start.Before(end) && r.Status == 0 && r.Err != "" {
			k := failureKind(r)
			if k == failOther && r.End.Before(ready) {
				switch {
				case r.Err == "EOF" || r.Err == "unexpected EOF":
					k = failProxyClosed
				case strings.Contains(r.Err, "TLS handshake timeout"):
					k = failHandshakeTimeout
				}
			}
			out.failed[k] = append(out.failed[k], r)
			n.FailedRequests[k]++
		}
	}
	for _, d := range rec.Dials {
		if d.Err != "" && d.Time.After(rotated) && d.Time.Before(end) {
			out.dials++
		}
	}
	n.FailedDials, n.Unauthorized = out.dials, out.unauth
	if out.ok {
		n.SecondsFromRotation = out.first.Start.Sub(rotated).Seconds()
		n.SecondsFromReady = out.first.Start.Sub(ready).Seconds()
		n.FirstSuccess = s15Describe(out.first)
	}
	out.numbers = n
	return out
}

func s15Describe(r probe.Request) string {
	return fmt.Sprintf("#%d %s rv=%q: HTTP %d", r.ID, r.Kind(), r.ResourceVersion, r.Status)
}

// fileConfig is the test user's config read by clientcmd from a kubeconfig
// naming its credentials by path, against the apiserver's own address.
func fileConfig(rot certRotation) *rest.Config {
	ginkgo.GinkgoHelper()
	path, err := rot.FileKubeconfig(cluster.TestUser, "https://"+rot.APIServerAddrs()[0])
	Expect(err).NotTo(HaveOccurred())
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	Expect(err).NotTo(HaveOccurred())
	Expect(cfg.CAFile != "" && cfg.CertFile != "" && cfg.KeyFile != "" && len(cfg.CAData)+len(cfg.CertData)+len(cfg.KeyData) == 0).To(BeTrue(),
		"the kubeconfig %s names its CA, certificate and key by path only (files %q %q %q)", path, cfg.CAFile, cfg.CertFile, cfg.KeyFile)
	return cfg
}

// InlineCredentials is the negative control's client: the same
// credentials read into memory (certificate-authority-data,
// client-certificate-data, client-key-data), so nothing can reload them.
func InlineCredentials(cfg *rest.Config) *rest.Config {
	ginkgo.GinkgoHelper()
	cfg = rest.CopyConfig(cfg)
	Expect(rest.LoadTLSFiles(cfg)).To(Succeed())
	cfg.CAFile, cfg.CertFile, cfg.KeyFile = "", "", ""
	return cfg
}

// useCARotationGate sets ClientsAllowCARotation for the clients built from
// here on in the spec of ctx (it is read when a transport is made).
func useCARotationGate(ctx context.Context, on bool) {
	e2e.UseClientGoGate(ctx, string(caRotationGate), on)
}

// adminAfterRotation is a writer built from the admin's rotated files, and
// a check that the one built before is refused: the apiserver trusts only
// the new CA.
func adminAfterRotation(ctx context.Context, env *e2e.Env, servingCA bool) kubernetes.Interface {
	ginkgo.GinkgoHelper()
	_, err := env.Writer.CoreV1().Pods(env.Namespace).List(ctx, metav1.ListOptions{})
	if servingCA {
		Expect(err).To(MatchError(ContainSubstring("certificate signed by unknown authority")),
			"a client holding the old CA in memory no longer verifies the apiserver")
	} else {
		Expect(apierrors.IsUnauthorized(err)).To(BeTrue(),
			"the apiserver refuses a certificate of the old CA (401), got %v", err)
	}
	cfg, err := env.Backend.RESTConfig(cluster.Admin)
	Expect(err).NotTo(HaveOccurred())
	cfg.QPS = -1
	w, err := kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	return w
}

// lastRequest is the newest request of o (its open watch, once synced and idle).
func lastRequest(o *e2e.Observed) probe.Request {
	rs := o.Recorder.Snapshot().Requests
	Expect(rs).NotTo(BeEmpty())
	return rs[len(rs)-1]
}

// ClientCARotation runs S15's client CA rotation (above); s.Client, when
// set, changes the informer's config built from the kubeconfig (the
// negative control: InlineCredentials).
func ClientCARotation(ctx context.Context, s e2e.Setup) {
	env, ctx, rot, created, cfg := startRotation(ctx, s)
	pods := env.StartProbe(ctx, "pods", cfg, probe.Options{Namespace: env.Namespace})
	pods.EventuallyConverged(ctx, env.Pods)

	e2e.By(ctx, "updating a pod and waiting for the informer's watch to deliver it, so the watch is not a very short one")
	Relabel(ctx, env.Subjects, "keep", "before")
	Eventually(func() []string { return UpdatedKeys(pods) }).WithTimeout(PreStopEventTimeout).WithPolling(20*time.Millisecond).
		Should(ContainElement(created["keep"].Key), "the informer's watch delivered the update before the rotation")
	before := lastRequest(pods)

	e2e.By(ctx, "rotating the client CA: apiserver killed, new CA, new client certificates at the same paths, apiserver started trusting only the new CA")
	rotated, ready, server := rotateThenChangePods(ctx, env, rot, false)

	e2e.By(ctx, "waiting for the informer's first 2xx with the new certificate")
	var out rotationOutcome
	e2e.Defer(ctx, func() { env.Note("S15 rotation: "+pods.Name, out.numbers) })
	Eventually(ctx, func() bool {
		out = outcomeOf(pods, "client CA", before, rotated, ready)
		return out.ok
	}).WithTimeout(clientRotationBound).WithPolling(s15PollInterval).Should(BeTrue(), func() string {
		return fmt.Sprintf("the informer %s %s of the apiserver being ready (failures so far: %v, 401 answers: %d)", RotationRecovers, clientRotationBound, out.numbers.FailedRequests, out.unauth)
	})
	took := out.first.Start.Sub(ready)
	e2e.Logf(ctx, "S15 client CA: first 2xx %s after ready (%s), numbers %+v", took.Round(time.Millisecond), out.numbers.FirstSuccess, out.numbers)
	Expect(took).To(BeNumerically("<", clientRotationBound), "the informer %s %s of the apiserver being ready (first 2xx: %s)", RotationRecovers, clientRotationBound, out.numbers.FirstSuccess)

	recovery := pods.EventuallyConverged(ctx, server)
	pods.ExpectDeletesObserved(created["delete-after"])
	n := pods.Report(recovery)
	out = outcomeOf(pods, "client CA", before, rotated, ready)

	first := out.after[0]
	Expect(first.Watch && !first.SendInitialEvents && first.ResourceVersion != "").To(BeTrue(),
		"the informer resumes its watch from its last resourceVersion before anything else (first request after the rotation: %+v)", first)
	Expect(out.unauth).To(BeZero(), "no request answered 401: the old certificate never reached the apiserver trusting only the new CA")
	Expect(out.failed[failOther]).To(BeEmpty(), "no failure but connections refused, reset or closed by a port's proxy while the apiserver was down or dying, handshakes timed out against it starting, and the connection client-go closed itself")
	Expect(out.failed[failUnknownCA]).To(BeEmpty(), "the apiserver's certificate still verifies (its CA did not change)")
	Expect(out.failed[failClosed]).To(HaveLen(1),
		"exactly one connection, the first to reach the restarted apiserver, closed by client-go on seeing the new certificate (cert_rotation.go loadClientCert -> CloseAll), then retried by the REST client: %v", out.failed[failClosed])

	succeeded := 0
	for _, ri := range probe.Reinitialisations(pods.Recorder.Snapshot()) {
		if ri.Request.Status == http.StatusOK {
			succeeded++
		}
		if ri.After != nil && ri.After.Reinitialises() {
			continue // the relist in progress trying again
		}
		Expect(S1Allowed(ri, cluster.Hard, ready)).To(BeTrue(),
			"re-initialisation only after a 410 or 403 of the restarted apiserver, none caused by the rotation: %s (all: %v)", ri, n.ReinitDetails)
	}
	Expect(succeeded).To(BeNumerically("<=", 1), "at most one successful re-initialisation after the rotation (all: %v)", n.ReinitDetails)
}

// ServingCARotation runs S15's serving and client CA rotation (above), with
// an informer built with ClientsAllowCARotation and one without.
func ServingCARotation(ctx context.Context, s e2e.Setup) {
	env, ctx, rot, created, cfg := startRotation(ctx, s)
	r := startCAInformers(ctx, env, cfg)
	r.watchesDelivered(ctx, created["keep"].Key)

	e2e.By(ctx, "rotating the serving and client CA: apiserver killed, new CA, new serving and client certificates, CA file rewritten, apiserver started")
	r.rotated, r.ready, r.server = rotateThenChangePods(ctx, env, rot, true)

	r.awaitCAReload(ctx)
	r.expectReloadingRecovered(ctx, created["delete-after"])
	r.expectStaticStale(ctx)

	e2e.By(ctx, "building a new informer without ClientsAllowCARotation from the same kubeconfig: it syncs and converges")
	useCARotationGate(ctx, false)
	fresh := env.StartProbe(ctx, "new-client", cfg, probe.Options{Namespace: env.Namespace})
	fresh.EventuallyConverged(ctx, r.server)
}

// servingRotation is one run of ServingCARotation, carried from step to
// step: two informers from one kubeconfig, static without
// ClientsAllowCARotation and reloading with it.
type servingRotation struct {
	env               *e2e.Env
	static, reloading *e2e.Observed
	// static's transport is older than staticMade; reloading's was made
	// between reloadingFrom and reloadingMade.
	staticMade, reloadingFrom, reloadingMade time.Time
	// Each informer's newest request (its open watch) before the rotation.
	staticBefore, reloadingBefore probe.Request
	// When the rotation started and ended, and the quorum lister through
	// an admin trusting the new CA.
	rotated, ready time.Time
	server         probe.Lister
	// out is what happened to reloading, as last read: its clean-up
	// reports the latest.
	out rotationOutcome
}

// startCAInformers builds the informer with ClientsAllowCARotation off,
// then the one with it on, from cfg, and waits for both to converge.
func startCAInformers(ctx context.Context, env *e2e.Env, cfg *rest.Config) *servingRotation {
	e2e.By(ctx, "building an informer with ClientsAllowCARotation off, then one with it on, from the same kubeconfig")
	r := &servingRotation{env: env}
	useCARotationGate(ctx, false)
	r.static = env.StartProbe(ctx, "static-ca", cfg, probe.Options{Namespace: env.Namespace})
	r.staticMade = time.Now() // its transport is older
	useCARotationGate(ctx, true)
	r.reloadingFrom = time.Now() // its transport is newer
	r.reloading = env.StartProbe(ctx, "reloading-ca", cfg, probe.Options{Namespace: env.Namespace})
	r.reloadingMade = time.Now()
	env.Note("ClientsAllowCARotation", "informer static-ca: off; informer reloading-ca: on")
	for _, o := range []*e2e.Observed{r.static, r.reloading} {
		o.EventuallyConverged(ctx, env.Pods)
	}
	return r
}

// watchesDelivered updates the pod keep (its key) and waits for both
// informers' watches to deliver it, then keeps each one's open watch.
func (r *servingRotation) watchesDelivered(ctx context.Context, keep string) {
	e2e.By(ctx, "updating a pod and waiting for both watches to deliver it, so neither is a very short one")
	Relabel(ctx, r.env.Subjects, "keep", "before")
	for _, o := range []*e2e.Observed{r.static, r.reloading} {
		Eventually(func() []string { return UpdatedKeys(o) }).WithTimeout(PreStopEventTimeout).WithPolling(20*time.Millisecond).
			Should(ContainElement(keep), "informer %s's watch delivered the update before the rotation", o.Name)
	}
	r.staticBefore, r.reloadingBefore = lastRequest(r.static), lastRequest(r.reloading)
}

// awaitCAReload waits for the informer with ClientsAllowCARotation to
// succeed again, no sooner than client-go's CA reload period after its
// transport was made.
func (r *servingRotation) awaitCAReload(ctx context.Context) {
	e2e.By(ctx, "waiting for the informer with ClientsAllowCARotation to reload the CA file")
	deadline := r.reloadingMade.Add(caRefreshDuration + reflectorMaxWait + caRotationSlack)
	e2e.DeferCleanup(ctx, 0, func(context.Context) error {
		r.env.Note("S15 rotation: "+r.reloading.Name, r.out.numbers)
		return nil
	})
	endReload := r.env.TimePhase("client: CA file re-read (client-go's 5-minute period)")
	defer endReload() // also when the wait fails
	Eventually(ctx, func() bool {
		r.out = outcomeOf(r.reloading, "serving and client CA", r.reloadingBefore, r.rotated, r.ready)
		return r.out.ok
	}).WithTimeout(time.Until(deadline)).WithPolling(time.Second).Should(BeTrue(), func() string {
		return fmt.Sprintf("the informer %s %s %s of its transport being made (client-go's CA reload period plus a backoff; failures so far: %v)",
			r.reloading.Name, RotationRecovers, caRefreshDuration+reflectorMaxWait+caRotationSlack, r.out.numbers.FailedRequests)
	})
	endReload()
	e2e.Logf(ctx, "S15 serving CA: %s first 2xx %s after ready, %s after its transport was made (%s), numbers %+v", r.reloading.Name,
		r.out.first.Start.Sub(r.ready).Round(time.Millisecond), r.out.first.Start.Sub(r.reloadingMade).Round(time.Millisecond), r.out.numbers.FirstSuccess, r.out.numbers)
	Expect(r.out.first.Start).To(BeTemporally(">=", r.reloadingFrom.Add(caRefreshDuration)),
		"client-go v0.36 re-reads the CA file no sooner than caRefreshDuration (%s) after the transport was made (transport/ca_rotation.go); a newer client-go that reloads sooner should change this expectation", caRefreshDuration)
}

// expectReloadingRecovered asserts how the informer with
// ClientsAllowCARotation got through the rotation: it converges and sees
// the delete of deleteAfter; its handshakes failed on the unknown
// authority, never with a 401; exactly one relist succeeded.
func (r *servingRotation) expectReloadingRecovered(ctx context.Context, deleteAfter probe.Object) {
	recovery := r.reloading.EventuallyConverged(ctx, r.server)
	r.reloading.ExpectDeletesObserved(deleteAfter)
	n := r.reloading.Report(recovery)
	r.out = outcomeOf(r.reloading, "serving and client CA", r.reloadingBefore, r.rotated, r.ready)
	Expect(r.out.unauth).To(BeZero(), "no request answered 401: the handshake fails verifying the apiserver before any client certificate is sent")
	Expect(r.out.failed[failOther]).To(BeEmpty(), "no failure but connections refused, reset or closed by a port's proxy while the apiserver was down or dying, handshakes timed out against it starting, unknown-authority handshakes, and at most one connection client-go closed itself")
	Expect(r.out.failed[failUnknownCA]).NotTo(BeEmpty(), "handshakes failed verifying the rotated apiserver until the CA file was reloaded")
	Expect(len(r.out.failed[failClosed])).To(BeNumerically("<=", 1),
		"at most one connection closed by client-go on the new client certificate (its 5-minute poll sees it first): %v", r.out.failed[failClosed])
	succeeded := 0
	for _, ri := range probe.Reinitialisations(r.reloading.Recorder.Snapshot()) {
		if ri.Request.Status == http.StatusOK {
			succeeded++
		}
		if ri.After != nil && ri.After.Reinitialises() {
			continue // the relist in progress trying again
		}
		Expect(ri.Cause == probe.CauseTransport && strings.Contains(ri.Detail, "certificate signed by unknown authority")).To(BeTrue(),
			"every relist started after a handshake that could not verify the rotated apiserver (not a retriable watch error: reflector.go isWatchErrorRetriable): %s (all: %v)", ri, n.ReinitDetails)
	}
	Expect(succeeded).To(Equal(1), "exactly one successful relist, after the CA reload (all: %v)", n.ReinitDetails)
}

// expectStaticStale asserts the informer without ClientsAllowCARotation
// still fails its handshakes past the reload period and keeps a stale
// store, and reports the upstream limitation.
func (r *servingRotation) expectStaticStale(ctx context.Context) {
	e2e.By(ctx, "checking the informer without ClientsAllowCARotation: past the reload period its handshakes still fail")
	staticDeadline := r.staticMade.Add(caRefreshDuration + reflectorMaxWait + caRotationSlack)
	Eventually(ctx, func() []probe.Request {
		var late []probe.Request
		for _, req := range RequestsAfter(r.static.Recorder.Snapshot(), r.staticBefore.ID) {
			if req.Start.After(r.staticMade.Add(caRefreshDuration)) && failureKind(req) == failUnknownCA {
				late = append(late, req)
			}
		}
		return late
	}).WithTimeout(time.Until(staticDeadline)).WithPolling(time.Second).ShouldNot(BeEmpty(),
		"informer %s tried again more than %s after its transport was made and still did not trust the new CA", r.static.Name, caRefreshDuration)
	sout := outcomeOf(r.static, "serving and client CA", r.staticBefore, r.rotated, r.ready)
	r.static.Report(0)
	r.env.Note("S15 rotation: "+r.static.Name, sout.numbers)
	Expect(sout.ok).To(BeFalse(), "without ClientsAllowCARotation client-go v0.36 reads the CA once (transport/transport.go loadTLSFiles): no request of %s succeeded since the rotation; first 2xx: %s", r.static.Name, sout.numbers.FirstSuccess)
	Expect(probe.Converged(ctx, r.static.Informer.GetStore(), r.server)).NotTo(Succeed(), "informer %s's store is stale", r.static.Name)
	r.env.UpstreamLimitation("without ClientsAllowCARotation (client-go before v0.36, or the gate off) an informer never trusts a rotated serving CA and needs a new client")
	r.env.Note("S15 outcome", fmt.Sprintf("UPSTREAM LIMITATION: without ClientsAllowCARotation (client-go before v0.36, or the gate off) an informer never trusts a rotated serving CA: %s failed %d handshakes over %s and needs a new client; with the gate it took %.1fs after the rotation (client-go's 5-minute CA reload)",
		r.static.Name, len(sout.failed[failUnknownCA]), time.Since(r.ready).Round(time.Second), r.out.numbers.SecondsFromRotation))
}

// startRotation is the set-up both rotations share: the spec's Env, its
// backend's CA rotation (else it skips), the pods the rotation changes,
// and the test user's config read from a kubeconfig naming its files.
func startRotation(ctx context.Context, s e2e.Setup) (*e2e.Env, context.Context, certRotation, map[string]probe.Object, *rest.Config) {
	env, ctx := e2e.StartEnv(ctx, s, cluster.Spec{})
	rot := e2e.Require[certRotation](ctx, env.Backend, "rotate its certificate authority")
	created := createRotationPods(ctx, env.Writer.CoreV1().Pods(env.Namespace), env.Namespace)
	return env, ctx, rot, created, fileConfig(rot)
}

// createRotationPods creates the pods both rotations change: one kept (and
// relabelled), one updated and one deleted after the rotation.
func createRotationPods(ctx context.Context, api corev1client.PodInterface, namespace string) map[string]probe.Object {
	ginkgo.GinkgoHelper()
	created := map[string]probe.Object{}
	for _, n := range []string{"keep", "update-after", "delete-after"} {
		p, err := api.Create(ctx, e2e.Pod(namespace, n), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		created[n] = probe.Object{Key: namespace + "/" + n, UID: string(p.UID)}
	}
	return created
}

// rotateThenChangePods rotates the client CA (and the serving CA when
// servingCA), then, through an admin trusting the new CA, creates, updates
// and deletes the pods the informer must learn of. It returns when the
// rotation started and ended, and the quorum lister through that admin.
func rotateThenChangePods(ctx context.Context, env *e2e.Env, rot certRotation, servingCA bool) (rotated, ready time.Time, server probe.Lister) {
	ginkgo.GinkgoHelper()
	rotated = time.Now()
	Expect(rot.RotateCertificates(ctx, cluster.RotateOptions{Stop: cluster.Hard, ServingCA: servingCA})).To(Succeed())
	ready = time.Now()
	writer := adminAfterRotation(ctx, env, servingCA)
	wapi := writer.CoreV1().Pods(env.Namespace)
	_, err := wapi.Create(ctx, e2e.Pod(env.Namespace, "create-after"), metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	wsubjects, err := e2e.NewSubjects(writer, nil, probe.PodsResource, env.Namespace)
	Expect(err).NotTo(HaveOccurred())
	Relabel(ctx, wsubjects, "update-after", "after")
	Expect(wapi.Delete(ctx, "delete-after", metav1.DeleteOptions{GracePeriodSeconds: new(int64)})).To(Succeed())
	return rotated, ready, probe.QuorumPods(writer, env.Namespace)
}

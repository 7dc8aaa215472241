package scenarios

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/e2e/httpfault"
	"github.com/informer-conformance/informer-conformance/probe"
)

// S27's assertions: the informer reports every refused watch to its watch
// error handler as Forbidden, and backs off: the server refuses at most
// S27MaxRefusals of its watches in S27Window.
const (
	ForbiddenReported = "every refused watch reached the informer's watch error handler as Forbidden"
	BacksOffRefusals  = "the informer backs off after refused watches"
)

// S27's numbers. client-go's reflector waits between attempts with its
// backoff manager (tools/cache/reflector.go NewReflectorWithOptions:
// 800 ms doubling to 30 s, jitter 1.0), so a window of 10 s holds about 4
// cycles (a LIST and a refused watch each; in streaming-list mode a refused
// streaming list too): at most 12 refusals, with room for a fast machine.
const (
	S27Window       = 10 * time.Second
	S27MaxRefusals  = 12
	S27User         = "s27-list-only"
	s27Role         = "s27-list-only"
	s27PodTemplates = 3
)

// S27ListOnly is S27's value: both sync modes, and its negative controls.
var S27ListOnly = Register(Scenario{
	ID: "S27", Title: "an informer allowed to list but not to watch", Labels: []string{"list-without-watch"},
	Specs: []Spec{
		{
			Text: "syncs, reports each refused watch as Forbidden and backs off", Sample: true,
			Entries: []Entry{{Run: func(ctx context.Context, s e2e.Setup, in Input) {
				ListWithoutWatch(ctx, s, in.Probe())
			}}},
		},
		// Every non-2xx answer turned into a transport error: the watch
		// error handler gets an error without a reason.
		{
			Text: "fails when the client hides the refusal's status", Mode: e2e.ListWatch,
			Client: httpfault.StatusesAsErrors,
			Run:    RunWith(ListWithoutWatch, probe.Options{}),
			Fails:  []string{ForbiddenReported}, Because: "the S27 assertion catches a refusal reported without its reason",
		},
		{
			Text: "fails when the client retries every refusal at once", Mode: e2e.ListWatch,
			Client: RetryForbidden,
			Run:    RunWith(ListWithoutWatch, probe.Options{}),
			Fails:  []string{BacksOffRefusals}, Because: "the S27 bound catches refusals retried in a loop",
		},
	},
})

// ListWithoutWatch is S27: an informer whose user may get and list
// podtemplates in its namespace but not watch them (RBAC; the informer's
// client impersonates that user). The refused watches are counted on the
// wire, below every layer of the client (wireRefusals): kube-apiserver
// counts no request its authorizer refused in apiserver_request_total
// (k8s.io/apiserver endpoints/filters/authorization.go answers 403 before
// the instrumented handlers).
//
// Asserted: the informer syncs (its LIST is allowed) and converges; each
// refused watch reaches its watch error handler as Forbidden
// (ForbiddenReported); the server refuses at most S27MaxRefusals watches in
// S27Window after the sync (BacksOffRefusals). Observed (report
// observations): the requests, their statuses, the errors' texts, the
// delay after each refusal, the handler calls the repeated relists make.
//
// Expected of client-go v0.31-v0.37 (tools/cache/reflector.go): Run calls
// ListAndWatch under wait.BackoffUntil with the reflector's backoff
// manager; the LIST succeeds and replaces the store (synced), the watch is
// refused (403), ListAndWatch returns the error to the watch error handler
// (Run: r.watchErrorHandler) and the next attempt waits out the backoff.
// In streaming-list mode the streaming list is refused first and the
// reflector falls back to a LIST (watchList's error: fallbackToList).
func ListWithoutWatch(ctx context.Context, s e2e.Setup, opts probe.Options) {
	env, ctx := e2e.StartEnv(ctx, s, cluster.Spec{})
	admin := env.Writer
	ns := env.Namespace
	cfg := listOnlyUser(ctx, env)
	for i := range s27PodTemplates {
		_, err := admin.CoreV1().PodTemplates(ns).Create(ctx, &corev1.PodTemplate{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s27-%d", i)},
			Template:   corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/none"}}}},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
	}
	cfg, wire := wireRefusals(cfg)

	opts.Namespace = ns
	opts.Informer = func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
		return f.Core().V1().PodTemplates().Informer()
	}
	server := probe.Quorum("podtemplates", func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return admin.CoreV1().PodTemplates(ns).List(ctx, o)
	})
	obs := env.StartProbe(ctx, "podtemplates", cfg, opts)
	obs.EventuallyConverged(ctx, server)
	synced, refusedBefore := time.Now(), wire()

	e2e.By(ctx, fmt.Sprintf("watching what the informer does for %s with its watches refused", S27Window))
	refusals := func() int { return wire() - refusedBefore }
	if obs.RecordsWatchErrors {
		Eventually(func() []probe.WatchError { return obs.Recorder.Snapshot().WatchErrors }).
			WithContext(ctx).WithTimeout(e2e.EventTimeout).ShouldNot(BeEmpty(), "the watch error handler was called")
	}
	Consistently(refusals).WithContext(ctx).WithTimeout(S27Window).WithPolling(time.Second).Should(BeNumerically("<=", S27MaxRefusals),
		BacksOffRefusals+": at most %d refused watches in %s", S27MaxRefusals, S27Window)
	n := refusals()
	if obs.RecordsWatchErrors {
		// Every call, those of the window too.
		for _, e := range obs.Recorder.Snapshot().WatchErrors {
			Expect(e.Reason).To(Equal(string(metav1.StatusReasonForbidden)), ForbiddenReported+": %s", e.Err)
		}
	}
	rec := obs.Recorder.Snapshot()
	nums := obs.Report(0)
	env.Note("S27 list without watch", fmt.Sprintf("%d watches refused by the server in %s after the sync (bound %d); %d watch errors reported; requests %v",
		n, time.Since(synced).Round(time.Second), S27MaxRefusals, len(rec.WatchErrors), nums.Requests))
	Expect(n).To(BeNumerically(">", 0), "the server refused the informer's watches, else S27 tests nothing")
}

// listOnlyUser grants S27User get and list of podtemplates in the spec's
// namespace, and nothing else (removed before the namespace: the
// harness's namespace clean-up deletes the kinds the suite's informers
// use, and waits on the namespace controller for the rest); it returns an
// admin config impersonating the user once the grant took effect.
func listOnlyUser(ctx context.Context, env *e2e.Env) *rest.Config {
	admin, ns := env.Writer, env.Namespace
	e2e.DeferCleanup(ctx, 0, func(ctx context.Context) error {
		return errors.Join(
			ignoreNotFound(admin.RbacV1().RoleBindings(ns).Delete(ctx, s27Role, metav1.DeleteOptions{})),
			ignoreNotFound(admin.RbacV1().Roles(ns).Delete(ctx, s27Role, metav1.DeleteOptions{})),
			ignoreNotFound(admin.CoreV1().PodTemplates(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})))
	})
	_, err := admin.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: s27Role},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"podtemplates"}, Verbs: []string{"get", "list"}}},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	_, err = admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: s27Role},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: s27Role},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: S27User}},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	cfg, err := env.Backend.RESTConfig(cluster.Admin)
	Expect(err).NotTo(HaveOccurred())
	cfg.Impersonate = rest.ImpersonationConfig{UserName: S27User, Groups: []string{"system:authenticated"}}
	listOnly, err := kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	Eventually(func() error {
		_, err := listOnly.CoreV1().PodTemplates(ns).List(ctx, metav1.ListOptions{})
		return err
	}).WithContext(ctx).WithTimeout(e2e.EventTimeout).Should(Succeed(), "the role binding lets %s list podtemplates", S27User)
	return cfg
}

// wireRefusals wraps cfg's transport, innermost (a negative control's
// broken client and the probe's recorder go around it), to count the
// watches the server answered 403: what went over the wire, whatever the
// layers above did.
func wireRefusals(cfg *rest.Config) (*rest.Config, func() int) {
	var n atomic.Int64
	cfg = httpfault.Intercept(cfg, func(rt http.RoundTripper, req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err == nil && resp.StatusCode == http.StatusForbidden && req.URL.Query().Get("watch") == "true" {
			n.Add(1)
		}
		return resp, err
	})
	return cfg, func() int { return int(n.Load()) }
}

// RetryForbidden is a negative control's broken client: its transport
// sends every request answered 403 again at once, 10 times.
func RetryForbidden(cfg *rest.Config) *rest.Config {
	return httpfault.Intercept(cfg, func(rt http.RoundTripper, req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		for range 10 {
			if err != nil || resp.StatusCode != http.StatusForbidden {
				break
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			resp, err = rt.RoundTrip(req)
		}
		return resp, err
	})
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

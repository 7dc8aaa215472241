package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/local"
	"github.com/informer-conformance/informer-conformance/cluster/local/localtest"
)

// TestCleanupNamespace runs on a local cluster, which, like hack/local-up
// (what CI's existing-backend run uses), has no namespace controller: a
// deleted namespace stays Terminating with its objects unless the cleanup
// empties and finalizes it.
func TestCleanupNamespace(t *testing.T) {
	lc := localtest.Start(t, local.Options{})
	admin, err := lc.RESTConfig(cluster.Admin)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(admin)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// fill makes a namespace the way useOwnNamespace and the specs do.
	fill := func(t *testing.T) string {
		ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: NamespacePrefix}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CoreV1().ServiceAccounts(ns.Name).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"p1", "p2", "p3"} {
			p := Pod(ns.Name, name)
			if _, err := cs.CoreV1().Pods(ns.Name).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := cs.CoreV1().ConfigMaps(ns.Name).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CoreV1().Secrets(ns.Name).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		return ns.Name
	}
	// gone checks that nothing of namespace ns is left: not the namespace,
	// not its objects (listed cluster-wide: objects outlive a namespace
	// finalized too early).
	gone := func(t *testing.T, ns string) {
		t.Helper()
		if _, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("namespace %s still there (err %v)", ns, err)
		}
		pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "metadata.namespace=" + ns})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			t.Errorf("pod %s/%s left", p.Namespace, p.Name)
		}
	}

	t.Run("emptied and finalized", func(t *testing.T) {
		ns := fill(t)
		start := time.Now()
		left, err := cleanupNamespace(ctx, cs, admin, ns)
		if err != nil || left != nil {
			t.Fatalf("cleanupNamespace(%s) = %q, %v; want nothing left", ns, left, err)
		}
		t.Logf("namespace %s removed in %s", ns, time.Since(start).Round(time.Millisecond))
		gone(t, ns)
	})

	t.Run("an object held by another finalizer is reported, not failed", func(t *testing.T) {
		ns := fill(t)
		held := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/hold"}}}
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, held, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		cctx, ccancel := context.WithTimeout(ctx, 3*time.Second)
		left, err := cleanupNamespace(cctx, cs, admin, ns)
		ccancel()
		if err != nil {
			t.Errorf("cleanupNamespace failed on an object it does not own: %v", err)
		}
		if got := strings.Join(left, "; "); !strings.Contains(got, "namespace "+ns) || !strings.Contains(got, "configmaps/held") || strings.Contains(got, "pods/") {
			t.Errorf("left = %q, want the namespace and configmaps/held, no pod", got)
		}
		// The controller lets go: the next cleanup finishes the job.
		if _, err := cs.CoreV1().ConfigMaps(ns).Patch(ctx, "held", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		if left, err := cleanupNamespace(ctx, cs, admin, ns); err != nil || left != nil {
			t.Fatalf("second cleanupNamespace(%s) = %q, %v; want nothing left", ns, left, err)
		}
		gone(t, ns)
	})
}

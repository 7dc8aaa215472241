package e2e

import (
	"context"
	"fmt"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/faultproxy"
	"github.com/informer-conformance/informer-conformance/cluster/local"
	"github.com/informer-conformance/informer-conformance/e2e/probe"
)

// Namespace is where specs put their objects.
const Namespace = metav1.NamespaceDefault

// Env is what most specs start from: a local cluster with a fault proxy in
// front of it, an admin clientset for the spec's own writes (straight to the
// apiserver, never through the proxy), the server's pods for convergence
// checks, and the least-privileged test user's config through the proxy for
// the informers under test.
type Env struct {
	Cluster *local.Cluster
	Proxy   *faultproxy.Proxy
	Writer  kubernetes.Interface
	Pods    probe.Lister
	User    *rest.Config
}

// StartEnv starts an Env for the current spec; everything stops with it.
func StartEnv(ctx context.Context, opts local.Options) *Env {
	ginkgo.GinkgoHelper()
	c := StartLocal(ctx, opts)
	e := &Env{Cluster: c, Proxy: StartProxy(c)}
	admin, err := c.RESTConfig(cluster.Admin)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	// The spec's own writes are the tool, not the subject: no client-side
	// rate limit (client-go's default of 5 QPS makes filling a namespace
	// with hundreds of objects take minutes).
	admin.QPS = -1
	e.Writer, err = kubernetes.NewForConfig(admin)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	e.Pods = probe.QuorumPods(e.Writer, Namespace)
	e.User, err = c.RESTConfigFor(cluster.TestUser, e.Proxy.URL())
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return e
}

// Pod is a minimal pod in Namespace (nothing schedules it: there are no nodes).
func Pod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.invalid/none"}}},
	}
}

// Require returns c's capability T, or skips the spec saying which backend
// lacks what (for example a kubeconfig-only backend cannot restart etcd).
func Require[T any](c cluster.Cluster, what string) T {
	ginkgo.GinkgoHelper()
	v, ok := c.(T)
	if !ok {
		ginkgo.Skip(fmt.Sprintf("backend %s cannot %s", c.Name(), what))
	}
	return v
}

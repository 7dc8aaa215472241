package smoke

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/local"
	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/e2e/probe"
)

func pod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.invalid/none"}}},
	}
}

var _ = Describe("a pod informer on the local backend", Label("smoke", "backend:local", "fault:apiserver-restart"), func() {
	// The least-privileged test user's shared pod informer, connected through
	// the fault proxy, survives a hard kube-apiserver restart on the same
	// address and certificates: it converges to the server, delivers the
	// delete made after the restart, and its report names every
	// re-initialisation with a cause.
	//
	// Expected of client-go v0.36 (tools/cache/reflector.go, watch and
	// RunWithContext): the watch ends with a transport error when the process
	// dies, watch() returns, and ListAndWatch starts over with a streaming
	// list (or a LIST): one re-initialisation per lost watch, caused by the
	// transport error, possibly followed by refused or forbidden attempts
	// while the new apiserver starts.
	It("survives a hard apiserver restart and reports every request with its cause", func(ctx SpecContext) {
		c := e2e.StartLocal(ctx, local.Options{})
		proxy := e2e.StartProxy(c)
		admin, err := c.RESTConfig(cluster.Admin)
		Expect(err).NotTo(HaveOccurred())
		writer := kubernetes.NewForConfigOrDie(admin)
		server := probe.QuorumPods(writer, "default")

		By("creating pods before the informer starts")
		a, err := writer.CoreV1().Pods("default").Create(ctx, pod("a"), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		_, err = writer.CoreV1().Pods("default").Create(ctx, pod("b"), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())

		cfg, err := c.RESTConfigFor(cluster.TestUser, proxy.URL())
		Expect(err).NotTo(HaveOccurred())
		pods := e2e.StartProbe(ctx, "pods", cfg, probe.Options{Namespace: "default"})
		pods.EventuallyConverged(ctx, server)

		By("hard-restarting kube-apiserver, then writing through the new one")
		Expect(c.RestartAPIServer(ctx, 0, cluster.Hard)).To(Succeed())
		_, err = writer.CoreV1().Pods("default").Create(ctx, pod("c"), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(writer.CoreV1().Pods("default").Delete(ctx, "a", metav1.DeleteOptions{})).To(Succeed())

		recovery := pods.EventuallyConverged(ctx, server)
		pods.ExpectDeletesObserved(probe.Object{Key: "default/a", UID: string(a.UID)})

		n := pods.Report(recovery)
		GinkgoWriter.Printf("pods: %s\n", n)
		for _, ri := range probe.Reinitialisations(pods.Recorder.Snapshot()) {
			Expect(ri.Cause).NotTo(Equal(probe.CauseUnknown), "every re-initialisation has a cause: %s", ri)
		}
		Expect(n.Dials).To(BeNumerically(">=", 2), "the informer dialed again after the old connection died")
	})
})

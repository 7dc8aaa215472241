package smoke

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/probe"
)

var _ = Describe("a pod informer through every instrument", Label("smoke"), e2e.CapabilityAPIServerRestart.Label(), Label("disruptive"), func() {
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
		env, faultCtx := e2e.StartEnv(ctx, e2e.Setup{}, cluster.Spec{})
		c := e2e.Require[cluster.APIServerController](ctx, env.Backend, "restart kube-apiserver")
		writer, server := env.Writer, env.Pods

		By("creating pods before the informer starts")
		a, err := writer.CoreV1().Pods(env.Namespace).Create(ctx, e2e.Pod(env.Namespace, "a"), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		_, err = writer.CoreV1().Pods(env.Namespace).Create(ctx, e2e.Pod(env.Namespace, "b"), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())

		pods := env.StartProbe(ctx, "pods", env.User, probe.Options{Namespace: env.Namespace})
		pods.EventuallyConverged(ctx, server)

		By("hard-restarting kube-apiserver, then writing through the new one")
		Expect(c.RestartAPIServer(faultCtx, 0, cluster.Hard)).To(Succeed())
		_, err = writer.CoreV1().Pods(env.Namespace).Create(ctx, e2e.Pod(env.Namespace, "c"), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(writer.CoreV1().Pods(env.Namespace).Delete(ctx, "a", metav1.DeleteOptions{})).To(Succeed())

		recovery := pods.EventuallyConverged(ctx, server)
		pods.ExpectDeletesObserved(probe.Object{Key: env.Namespace + "/a", UID: string(a.UID)})

		n := pods.Report(recovery)
		GinkgoWriter.Printf("pods: %s\n", n)
		for _, ri := range probe.Reinitialisations(pods.Recorder.Snapshot()) {
			Expect(ri.Cause).NotTo(Equal(probe.CauseUnknown), "every re-initialisation has a cause: %s", ri)
		}
		Expect(n.Dials).To(BeNumerically(">=", 2), "the informer dialed again after the old connection died")
	})
})

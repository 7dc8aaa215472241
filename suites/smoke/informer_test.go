package smoke

import (
	"context"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/local"
	"github.com/informer-conformance/informer-conformance/e2e"
)

// seen records the names a handler was told about, per event kind.
type seen struct {
	mu                   sync.Mutex
	adds, deletes        []string
	deletesFromTombstone int
}

func (s *seen) handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.adds = append(s.adds, obj.(*corev1.Pod).Name)
		},
		DeleteFunc: func(obj any) {
			s.mu.Lock()
			defer s.mu.Unlock()
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				s.deletesFromTombstone++
				obj = t.Obj
			}
			s.deletes = append(s.deletes, obj.(*corev1.Pod).Name)
		},
	}
}

func (s *seen) Adds() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.adds...)
}
func (s *seen) Deletes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.deletes...)
}

func pod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.invalid/none"}}},
	}
}

var _ = Describe("the local backend", Label("smoke", "backend:local"), func() {
	// A shared informer of the least-privileged test user syncs from the real
	// apiserver and keeps delivering events across a hard apiserver restart
	// on the same address and certificates.
	It("serves a pod informer across a hard apiserver restart", func(ctx SpecContext) {
		c := e2e.StartLocal(ctx, local.Options{})
		cfg, err := c.RESTConfig(cluster.TestUser)
		Expect(err).NotTo(HaveOccurred())
		cs, err := kubernetes.NewForConfig(cfg)
		Expect(err).NotTo(HaveOccurred())

		By("creating a pod before the informer starts")
		_, err = cs.CoreV1().Pods("default").Create(ctx, pod("before"), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())

		factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace("default"))
		inf := factory.Core().V1().Pods().Informer()
		events := &seen{}
		_, err = inf.AddEventHandler(events.handler())
		Expect(err).NotTo(HaveOccurred())
		stop := make(chan struct{})
		factory.Start(stop)
		DeferCleanup(func() { close(stop); factory.Shutdown() })
		syncCtx, cancel := context.WithTimeout(ctx, e2e.SyncTimeout)
		defer cancel()
		Expect(cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced)).To(BeTrue(), "informer synced within %s", e2e.SyncTimeout)
		Expect(events.Adds()).To(ConsistOf("before"))

		By("hard-restarting kube-apiserver, then writing through the new one")
		Expect(c.RestartAPIServer(ctx, 0, cluster.Hard)).To(Succeed())
		_, err = cs.CoreV1().Pods("default").Create(ctx, pod("after"), metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(cs.CoreV1().Pods("default").Delete(ctx, "before", metav1.DeleteOptions{})).To(Succeed())

		Eventually(events.Adds).WithTimeout(e2e.EventTimeout).Should(ContainElement("after"), "the informer sees a pod created after the restart")
		Eventually(events.Deletes).WithTimeout(e2e.EventTimeout).Should(ConsistOf("before"), "the informer sees the delete made after the restart")
	})
})

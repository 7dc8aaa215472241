package scenarios

// TEMPORARY, for the merge of issue 29's branches: S13 writes with S11's
// pod writer, which suites/conformance/s11_ha_failover.go holds (startWriter,
// unexported, out of reach of package scenarios) until S11's body moves to
// scenarios/s11_ha_failover.go on another branch as StartPodWriter. This
// file is the part of that writer S13 uses, under the names it gets there;
// delete it when S11's move is merged (the build then reports
// PodWriter, StartPodWriter and writeInterval declared twice).

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/informer-conformance/informer-conformance/e2e"
	"github.com/informer-conformance/informer-conformance/e2e/probe"
)

// writeInterval paces the continuous writer.
const writeInterval = 50 * time.Millisecond

// PodWriter creates pods w-0, w-1, ... every writeInterval and deletes every
// second one right away, until stopped; it can pause between writes.
type PodWriter struct {
	mu        sync.Mutex // held for each write, so pause waits for the one in flight
	paused    bool
	writes    int
	namespace string
	deleted   []probe.Object
	err       error
	cancel    context.CancelFunc
	done      chan struct{}
}

// StartPodWriter starts a PodWriter writing through api in namespace until
// ctx ends or it is stopped.
func StartPodWriter(ctx context.Context, api corev1client.PodInterface, namespace string) *PodWriter {
	ctx, cancel := context.WithCancel(ctx)
	w := &PodWriter{namespace: namespace, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-time.After(writeInterval):
			}
			w.mu.Lock()
			if !w.paused && w.err == nil {
				w.err = w.write(ctx, api, i)
			}
			w.mu.Unlock()
		}
	}()
	return w
}

// write runs with w.mu held.
func (w *PodWriter) write(ctx context.Context, api corev1client.PodInterface, i int) error {
	p, err := api.Create(ctx, e2e.Pod(w.namespace, fmt.Sprintf("w-%d", i)), metav1.CreateOptions{})
	if ctx.Err() != nil {
		return nil // stopping
	}
	if err != nil {
		return fmt.Errorf("create pod w-%d: %w", i, err)
	}
	if i%2 == 1 {
		if err := api.Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
			if ctx.Err() != nil {
				return nil // stopping: the pod may still exist, so no delete is owed
			}
			return fmt.Errorf("delete pod %s: %w", p.Name, err)
		}
		w.deleted = append(w.deleted, probe.Object{Key: w.namespace + "/" + p.Name, UID: string(p.UID)})
	}
	w.writes++
	return nil
}

// Stop ends the writes and returns the pods deleted; it may be called again.
func (w *PodWriter) Stop() []probe.Object {
	ginkgo.GinkgoHelper()
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	Expect(w.err).NotTo(HaveOccurred(), "the writer's requests through apiserver 1")
	return w.deleted
}

package scenarios

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
	"github.com/informer-conformance/informer-conformance/probe"
)

// WriteStep is one write of a Writer, its i counting from 0: it returns the
// object it deleted, if it deleted one (only a delete that succeeded: a
// delete cancelled by Stop may not have happened, and no spec may then wait
// for its event), and the error that ends the writes.
type WriteStep func(ctx context.Context, i int) (deleted *probe.Object, err error)

// Writer is the background writer of the scenarios that write while they
// break the cluster (S11, S13, S25): one step every writeInterval until
// it is stopped or a step fails, which pauses between steps, and counts
// the steps done and the objects deleted.
type Writer struct {
	what     string // what it writes through, in the failure messages
	step     WriteStep
	mu       sync.Mutex // held for each step, so Pause waits for the one in flight
	paused   bool
	writes   int
	deleted  []probe.Object
	err      error
	cancel   context.CancelFunc
	done     chan struct{}
	stopOnce sync.Once
}

// StartWriter starts a Writer running step until ctx ends or it is
// stopped; what names what the writes go through ("the writes through
// apiserver 1").
func StartWriter(ctx context.Context, what string, step WriteStep) *Writer {
	ctx, cancel := context.WithCancel(ctx)
	w := &Writer{what: what, step: step, cancel: cancel, done: make(chan struct{})}
	go w.run(ctx)
	return w
}

func (w *Writer) run(ctx context.Context) {
	defer close(w.done)
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-time.After(writeInterval):
		}
		if !w.stepOnce(ctx, i) {
			return
		}
	}
}

// stepOnce runs step i unless paused and says whether the writes go on.
func (w *Writer) stepOnce(ctx context.Context, i int) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.paused {
		return true
	}
	deleted, err := w.step(ctx, i)
	if deleted != nil {
		w.deleted = append(w.deleted, *deleted)
	}
	switch {
	case ctx.Err() != nil: // stopping: an error is the cancellation's, the step not done
		return false
	case err != nil:
		w.err = err
		return false
	}
	w.writes++
	return true
}

// Count is how many steps are done.
func (w *Writer) Count() int { w.mu.Lock(); defer w.mu.Unlock(); return w.writes }

// Pause stops the writes after the one in flight; Resume starts them again.
func (w *Writer) Pause()  { w.mu.Lock(); w.paused = true; w.mu.Unlock() }
func (w *Writer) Resume() { w.mu.Lock(); w.paused = false; w.mu.Unlock() }

// WaitFor waits until n steps are done; a failed step fails the spec at
// once.
func (w *Writer) WaitFor(n int) {
	ginkgo.GinkgoHelper()
	Eventually(func() error {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.err != nil {
			return StopTrying(fmt.Sprintf("%s: %v", w.what, w.err))
		}
		if w.writes < n {
			return fmt.Errorf("%d of %d writes", w.writes, n)
		}
		return nil
	}).WithTimeout(writesTimeout).WithPolling(20*time.Millisecond).Should(Succeed(), "writes done (%s)", w.what)
}

// Stop ends the writes and returns the objects deleted; it may be called
// again. A failed step fails the spec.
func (w *Writer) Stop() []probe.Object {
	ginkgo.GinkgoHelper()
	w.stopOnce.Do(w.cancel)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	Expect(w.err).NotTo(HaveOccurred(), "every write succeeded (%s)", w.what)
	return w.deleted
}

// StartPodWriter starts a Writer through api that creates pods w-0, w-1,
// ... in namespace and deletes every second one right away.
func StartPodWriter(ctx context.Context, api corev1client.PodInterface, namespace string) *Writer {
	return StartWriter(ctx, "the pod writes", func(ctx context.Context, i int) (*probe.Object, error) {
		p, err := api.Create(ctx, e2e.Pod(namespace, fmt.Sprintf("w-%d", i)), metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("create pod w-%d: %w", i, err)
		}
		if i%2 == 0 {
			return nil, nil
		}
		if err := api.Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
			return nil, fmt.Errorf("delete pod %s: %w", p.Name, err)
		}
		return &probe.Object{Key: namespace + "/" + p.Name, UID: string(p.UID)}, nil
	})
}

package scenarios

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// cancelledDeletes creates every pod and holds every Delete until its
// context ends, then fails it as client-go does: the delete in flight when
// the writer stops.
type cancelledDeletes struct {
	corev1client.PodInterface // nil: only Create and Delete are called
	deleting                  chan struct{}
}

func (f *cancelledDeletes) Create(_ context.Context, p *corev1.Pod, _ metav1.CreateOptions) (*corev1.Pod, error) {
	p = p.DeepCopy()
	p.UID = types.UID("uid-" + p.Name)
	return p, nil
}

func (f *cancelledDeletes) Delete(ctx context.Context, _ string, _ metav1.DeleteOptions) error {
	select {
	case f.deleting <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return ctx.Err()
}

// TestPodWriterOwesNoCancelledDelete: a Delete cancelled by Stop may not
// have happened, so the writer must not count its pod as deleted (S11 would
// then wait for a Delete event that never comes). ff54d2f fixed it; the
// writer recorded the pod before.
func TestPodWriterOwesNoCancelledDelete(t *testing.T) {
	RegisterTestingT(t)
	api := &cancelledDeletes{deleting: make(chan struct{}, 1)}
	w := StartPodWriter(context.Background(), api, "default")
	select {
	case <-api.deleting: // w-1's Delete is in flight
	case <-time.After(10 * time.Second):
		t.Fatal("no Delete within 10 s")
	}
	if deleted := w.Stop(); len(deleted) != 0 {
		t.Errorf("pods recorded as deleted though their Delete was cancelled: %v", deleted)
	}
	if w.Count() != 1 {
		t.Errorf("writes %d, want 1 (w-0; w-1 stopped in its delete)", w.Count())
	}
}

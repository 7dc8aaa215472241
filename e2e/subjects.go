package e2e

import (
	"context"
	"fmt"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/probe"
)

// Subjects are the objects of the resource a spec's informers watch, as
// the spec writes and reads them by name: pods through the typed clientset
// (what every spec did before there were stacks, unchanged), the suite's
// custom resource (probe.WidgetsResource) through the dynamic client on
// the CRD stacks. A scenario that writes through Subjects runs on every
// stack against the resource the stack watches.
type Subjects struct {
	// Resource is the resource written.
	Resource  schema.GroupVersionResource
	namespace string
	typed     kubernetes.Interface      // pods
	custom    dynamic.ResourceInterface // any other resource
}

// NewSubjects writes resource in namespace: pods through cs, anything
// else through dc (which may then not be nil).
func NewSubjects(cs kubernetes.Interface, dc dynamic.Interface, resource schema.GroupVersionResource, namespace string) (*Subjects, error) {
	s := &Subjects{Resource: resource, namespace: namespace, typed: cs}
	if resource == probe.PodsResource {
		return s, nil
	}
	if dc == nil {
		return nil, fmt.Errorf("subjects %s: no dynamic client", resource)
	}
	s.custom = dc.Resource(resource).Namespace(namespace)
	return s, nil
}

// SubjectsFor writes the spec's resource (its stack's,
// probe.Stack.Resource) in the Env's namespace with clients of cfg: for a
// writer on another apiserver than the Env's (ConfigThrough).
func (e *Env) SubjectsFor(cfg *rest.Config) *Subjects {
	ginkgo.GinkgoHelper()
	cfg = rest.CopyConfig(cfg)
	cfg.QPS = -1 // the spec's writes are the tool: see StartEnv
	cs, err := kubernetes.NewForConfig(cfg)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	dc, err := dynamic.NewForConfig(cfg)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	s, err := NewSubjects(cs, dc, e.stack.Resource(), e.Namespace)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return s
}

// SubjectsOf writes resource (pods, or the suite's custom resource) in the
// Env's namespace with the admin's clients, as Env.Subjects writes the
// stack's: for a spec whose informers watch more than its stack's resource
// (S33 syncs one informer of every stack). For the custom resource the spec
// skips, as the CRD stacks' specs do, when the backend did not install the
// suite's CRDs.
func (e *Env) SubjectsOf(resource schema.GroupVersionResource) *Subjects {
	ginkgo.GinkgoHelper()
	if resource != probe.PodsResource {
		requireCRDs(e.fe, e.Backend, probe.StackDynamicCRD)
	}
	admin, err := e.Backend.RESTConfig(cluster.Admin)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	admin.QPS = -1 // the spec's writes are the tool: see StartEnv
	dc, err := dynamic.NewForConfig(admin)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	s, err := NewSubjects(e.Writer, dc, resource, e.Namespace)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return s
}

// Subjects writes the probe's resource with the probe's own clients
// (recorded like the informer's requests; on the typed stacks for pods, and
// the dynamic stacks for the custom resource, over the informers'
// connection).
func (o *Observed) Subjects() *Subjects {
	ginkgo.GinkgoHelper()
	s, err := NewSubjects(o.Client, o.Dynamic, o.Stack.Resource(), o.Namespace)
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "subjects of informer %s", o.Name)
	return s
}

// Name is the resource's plural name ("pods", "widgets"): what specs name
// their probes, and the path suffix of their requests.
func (s *Subjects) Name() string { return s.Resource.Resource }

// Key is the informer's key of the object name.
func (s *Subjects) Key(name string) string { return s.namespace + "/" + name }

// WidgetKind is the kind of probe.WidgetsResource (fixtures/crds/widgets.yaml).
const WidgetKind = "Widget"

// Widget is a minimal Widget in namespace.
func Widget(namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"size": int64(1)}}}
	u.SetAPIVersion(probe.WidgetsResource.GroupVersion().String())
	u.SetKind(WidgetKind)
	u.SetName(name)
	u.SetNamespace(namespace)
	return u
}

// Create creates the object name (a Pod or a Widget) and returns what
// identifies it.
func (s *Subjects) Create(ctx context.Context, name string) (probe.Object, error) {
	if s.custom == nil {
		p := Pod(s.namespace, name)
		got, err := s.typed.CoreV1().Pods(s.namespace).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			return probe.Object{}, fmt.Errorf("create pod %s: %w", name, err)
		}
		return objectOf(got), nil
	}
	w := Widget(s.namespace, name)
	got, err := s.custom.Create(ctx, w, metav1.CreateOptions{})
	if err != nil {
		return probe.Object{}, fmt.Errorf("create %s %s: %w", s.Name(), name, err)
	}
	return objectOf(got), nil
}

// Get reads the object name.
func (s *Subjects) Get(ctx context.Context, name string) (probe.Object, error) {
	if s.custom == nil {
		got, err := s.typed.CoreV1().Pods(s.namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return probe.Object{}, fmt.Errorf("get pod %s: %w", name, err)
		}
		return objectOf(got), nil
	}
	got, err := s.custom.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return probe.Object{}, fmt.Errorf("get %s %s: %w", s.Name(), name, err)
	}
	return objectOf(got), nil
}

// SetLabels reads the object name and updates it with labels in place of
// its own: a change every informer stack sees (metadata included).
func (s *Subjects) SetLabels(ctx context.Context, name string, labels map[string]string) (probe.Object, error) {
	if s.custom == nil {
		api := s.typed.CoreV1().Pods(s.namespace)
		p, err := api.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return probe.Object{}, fmt.Errorf("update pod %s: %w", name, err)
		}
		p.Labels = labels
		got, err := api.Update(ctx, p, metav1.UpdateOptions{})
		if err != nil {
			return probe.Object{}, fmt.Errorf("update pod %s: %w", name, err)
		}
		return objectOf(got), nil
	}
	w, err := s.custom.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return probe.Object{}, fmt.Errorf("update %s %s: %w", s.Name(), name, err)
	}
	w.SetLabels(labels)
	got, err := s.custom.Update(ctx, w, metav1.UpdateOptions{})
	if err != nil {
		return probe.Object{}, fmt.Errorf("update %s %s: %w", s.Name(), name, err)
	}
	return objectOf(got), nil
}

// Delete deletes the object name at once (a pod with grace period 0).
func (s *Subjects) Delete(ctx context.Context, name string) error {
	var err error
	if s.custom == nil {
		err = s.typed.CoreV1().Pods(s.namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	} else {
		err = s.custom.Delete(ctx, name, metav1.DeleteOptions{})
	}
	if err != nil {
		return fmt.Errorf("delete %s %s: %w", s.Name(), name, err)
	}
	return nil
}

// List lists the objects with opts (resourceVersion "" is a quorum read).
func (s *Subjects) List(ctx context.Context, opts metav1.ListOptions) ([]probe.Object, error) {
	var objs []probe.Object
	if s.custom == nil {
		l, err := s.typed.CoreV1().Pods(s.namespace).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for i := range l.Items {
			objs = append(objs, objectOf(&l.Items[i]))
		}
		return objs, nil
	}
	l, err := s.custom.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	for i := range l.Items {
		objs = append(objs, objectOf(&l.Items[i]))
	}
	return objs, nil
}

// Quorum is the convergence checks' view of the server: the objects read
// with a quorum read (probe.QuorumPods for pods).
func (s *Subjects) Quorum() probe.Lister {
	if s.custom == nil {
		return probe.QuorumPods(s.typed, s.namespace)
	}
	return func(ctx context.Context) ([]probe.Object, error) {
		objs, err := s.List(ctx, metav1.ListOptions{ResourceVersion: ""})
		if err != nil {
			return nil, fmt.Errorf("quorum list of %s: %w", s.Name(), err)
		}
		return objs, nil
	}
}

func objectOf(obj metav1.Object) probe.Object {
	return probe.Object{Key: obj.GetNamespace() + "/" + obj.GetName(), UID: string(obj.GetUID()), ResourceVersion: obj.GetResourceVersion()}
}

// requireCRDs skips the spec when the backend did not install the suite's
// CRDs because it may not (an existing cluster whose user may not create
// them), and fails it when the install failed otherwise.
func requireCRDs(fe FrontEnd, c cluster.Cluster, stack probe.Stack) {
	ginkgo.GinkgoHelper()
	cr, ok := c.(cluster.CustomResources)
	if !ok {
		fe.Skip(fmt.Sprintf("backend %s does not install the suite's CRDs (stack %s)", c.Name(), stack))
	}
	err := cr.CRDsInstalled()
	if apierrors.IsForbidden(err) {
		fe.Skip(fmt.Sprintf("stack %s: the suite's CRDs are not installed: %v", stack, err))
	}
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "the backend installed the suite's CRDs (stack %s)", stack)
}

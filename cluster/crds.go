package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/informer-conformance/informer-conformance/fixtures"
)

// CRDInstallTimeout bounds installing the suite's CustomResourceDefinitions:
// the create, the Established condition, and every kube-apiserver serving
// the new resource. With one apiserver (--apiserver-count 1, the default)
// the establishing controller sets Established as soon as the names are
// accepted; with more it waits 5 s first (apiextensions-apiserver
// pkg/apiserver/customresource_handler.go updateCustomResourceDefinition:
// QueueCRD(name, 5*time.Second) when masterCount > 1). Measured on the
// local backend: 85-145 ms (one and two apiservers, load average 9).
const CRDInstallTimeout = 30 * time.Second

// crdPoll is how often an install looks again.
const crdPoll = 50 * time.Millisecond

// CustomResources clusters had the suite's CustomResourceDefinitions
// (fixtures/crds) installed by their backend: the dynamic-crd informer
// stack watches their resource.
type CustomResources interface {
	// CRDsInstalled is nil when the suite's CRDs are installed and served,
	// else why not (an existing cluster whose user may not create
	// CustomResourceDefinitions); specs on the CRD stacks skip with it.
	CRDsInstalled() error
}

var crdsResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// fixtureCRDs are the suite's CRDs, parsed.
func fixtureCRDs() ([]*unstructured.Unstructured, error) {
	docs, err := fixtures.CRDs()
	if err != nil {
		return nil, fmt.Errorf("read fixtures/crds: %w", err)
	}
	var crds []*unstructured.Unstructured
	for _, d := range docs {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(d, &u.Object); err != nil {
			return nil, fmt.Errorf("parse fixtures/crds: %w", err)
		}
		crds = append(crds, u)
	}
	return crds, nil
}

// CRDResource is the resource a CustomResourceDefinition serves (its storage
// version).
func CRDResource(crd *unstructured.Unstructured) schema.GroupVersionResource {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	gvr := schema.GroupVersionResource{Group: group, Resource: plural}
	for _, v := range versions {
		m, _ := v.(map[string]any)
		if storage, _ := m["storage"].(bool); storage {
			gvr.Version, _ = m["name"].(string)
		}
	}
	return gvr
}

// CRDResources are the resources of the suite's CRDs, for RBAC rules and
// clean-ups.
func CRDResources() ([]schema.GroupVersionResource, error) {
	crds, err := fixtureCRDs()
	if err != nil {
		return nil, err
	}
	var out []schema.GroupVersionResource
	for _, c := range crds {
		out = append(out, CRDResource(c))
	}
	return out, nil
}

// InstallCRDs creates the suite's CustomResourceDefinitions (fixtures/crds)
// through the first config, tolerating those that exist (a cluster reused
// across runs, or shared by several processes), waits until each is
// Established, then until the kube-apiserver of every config lists its
// resource: another apiserver learns of a CRD from its own informer, and a
// write through it before then is answered 404. Bounded by
// CRDInstallTimeout. The CRDs live in etcd: they survive apiserver restarts
// and, taken after the install, etcd snapshots.
func InstallCRDs(ctx context.Context, cfgs ...*rest.Config) error {
	if len(cfgs) == 0 {
		return errors.New("install crds: no client config")
	}
	ctx, cancel := context.WithTimeout(ctx, CRDInstallTimeout)
	defer cancel()
	crds, err := fixtureCRDs()
	if err != nil {
		return fmt.Errorf("install crds: %w", err)
	}
	clients := make([]dynamic.Interface, len(cfgs))
	for i, cfg := range cfgs {
		if clients[i], err = dynamic.NewForConfig(cfg); err != nil {
			return fmt.Errorf("install crds: %w", err)
		}
	}
	for _, crd := range crds {
		if err := installCRD(ctx, clients, crd); err != nil {
			return fmt.Errorf("install crd %s: %w", crd.GetName(), err)
		}
	}
	return nil
}

func installCRD(ctx context.Context, clients []dynamic.Interface, crd *unstructured.Unstructured) error {
	api := clients[0].Resource(crdsResource)
	gvr := CRDResource(crd)
	_, err := api.Create(ctx, crd, metav1.CreateOptions{})
	switch {
	case apierrors.IsForbidden(err):
		// A user who may not create CRDs (an existing cluster) can still
		// use them when somebody installed them.
		if _, lerr := clients[0].Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1}); lerr != nil {
			return fmt.Errorf("%w (and %s are not served: %v)", err, gvr.Resource, lerr)
		}
		return nil
	case err != nil && !apierrors.IsAlreadyExists(err):
		return err
	}
	var last error
	err = wait.PollUntilContextCancel(ctx, crdPoll, true, func(ctx context.Context) (bool, error) {
		got, err := api.Get(ctx, crd.GetName(), metav1.GetOptions{})
		if err != nil {
			last = err
			return false, nil
		}
		last = fmt.Errorf("not Established yet (conditions %v)", conditions(got))
		return established(got), nil
	})
	if err != nil {
		return fmt.Errorf("wait for Established: %w (last: %v)", err, last)
	}
	for i, c := range clients {
		err := wait.PollUntilContextCancel(ctx, crdPoll, true, func(ctx context.Context) (bool, error) {
			_, last = c.Resource(gvr).List(ctx, metav1.ListOptions{Limit: 1})
			return last == nil, nil
		})
		if err != nil {
			return fmt.Errorf("wait for apiserver %d to serve %s: %w (last: %v)", i, gvr.Resource, err, last)
		}
	}
	return nil
}

// established says whether a CRD's Established condition is True.
func established(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

func conditions(crd *unstructured.Unstructured) []string {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	var out []string
	for _, c := range conds {
		m, _ := c.(map[string]any)
		out = append(out, fmt.Sprintf("%v=%v", m["type"], m["status"]))
	}
	return out
}

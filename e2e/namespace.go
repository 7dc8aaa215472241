package e2e

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/informer-conformance/informer-conformance/cluster"
)

// NamespacePrefix starts the name of every namespace the specs create on a
// shared backend (labelled app.kubernetes.io/created-by=informer-conformance).
const NamespacePrefix = "informer-conformance-"

// NamespaceCleanupTimeout bounds removing a spec's namespace on a shared
// backend: deleting what the spec created, the namespace, and finalizing it.
const NamespaceCleanupTimeout = 30 * time.Second

// discoveryRequestTimeout bounds each discovery request of a cleanup
// (discovery's calls take no context).
const discoveryRequestTimeout = 10 * time.Second

// cleanupNamespace removes namespace ns and what the specs create in it
// (pods, with grace period 0, configmaps, secrets, service accounts, the
// suite's custom resources), within
// ctx. A namespace is only gone once its "kubernetes" finalizer is removed,
// the namespace controller's job after it has emptied the namespace; a
// cluster without one (hack/local-up: kube-apiserver and etcd, nothing
// else) leaves it Terminating for ever. So once the namespace is
// Terminating and a listing of every namespaced resource the server serves
// finds nothing in it (the namespace controller's own condition; no object
// can be created in a Terminating namespace), cleanupNamespace finalizes it
// itself: PUT /finalize with spec.finalizers emptied. Anything else in it
// (another controller's objects) is left to the cluster's controllers: it
// waits for the namespace to go until ctx ends.
//
// It returns what is still there when it gives up (nil when the namespace
// is gone), and an error only for a delete, finalize or watch of its own
// that failed.
func cleanupNamespace(ctx context.Context, cs kubernetes.Interface, admin *rest.Config, ns string) (left []string, err error) {
	var errs []error
	core := cs.CoreV1()
	// The namespace first: once it is Terminating nothing can be created in
	// it (a controller recreating its "default" service account), and what
	// is in it can still be deleted.
	if err := core.Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return []string{"namespace " + ns}, fmt.Errorf("delete namespace %s: %w", ns, err)
	}
	all := metav1.ListOptions{}
	for _, d := range []struct {
		what string
		del  func() error
	}{
		{"pods", func() error {
			return core.Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}, all)
		}},
		{"configmaps", func() error { return core.ConfigMaps(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all) }},
		{"secrets", func() error { return core.Secrets(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all) }},
		{"serviceaccounts", func() error { return core.ServiceAccounts(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all) }},
	} {
		if err := d.del(); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete the %s of namespace %s: %w", d.what, ns, err))
		}
	}
	// Listing every resource is some 40 requests: no client-side rate
	// limit, and no deprecation warnings for the resources listed.
	lcfg := rest.CopyConfig(admin)
	lcfg.QPS = -1
	lcfg.WarningHandler = rest.NoWarnings{}
	md, err := metadata.NewForConfig(lcfg)
	if err != nil {
		return []string{"namespace " + ns}, errors.Join(append(errs, err)...)
	}
	// The suite's custom resources (the dynamic-crd stack's), NotFound
	// where the backend could not install their CRDs.
	crs, err := cluster.CRDResources()
	errs = append(errs, err)
	for _, r := range crs {
		if err := md.Resource(r).Namespace(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete the %s of namespace %s: %w", r.Resource, ns, err))
		}
	}
	dcfg := rest.CopyConfig(lcfg)
	dcfg.Timeout = discoveryRequestTimeout
	dc, err := discovery.NewDiscoveryClientForConfig(dcfg)
	if err != nil {
		return []string{"namespace " + ns}, errors.Join(append(errs, err)...)
	}
	for {
		n, err := core.Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, errors.Join(errs...)
		}
		if err != nil {
			return []string{"namespace " + ns}, errors.Join(append(errs, fmt.Errorf("get namespace %s: %w", ns, err))...)
		}
		content, complete, err := namespaceContent(ctx, dc, md, ns)
		left = append([]string{fmt.Sprintf("namespace %s (%s, finalizers %v)", ns, n.Status.Phase, n.Spec.Finalizers)}, content...)
		if err != nil && ctx.Err() == nil {
			// Not the spec's fault (an aggregated API down, ...): named
			// with what is left, should the namespace stay.
			left = append(left, "(not all of it could be listed: "+err.Error()+")")
		}
		if ctx.Err() != nil {
			return left, errors.Join(errs...)
		}
		if complete && len(content) == 0 && n.DeletionTimestamp != nil && len(n.Spec.Finalizers) > 0 {
			n.Spec.Finalizers = nil
			_, err := core.Namespaces().Finalize(ctx, n, metav1.UpdateOptions{})
			switch {
			case err == nil, apierrors.IsNotFound(err), apierrors.IsConflict(err):
				continue // gone, or changed meanwhile (a namespace controller): look again
			default:
				return left, errors.Join(append(errs, fmt.Errorf("finalize namespace %s: %w", ns, err))...)
			}
		}
		// Something is left (or the server's resources could not all be
		// listed): the cluster's controllers may still remove it. Wait for
		// the namespace to change, then look again.
		if err := namespaceChanged(ctx, core, n); err != nil {
			if ctx.Err() != nil {
				return left, errors.Join(errs...)
			}
			return left, errors.Join(append(errs, err)...)
		}
	}
}

// namespaceContent lists every object in namespace ns, of every namespaced
// resource the server lists ("pods/p1", ...). complete is false when some
// resources could not be discovered or listed.
func namespaceContent(ctx context.Context, dc discovery.DiscoveryInterface, md metadata.Interface, ns string) (content []string, complete bool, err error) {
	lists, err := dc.ServerPreferredNamespacedResources()
	complete = err == nil
	var errs []error
	if err != nil {
		errs = append(errs, fmt.Errorf("discover the server's resources: %w", err))
	}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") {
				continue
			}
			objs, err := md.Resource(gv.WithResource(r.Name)).Namespace(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				if !apierrors.IsNotFound(err) {
					complete = false
					errs = append(errs, fmt.Errorf("list %s in namespace %s: %w", r.Name, ns, err))
				}
				continue
			}
			for _, o := range objs.Items {
				content = append(content, r.Name+"/"+o.Name)
			}
		}
	}
	return content, complete, errors.Join(errs...)
}

// namespaceChanged returns when namespace n changes (or goes) after the
// version read, or when ctx ends (with ctx's error).
func namespaceChanged(ctx context.Context, core typedcorev1.CoreV1Interface, n *corev1.Namespace) error {
	opts := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", n.Name).String(), ResourceVersion: n.ResourceVersion}
	if d, ok := ctx.Deadline(); ok {
		opts.TimeoutSeconds = ptr.To(int64(time.Until(d).Seconds()) + 1)
	}
	w, err := core.Namespaces().Watch(ctx, opts)
	if err != nil {
		return fmt.Errorf("watch namespace %s: %w", n.Name, err)
	}
	defer w.Stop()
	select {
	case <-w.ResultChan(): // an event, or the watch ended: look again
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

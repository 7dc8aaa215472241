// Command existing-leftovers lists what the suite's runs on the existing
// backend left on a cluster: namespaces labelled
// app.kubernetes.io/created-by=informer-conformance, and pods, configmaps,
// secrets and service accounts in namespaces named like the suite's
// (informer-conformance-*), also those whose namespace is gone. It exits 1
// if there are any. hack/e2e-existing-local.sh runs it after the suite.
//
//	go run ./hack/existing-leftovers -kubeconfig "$KUBECONFIG"
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// The suite's namespaces (e2e.useOwnNamespace).
const (
	namespacePrefix = "informer-conformance-"
	createdBy       = "app.kubernetes.io/created-by=informer-conformance"
)

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster")
	timeout := flag.Duration("timeout", 30*time.Second, "bound on the whole check")
	flag.Parse()
	left, err := leftovers(*kubeconfig, *timeout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "existing-leftovers:", err)
		os.Exit(2)
	}
	if len(left) > 0 {
		fmt.Fprintf(os.Stderr, "existing-leftovers: the suite left %d objects on the cluster:\n  %s\n", len(left), strings.Join(left, "\n  "))
		os.Exit(1)
	}
	fmt.Println("existing-leftovers: nothing the suite created is left on the cluster")
}

func leftovers(kubeconfig string, timeout time.Duration) ([]string, error) {
	if kubeconfig == "" {
		return nil, fmt.Errorf("no kubeconfig: pass -kubeconfig or set KUBECONFIG")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var left []string
	nss, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: createdBy})
	if err != nil {
		return nil, fmt.Errorf("list namespaces: %w", err)
	}
	for _, ns := range nss.Items {
		left = append(left, fmt.Sprintf("namespace %s (%s, finalizers %v)", ns.Name, ns.Status.Phase, ns.Spec.Finalizers))
	}
	type lister func() ([]metav1.Object, error)
	kinds := map[string]lister{
		"pod": func() ([]metav1.Object, error) {
			l, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
			return objects(l, err, func() []metav1.Object {
				var o []metav1.Object
				for i := range l.Items {
					o = append(o, &l.Items[i])
				}
				return o
			})
		},
		"configmap": func() ([]metav1.Object, error) {
			l, err := cs.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{})
			return objects(l, err, func() []metav1.Object {
				var o []metav1.Object
				for i := range l.Items {
					o = append(o, &l.Items[i])
				}
				return o
			})
		},
		"secret": func() ([]metav1.Object, error) {
			l, err := cs.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
			return objects(l, err, func() []metav1.Object {
				var o []metav1.Object
				for i := range l.Items {
					o = append(o, &l.Items[i])
				}
				return o
			})
		},
		"serviceaccount": func() ([]metav1.Object, error) {
			l, err := cs.CoreV1().ServiceAccounts("").List(ctx, metav1.ListOptions{})
			return objects(l, err, func() []metav1.Object {
				var o []metav1.Object
				for i := range l.Items {
					o = append(o, &l.Items[i])
				}
				return o
			})
		},
	}
	for _, kind := range []string{"pod", "configmap", "secret", "serviceaccount"} {
		objs, err := kinds[kind]()
		if err != nil {
			return nil, fmt.Errorf("list %ss: %w", kind, err)
		}
		for _, o := range objs {
			if strings.HasPrefix(o.GetNamespace(), namespacePrefix) {
				left = append(left, fmt.Sprintf("%s %s/%s", kind, o.GetNamespace(), o.GetName()))
			}
		}
	}
	return left, nil
}

func objects[L any](l L, err error, items func() []metav1.Object) ([]metav1.Object, error) {
	if err != nil {
		return nil, err
	}
	return items(), nil
}

package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/informer-conformance/informer-conformance/cluster"
)

const (
	readyTimeout  = 2 * time.Minute
	readyInterval = 25 * time.Millisecond
)

// waitReady is every row's finish line: GET /readyz answers "ok" but for
// the hooks that only make sure bootstrap objects exist
// (cluster.BootstrapReconcileChecks: each first looks a second after the
// server starts, whatever etcd holds; envtest and kwok wait for neither,
// the local backend's template start neither), then a clientset made from
// cfg lists namespaces and writes a ConfigMap (etcd, admission and
// authorization at work). It polls every 25 ms (a row whose own start-up
// already waited for readiness passes at the first try).
func waitReady(ctx context.Context, cfg *rest.Config) error {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = 5 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	for {
		err := probe(ctx, cs)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready: %w (last: %v)", ctx.Err(), err)
		case <-time.After(readyInterval):
		}
	}
}

func probe(ctx context.Context, cs kubernetes.Interface) error {
	req := cs.Discovery().RESTClient().Get().AbsPath("/readyz")
	for _, check := range cluster.BootstrapReconcileChecks {
		req = req.Param("exclude", check)
	}
	body, err := req.DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("/readyz: %w", err)
	}
	if strings.TrimSpace(string(body)) != "ok" {
		return fmt.Errorf("/readyz: %q", body)
	}
	if _, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err != nil {
		return fmt.Errorf("list namespaces: %w", err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "startbench-", Namespace: metav1.NamespaceDefault}}
	if _, err := cs.CoreV1().ConfigMaps(metav1.NamespaceDefault).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("write a ConfigMap: %w", err)
	}
	return nil
}

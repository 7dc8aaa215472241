package faultproxy_test

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/faultproxy"
	"github.com/informer-conformance/informer-conformance/cluster/local"
	"github.com/informer-conformance/informer-conformance/cluster/local/localtest"
)

// TestInFrontOfARealAPIServer: TLS passes through the proxy (the client
// verifies kube-apiserver's own certificate), client-go shares one HTTP/2
// connection through it, a blackhole makes requests hang, a reset makes the
// client dial again.
func TestInFrontOfARealAPIServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := localtest.Start(t, local.Options{})
	p, err := faultproxy.Start(c.APIServerAddr(0))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	cfg, err := c.RESTConfigFor(cluster.TestUser, p.URL())
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); err != nil {
			t.Fatalf("list through the proxy: %v", err)
		}
	}
	if s := p.Stats(); s.Accepted != 1 {
		t.Errorf("three requests dialed %d connections, want one shared HTTP/2 connection", s.Accepted)
	}

	restore := p.Blackhole()
	short, cancelShort := context.WithTimeout(ctx, time.Second)
	_, err = cs.CoreV1().Pods("default").List(short, metav1.ListOptions{})
	cancelShort()
	if err == nil {
		t.Fatalf("a request through the blackhole succeeded")
	}
	restore()

	p.ResetAll()
	// The RST reaches the client's connection asynchronously: a request
	// written before its read loop saw it fails once ("write: broken pipe";
	// x/net/http2 replays only requests that never reached a usable
	// connection), and the next one dials again.
	var failures []error
	for len(failures) < 2 {
		_, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if err == nil {
			break
		}
		failures = append(failures, err)
	}
	if len(failures) > 1 {
		t.Fatalf("list after the connection was reset failed twice: %v", failures)
	}
	if s := p.Stats(); s.Accepted != 2 {
		t.Errorf("accepted %d connections, want a second one after the reset", s.Accepted)
	}
}

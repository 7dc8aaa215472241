package local

// What the cluster installs once it serves: the test user's RBAC and the suite's CRDs.

import (
	"context"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/informer-conformance/informer-conformance/cluster"
)

// grantTestUser gives the test user what informers under test need, and no more.
func (c *Cluster) grantTestUser(ctx context.Context) error {
	cfg, err := c.RESTConfig(cluster.Admin)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	return cluster.GrantTestUser(ctx, cs)
}

// installCRDs installs the suite's CRDs and waits until every apiserver
// serves them. They live in etcd, so they survive apiserver restarts and
// the restores of snapshots taken after this (every spec's).
func (c *Cluster) installCRDs(ctx context.Context) error {
	var cfgs []*rest.Config
	for i := range c.apiservers {
		cfg, err := c.RESTConfigFor(cluster.Admin, c.APIServerURL(i))
		if err != nil {
			return err
		}
		cfgs = append(cfgs, cfg)
	}
	return cluster.InstallCRDs(ctx, cfgs...)
}

// CRDsInstalled implements cluster.CustomResources: Start installed them or
// failed.
func (c *Cluster) CRDsInstalled() error { return nil }

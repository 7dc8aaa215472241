package kind

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"sigs.k8s.io/kind/pkg/cluster/nodeutils"

	"github.com/informer-conformance/informer-conformance/cluster"
	"github.com/informer-conformance/informer-conformance/cluster/binaries"
	"github.com/informer-conformance/informer-conformance/cluster/kind/nodeimage"
)

// apiserverImageRE finds the image line of kubeadm's kube-apiserver static
// pod manifest ("    image: registry.k8s.io/kube-apiserver:v1.37.2").
var apiserverImageRE = regexp.MustCompile(`(?m)^(\s*image:\s*)(\S*/kube-apiserver):(\S+)\s*$`)

// SwitchAPIServer implements cluster.APIServerUpgrader, as a control-plane
// upgrade on a kubeadm node does it: kube-apiserver version's image goes
// into node i's containerd (made here from the host's build of that version,
// binaries.Built, the node image's way: nodeimage.SaveComponentImage; the
// node image's own version is there already), apiserver i stops (mode; one
// stopped already stays so), its static pod manifest names the image, and
// the kubelet starts it with the same flags, certificates, port and etcd.
// Returns when its own /readyz is ok.
func (c *Cluster) SwitchAPIServer(ctx context.Context, i int, version string, mode cluster.StopMode) error {
	if err := c.checkIndex(i); err != nil {
		return err
	}
	v, err := binaries.Versions{KubeAPIServer: version}.Normalize()
	if err != nil {
		return err
	}
	version = v.KubeAPIServer
	fail := func(err error) error {
		return fmt.Errorf("switch the %s to %s: %w", c.apiserverName(i), version, err)
	}
	c.mu.Lock()
	stopped := c.stopped[i]
	c.mu.Unlock()
	path := manifest
	if stopped {
		path = stoppedManifest
	}
	m, err := c.readNodeFileOn(ctx, i, path)
	if err != nil {
		return fail(err)
	}
	found := apiserverImageRE.FindSubmatch(m)
	if found == nil {
		return fail(fmt.Errorf("no kube-apiserver image in %s", path))
	}
	ref := string(found[2]) + ":" + version
	if err := c.ensureAPIServerImage(ctx, i, ref, version); err != nil {
		return fail(err)
	}
	if !stopped {
		if err := c.StopAPIServer(ctx, i, mode); err != nil {
			return fail(err)
		}
	}
	edited := apiserverImageRE.ReplaceAll(m, []byte("${1}"+ref))
	if _, err := c.nodeRun(ctx, i, strings.NewReader(string(edited)), "cp", "/dev/stdin", stoppedManifest); err != nil {
		return fail(err)
	}
	c.mu.Lock()
	if version == c.version {
		delete(c.switched, i)
	} else {
		c.switched[i] = version
	}
	c.mu.Unlock()
	if err := c.StartAPIServer(ctx, i); err != nil {
		return fail(err)
	}
	return nil
}

// APIServerVersion implements cluster.APIServerUpgrader.
func (c *Cluster) APIServerVersion(i int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.switched[i]; ok {
		return v
	}
	return c.version
}

// ensureAPIServerImage makes sure node i's containerd has ref, loading
// it from the host's build of kube-apiserver version when it has not.
func (c *Cluster) ensureAPIServerImage(ctx context.Context, i int, ref, version string) error {
	n, err := c.nodeAt(i)
	if err != nil {
		return err
	}
	if _, err := nodeutils.ImageID(n, ref); err == nil {
		return nil
	}
	bin, _, err := binaries.Built(version, binaries.Options{})
	if err != nil {
		return fmt.Errorf("node %s has no image %s, and the host has no kube-apiserver %s to make it of: %w", n, ref, version, err)
	}
	dir, err := os.MkdirTemp(c.dir, "apiserver-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	archive := filepath.Join(dir, "kube-apiserver.tar")
	if err := nodeimage.SaveComponentImage(ctx, c.d, ref, bin, archive); err != nil {
		return fmt.Errorf("make image %s of %s: %w", ref, bin, err)
	}
	return c.LoadImageArchive(ctx, archive, []string{n.String()})
}

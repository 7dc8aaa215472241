package kind

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/kind/pkg/cluster/nodes"
	"sigs.k8s.io/kind/pkg/cluster/nodeutils"
)

// LoadImages loads images from the host's Docker into the containerd of
// the cluster's nodes (nodeNames, kind's container names; none: every node
// but the load balancer), so pods run them without a registry. It does what
// `kind load docker-image` does (kind v0.33 pkg/cmd/kind/load/docker-image
// runE): a node whose containerd has every image under its name with the
// host's ID is skipped; for the others one `docker save` of all the images,
// imported on each node by kind's nodeutils.LoadImageArchive (`ctr
// --namespace=k8s.io images import` with the node's snapshotter).
func (c *Cluster) LoadImages(ctx context.Context, nodeNames []string, images ...string) error {
	if len(images) == 0 {
		return errors.New("load images into kind nodes: no image named")
	}
	images = slices.Compact(slices.Sorted(slices.Values(images)))
	ids := make([]string, len(images))
	for i, image := range images {
		out, err := c.d.Run(ctx, nil, "image", "inspect", "--format", "{{.Id}}", image)
		if err != nil {
			return fmt.Errorf("load image %s into kind cluster %s: not in the host's Docker (docker pull, build or import it first): %w", image, c.name, err)
		}
		ids[i] = strings.TrimSpace(string(out))
	}
	targets, err := c.internalNodes(nodeNames)
	if err != nil {
		return err
	}
	var missing []nodes.Node
	for _, n := range targets {
		for i, image := range images {
			if id, err := nodeutils.ImageID(n, image); err != nil || id != ids[i] {
				missing = append(missing, n)
				break
			}
		}
	}
	if len(missing) == 0 {
		fmt.Fprintf(c.progress, "kind: %s already on every node of %s\n", strings.Join(images, ", "), c.name)
		return nil
	}
	dir, err := os.MkdirTemp(c.dir, "images-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	archive := filepath.Join(dir, "images.tar")
	if _, err := c.d.Run(ctx, nil, append([]string{"save", "-o", archive}, images...)...); err != nil {
		return fmt.Errorf("load images into kind cluster %s: %w", c.name, err)
	}
	return c.importArchive(ctx, archive, missing)
}

// LoadImageArchive loads the images of an archive (`docker save`'s format,
// or an OCI archive) into the containerd of the cluster's nodes (nodeNames;
// none: every node but the load balancer), as `kind load image-archive`
// does (kind v0.33 pkg/cmd/kind/load/image-archive loadArchiveToNodes).
func (c *Cluster) LoadImageArchive(ctx context.Context, archive string, nodeNames []string) error {
	if _, err := os.Stat(archive); err != nil {
		return fmt.Errorf("load image archive into kind cluster %s: %w", c.name, err)
	}
	targets, err := c.internalNodes(nodeNames)
	if err != nil {
		return err
	}
	return c.importArchive(ctx, archive, targets)
}

// importArchive imports archive on each node, one after the other (a
// cluster has at most MaxAPIServers nodes).
func (c *Cluster) importArchive(ctx context.Context, archive string, targets []nodes.Node) error {
	for _, n := range targets {
		if err := ctx.Err(); err != nil {
			return err
		}
		f, err := os.Open(archive)
		if err != nil {
			return err
		}
		err = nodeutils.LoadImageArchive(n, f)
		f.Close()
		if err != nil {
			return fmt.Errorf("load %s into kind node %s: %w", filepath.Base(archive), n, err)
		}
		fmt.Fprintf(c.progress, "kind: loaded %s into node %s\n", archive, n)
	}
	return nil
}

// internalNodes are the cluster's nodes named (all without names), the
// load balancer never among them (kind's ListInternalNodes).
func (c *Cluster) internalNodes(names []string) ([]nodes.Node, error) {
	all, err := c.provider.ListInternalNodes(c.name)
	if err != nil {
		return nil, fmt.Errorf("kind cluster %s: list nodes: %w", c.name, err)
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("kind cluster %s has no nodes (was it deleted?)", c.name)
	}
	if len(names) == 0 {
		return all, nil
	}
	byName := map[string]nodes.Node{}
	var known []string
	for _, n := range all {
		byName[n.String()] = n
		known = append(known, n.String())
	}
	var out []nodes.Node
	for _, name := range names {
		n, ok := byName[name]
		if !ok {
			return nil, fmt.Errorf("kind cluster %s has no node %q (its nodes: %s)", c.name, name, strings.Join(known, ", "))
		}
		out = append(out, n)
	}
	return out, nil
}

package kind

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/gofrs/flock"
	kindcluster "sigs.k8s.io/kind/pkg/cluster"
	"sigs.k8s.io/kind/pkg/log"

	"github.com/informer-conformance/informer-conformance/cluster/kind/docker"
	"github.com/informer-conformance/informer-conformance/cluster/kind/lbimage"
	"github.com/informer-conformance/informer-conformance/cluster/kind/nodeimage"
)

// Each cluster has a work directory os.TempDir()/informer-conformance-kind/<name>
// with an owner lock its process holds while the cluster lives. The lock is
// taken before kind creates anything, so a cluster without a held lock has
// no live owner: its process ended without deleting it (SIGKILL, a crash).
const ownerLockName = ".owner.lock"

func workRoot() string { return filepath.Join(os.TempDir(), "informer-conformance-kind") }

func newWorkDir(name string) (string, *flock.Flock, error) {
	dir := filepath.Join(workRoot(), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, err
	}
	l := flock.New(filepath.Join(dir, ownerLockName))
	ok, err := l.TryLock()
	if err != nil {
		return "", nil, err
	}
	if !ok {
		return "", nil, fmt.Errorf("kind cluster %s is in use by another process (lock %s)", name, l.Path())
	}
	return dir, l, nil
}

// ReapStale deletes the kind clusters this project created whose owner is
// gone (a process killed without deleting its cluster), with kind's own
// delete, and their work directories; it returns their names. Clusters of
// live owners, and everything not named NamePrefix*, are left alone.
func ReapStale(ctx context.Context) ([]string, error) {
	p := kindcluster.NewProvider(kindcluster.ProviderWithDocker(), kindcluster.ProviderWithLogger(log.NoopLogger{}))
	names, err := p.List()
	if err != nil {
		return nil, fmt.Errorf("kind get clusters: %w", err)
	}
	var removed []string
	var errs []error
	for _, name := range names {
		if !strings.HasPrefix(name, NamePrefix) {
			continue
		}
		dir := filepath.Join(workRoot(), name)
		l := flock.New(filepath.Join(dir, ownerLockName))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			errs = append(errs, err)
			continue
		}
		if ok, err := l.TryLock(); err != nil || !ok {
			continue // its owner lives
		}
		if err := p.Delete(name, ""); err != nil {
			errs = append(errs, fmt.Errorf("kind delete cluster %s: %w", name, err))
		} else {
			removed = append(removed, name)
		}
		_ = os.RemoveAll(dir)
		_ = l.Unlock()
	}
	return removed, errors.Join(errs...)
}

// ContainerOwnerValues are the owner label values this project sets on
// containers (never on images): the node image build container, the
// privileged-container probe and the load balancer image's check.
var ContainerOwnerValues = []string{nodeimage.OwnerBuildContainer, docker.OwnerProbe, lbimage.OwnerCheckContainer}

// Clean removes, with no cluster of a live owner in use, everything the
// backend and the node image build leave in Docker: stale clusters
// (ReapStale), leftover containers carrying the owner label, the network
// when no container uses it, and kind's load balancer name where a killed
// run left it on the stand-in (lbimage.Unlend). The images built here are
// kept, under their own names. It reports each removal to w.
func Clean(ctx context.Context, w io.Writer) error {
	removed, err := ReapStale(ctx)
	for _, n := range removed {
		fmt.Fprintf(w, "deleted kind cluster %s (its owner was gone)\n", n)
	}
	d, derr := docker.New(ctx)
	if derr != nil {
		return errors.Join(err, derr)
	}
	// Containers inherit their image's labels, so only the values set on
	// containers themselves count (a container a user made from the node
	// image carries ...owner=kind-node and is left alone).
	for _, v := range ContainerOwnerValues {
		out, lerr := d.Run(ctx, nil, "ps", "-a", "-q", "--filter", "label="+nodeimage.LabelOwner+"="+v)
		for _, id := range strings.Fields(string(out)) {
			if _, rerr := d.Run(ctx, nil, "rm", "-f", "-v", id); rerr != nil {
				err = errors.Join(err, rerr)
			} else {
				fmt.Fprintf(w, "removed container %s (label %s=%s)\n", id, nodeimage.LabelOwner, v)
			}
		}
		err = errors.Join(err, lerr)
	}
	out, _ := d.Run(ctx, nil, "network", "ls", "-q", "--filter", "label="+nodeimage.LabelOwner)
	for _, id := range strings.Fields(string(out)) {
		used, _ := d.Run(ctx, nil, "network", "inspect", "--format", "{{len .Containers}}", id)
		if strings.TrimSpace(string(used)) != "0" {
			fmt.Fprintf(w, "kept network %s: containers still use it\n", NetworkName)
			continue
		}
		if _, rerr := d.Run(ctx, nil, "network", "rm", id); rerr != nil {
			err = errors.Join(err, rerr)
		} else {
			fmt.Fprintf(w, "removed network %s\n", NetworkName)
		}
	}
	lb, uerr := lbimage.Unlend(ctx, d, workRoot())
	for _, r := range lb {
		fmt.Fprintf(w, "removed %s\n", r)
	}
	return errors.Join(err, uerr)
}

package local

// The bootstrapped etcd a cluster starts from: a snapshot of etcd taken once
// per kube-apiserver build, etcd version, profile and fixture set, right
// after a cluster bootstrapped it (kube-apiserver's system namespaces, RBAC
// roles, priority classes, flow schemas, the service CIDR; the test user's
// role; the suite's CRDs), restored into each new cluster's data directory.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/informer-conformance/informer-conformance/cluster/binaries"
	"github.com/informer-conformance/informer-conformance/fixtures"
)

// templateFormat changes when what a template holds changes in a way its
// key does not see (the test user's role, what Start installs).
const templateFormat = "1"

// templateDirName is the cache directory of templates, under binaries.CacheDir.
const templateDirName = "local-etcd-templates"

// templateFile is the etcd snapshot of the bootstrapped cluster for the
// binaries and profile of c, in the cache, whether it exists or not.
func (c *Cluster) templateFile() (string, error) { return TemplateFile(c.bins, c.opts.Profile) }

// TemplateFile is the bootstrapped etcd's snapshot that clusters of bins
// and profile p start from (see Options.FreshEtcd), under
// binaries.CacheDir, whether it exists or not. Removing it is safe: the
// next cluster makes a new one.
func TemplateFile(bins binaries.Paths, p Profile) (string, error) {
	dir, err := binaries.CacheDir("")
	if err != nil {
		return "", err
	}
	key, err := templateKey(bins, p)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, templateDirName, key, "etcd.db"), nil
}

// templateKey names what a bootstrapped etcd depends on: the
// kube-apiserver and etcd binaries (version, and size and time of the
// files, for binaries given by INFORMER_CONFORMANCE_ASSETS), the profile's
// flags and gates, the CRD fixtures, and templateFormat.
func templateKey(bins binaries.Paths, p Profile) (string, error) {
	h := sha256.New()
	add := func(parts ...string) {
		for _, s := range parts {
			h.Write([]byte(strconv.Itoa(len(s))))
			h.Write([]byte{':'})
			h.Write([]byte(s))
		}
	}
	add("format", templateFormat, bins.Versions.KubeAPIServer, bins.Versions.Etcd)
	for _, f := range []string{bins.KubeAPIServer, bins.Etcd} {
		st, err := os.Stat(f)
		if err != nil {
			return "", fmt.Errorf("etcd template key: %w", err)
		}
		add(f, strconv.FormatInt(st.Size(), 10), st.ModTime().UTC().String())
	}
	add(p.Args(nil)...)
	crds, err := fixtures.CRDs()
	if err != nil {
		return "", fmt.Errorf("etcd template key: %w", err)
	}
	for _, d := range crds {
		add(string(d))
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// etcdFromTemplate restores the template into c's data directory, when
// there is one and c may (not Options.FreshEtcd). It returns the template's path (where a cluster on a fresh etcd keeps
// one) and whether c starts from it. A template that does not restore is
// removed: c bootstraps an empty etcd and keeps a new one.
func (c *Cluster) etcdFromTemplate(ctx context.Context, step func(string)) (template string, restored bool, err error) {
	if c.opts.FreshEtcd {
		return "", false, nil
	}
	if template, err = c.templateFile(); err != nil {
		return "", false, err
	}
	if ok, err := templateExists(template); err != nil || !ok {
		return template, false, err
	}
	if err := c.restoreTemplate(ctx, template); err != nil {
		if ctx.Err() != nil {
			return template, false, err
		}
		step(fmt.Sprintf("%v; removing it, starting on an empty etcd", err))
		if err := errors.Join(os.Remove(template), os.RemoveAll(c.etcd.dataDir)); err != nil {
			return template, false, fmt.Errorf("remove the template that does not restore: %w", err)
		}
		return template, false, nil
	}
	step("bootstrapped etcd restored from " + template)
	return template, true, nil
}

// restoreTemplate restores the template snapshot into c's empty data
// directory, as this cluster's one member.
func (c *Cluster) restoreTemplate(ctx context.Context, snapshot string) error {
	args := []string{"snapshot", "restore", snapshot,
		"--data-dir=" + c.etcd.dataDir,
		"--name=default",
		"--initial-cluster=default=" + c.etcdPeerURL(),
		"--initial-advertise-peer-urls=" + c.etcdPeerURL(),
	}
	if _, err := runLogged(ctx, c.bins.Etcdutl, args, filepath.Join(c.logs, "etcdutl.log")); err != nil {
		return fmt.Errorf("restore the bootstrapped etcd %s: %w", snapshot, err)
	}
	return nil
}

// saveTemplate snapshots c's etcd, just bootstrapped, as the template for
// later clusters. Processes that race to save the same template each write
// a file of their own and rename it into place: the last one wins, and
// every one of them is whole.
func (c *Cluster) saveTemplate(ctx context.Context, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(path), "."+c.name+".db") // cluster names are unique
	defer os.Remove(tmp)
	if _, err := c.SnapshotEtcd(ctx, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// templateExists says whether path is a template snapshot.
func templateExists(path string) (bool, error) {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, err
	}
	return st.Mode().IsRegular() && st.Size() > 0, nil
}

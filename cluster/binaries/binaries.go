// Package binaries provides the real control-plane binaries the local backend
// runs: kube-apiserver, etcd and etcdutl, built from pinned upstream Go source
// (k8s.io/kubernetes and go.etcd.io/etcd through the Go module proxy) and cached
// per version.
//
// A build happens once per version per machine. It takes place in a nested Go
// module generated in the cache (so the huge dependency graph of
// k8s.io/kubernetes never touches the suite's go.mod), under a file lock so that
// parallel test processes wait for one build instead of racing. Users who
// already have binaries point INFORMER_CONFORMANCE_ASSETS at a directory that
// holds them, like envtest's KUBEBUILDER_ASSETS.
package binaries

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gofrs/flock"
)

// Defaults used when neither Versions fields nor the environment say otherwise.
const (
	DefaultKubeVersion = "v1.37.2"
	DefaultEtcdVersion = "v3.7.3"
)

// Environment variables read by FromEnv and Ensure.
const (
	// EnvKubeVersion selects the kube-apiserver version (1.31.x-1.37.x;
	// built from source 1.33.x-1.37.x only: see pinnedReleases).
	EnvKubeVersion = "KUBE_VERSION"
	// EnvEtcdVersion selects the etcd version (3.5.x to 3.7.x).
	EnvEtcdVersion = "ETCD_VERSION"
	// EnvAssets names a directory holding prebuilt kube-apiserver, etcd and
	// etcdutl; when set nothing is built, KUBE_VERSION and ETCD_VERSION are
	// ignored and the binaries are asked for their versions (--version).
	EnvAssets = "INFORMER_CONFORMANCE_ASSETS"
	// EnvCacheDir overrides the cache root (default: $XDG_CACHE_HOME/informer-conformance).
	EnvCacheDir = "INFORMER_CONFORMANCE_CACHE"
)

// Names of the binaries inside an assets directory.
const (
	KubeAPIServer = "kube-apiserver"
	Etcd          = "etcd"
	Etcdutl       = "etcdutl"
)

// Versions selects what to build. Zero fields mean the defaults.
type Versions struct {
	KubeAPIServer string // e.g. v1.36.3
	Etcd          string // e.g. v3.6.16
}

// Paths are absolute paths to executables.
type Paths struct {
	KubeAPIServer string
	Etcd          string
	Etcdutl       string
	// Versions of the binaries: those they were built for, or, from an
	// assets directory, what they say (AskVersions).
	Versions Versions
}

// Options tune Ensure. The zero value builds into the default cache and is silent.
type Options struct {
	// CacheDir is the cache root; default $INFORMER_CONFORMANCE_CACHE or the user cache dir.
	CacheDir string
	// AssetsDir, when set, is used instead of building (default $INFORMER_CONFORMANCE_ASSETS).
	AssetsDir string
	// Progress receives one line per build step; nil discards them.
	Progress io.Writer
	// KubeReleases is where kube-apiserver release binaries are fetched
	// from before building one (default $INFORMER_CONFORMANCE_KUBE_RELEASES,
	// then DefaultKubeReleases; "none": build only).
	KubeReleases string
}

var (
	// A release version: major, minor, patch. Which majors and minors the
	// suite supports is checked after, so an old release is named
	// unsupported, not malformed.
	releaseVersionRE = regexp.MustCompile(`^v?(\d+)\.(\d+)\.(\d+)$`)
)

// recipe names how binaries are built; bump it when the mains in modules/
// or the build flags change, so cached binaries of an older recipe are not
// reused.
const recipe = "r1"

// EnvUpgradeFrom names the kube-apiserver version a rolling upgrade (S25)
// starts from; default PreviousRelease's pin of the minor before the
// cluster's.
const EnvUpgradeFrom = "KUBE_UPGRADE_FROM"

// pinnedReleases are the kube-apiserver patches the suite pins per minor:
// each builds from the module proxy's staging modules (1.31 and 1.32 lack
// some there) and passes `make test`.
var pinnedReleases = map[int]string{33: "v1.33.13", 34: "v1.34.4", 35: "v1.35.4", 36: "v1.36.3", 37: "v1.37.2"}

// PreviousRelease is the kube-apiserver version to upgrade from to reach
// version: from (the value of EnvUpgradeFrom) when set, else the pinned
// patch of the minor before version's.
func PreviousRelease(version, from string) (string, error) {
	if from != "" {
		v, err := Versions{KubeAPIServer: from}.Normalize()
		if err != nil {
			return "", fmt.Errorf("%s: %w", EnvUpgradeFrom, err)
		}
		return v.KubeAPIServer, nil
	}
	m := releaseVersionRE.FindStringSubmatch(version)
	if m == nil {
		return "", fmt.Errorf("kube-apiserver version %q is not a release version like v1.37.2", version)
	}
	minor, _ := strconv.Atoi(m[2])
	prev, ok := pinnedReleases[minor-1]
	if !ok {
		return "", fmt.Errorf("no pinned kube-apiserver release of 1.%d to upgrade %s from (set %s)", minor-1, version, EnvUpgradeFrom)
	}
	return prev, nil
}

// Supported kube-apiserver minor versions.
const (
	MinKubeMinor = 31
	MaxKubeMinor = 37
)

// Supported etcd minor versions (3.5 to 3.7: kubeadm 1.37 runs etcd 3.7).
const (
	MinEtcdMinor = 5
	MaxEtcdMinor = 7
)

// FromEnv returns the versions selected by KUBE_VERSION and ETCD_VERSION,
// defaults filled in and validated.
func FromEnv() (Versions, error) {
	return Versions{KubeAPIServer: os.Getenv(EnvKubeVersion), Etcd: os.Getenv(EnvEtcdVersion)}.Normalize()
}

// Normalize fills in defaults, adds the leading "v" and validates the versions.
func (v Versions) Normalize() (Versions, error) {
	if v.KubeAPIServer == "" {
		v.KubeAPIServer = DefaultKubeVersion
	}
	if v.Etcd == "" {
		v.Etcd = DefaultEtcdVersion
	}
	m := releaseVersionRE.FindStringSubmatch(v.KubeAPIServer)
	if m == nil {
		return v, fmt.Errorf("kube-apiserver version %q is not a release version like v1.36.3 (set %s)", v.KubeAPIServer, EnvKubeVersion)
	}
	if minor, _ := strconv.Atoi(m[2]); m[1] != "1" || minor < MinKubeMinor || minor > MaxKubeMinor {
		return v, fmt.Errorf("kube-apiserver version %s is not supported: choose 1.%d.x to 1.%d.x (set %s)", v.KubeAPIServer, MinKubeMinor, MaxKubeMinor, EnvKubeVersion)
	}
	if v.KubeAPIServer[0] != 'v' {
		v.KubeAPIServer = "v" + v.KubeAPIServer
	}
	m = releaseVersionRE.FindStringSubmatch(v.Etcd)
	if m == nil {
		return v, fmt.Errorf("etcd version %q is not a release version like v3.6.16 (set %s)", v.Etcd, EnvEtcdVersion)
	}
	if minor, _ := strconv.Atoi(m[2]); m[1] != "3" || minor < MinEtcdMinor || minor > MaxEtcdMinor {
		return v, fmt.Errorf("etcd version %s is not supported: choose 3.5.x to 3.7.x (set %s)", v.Etcd, EnvEtcdVersion)
	}
	if v.Etcd[0] != 'v' {
		v.Etcd = "v" + v.Etcd
	}
	return v, nil
}

// CacheKey names what Ensure builds for v: the build recipe and both
// versions, e.g. "r1-kube-apiserver-v1.36.3-etcd-v3.6.16". A CI cache of
// the cache's bin directory keyed by it holds exactly the binaries a run
// needs, whatever else the caller's go.sum pins.
func CacheKey(v Versions) (string, error) {
	v, err := v.Normalize()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s-kube-apiserver-%s-etcd-%s", recipe, v.KubeAPIServer, v.Etcd), nil
}

// CacheDir is dir, or $INFORMER_CONFORMANCE_CACHE, or the user cache
// directory's informer-conformance: the root of everything the suite builds.
func CacheDir(dir string) (string, error) {
	if dir == "" {
		dir = os.Getenv(EnvCacheDir)
	}
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("find a cache directory (set %s): %w", EnvCacheDir, err)
		}
		dir = filepath.Join(base, "informer-conformance")
	}
	return dir, nil
}

func (o Options) withDefaults() (Options, error) {
	if o.AssetsDir == "" {
		o.AssetsDir = os.Getenv(EnvAssets)
	}
	dir, err := CacheDir(o.CacheDir)
	if err != nil {
		return o, err
	}
	o.CacheDir = dir
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	o.KubeReleases = cmp.Or(o.KubeReleases, os.Getenv(EnvKubeReleases), DefaultKubeReleases)
	return o, nil
}

// Ensure returns the binaries for v, building and caching whatever is missing.
// With an assets directory it only checks that the three executables are there.
func Ensure(ctx context.Context, v Versions, opts Options) (Paths, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return Paths{}, err
	}
	if opts.AssetsDir != "" {
		return fromAssets(ctx, opts.AssetsDir)
	}
	if v, err = v.Normalize(); err != nil {
		return Paths{}, err
	}
	bin := filepath.Join(opts.CacheDir, "bin", recipe)
	p := Paths{
		KubeAPIServer: kubeAPIServerPath(opts.CacheDir, v.KubeAPIServer),
		Etcd:          filepath.Join(bin, "etcd", v.Etcd, Etcd),
		Etcdutl:       filepath.Join(bin, "etcd", v.Etcd, Etcdutl),
		Versions:      v,
	}
	if err := ensureBuilt(ctx, opts, "kube-apiserver-"+v.KubeAPIServer, []string{p.KubeAPIServer}, func(work string) error {
		err := fetchKubeAPIServer(ctx, opts.KubeReleases, v.KubeAPIServer, p.KubeAPIServer, opts.Progress)
		if err == nil {
			return nil
		}
		if !errors.Is(err, errNoDownload) {
			fmt.Fprintf(opts.Progress, "kube-apiserver %s: no release binary (%v): building it from source\n", v.KubeAPIServer, err)
		}
		return buildKubeAPIServer(ctx, opts.Progress, work, v.KubeAPIServer, filepath.Dir(p.KubeAPIServer))
	}); err != nil {
		return Paths{}, fmt.Errorf("build kube-apiserver %s: %w", v.KubeAPIServer, err)
	}
	if err := ensureBuilt(ctx, opts, "etcd-"+v.Etcd, []string{p.Etcd, p.Etcdutl}, func(work string) error {
		return buildEtcd(ctx, opts.Progress, work, v.Etcd, filepath.Dir(p.Etcd))
	}); err != nil {
		return Paths{}, fmt.Errorf("build etcd %s: %w", v.Etcd, err)
	}
	return p, nil
}

// kubeAPIServerPath is where the cache under cacheDir holds kube-apiserver
// version (normalised), built or fetched.
func kubeAPIServerPath(cacheDir, version string) string {
	return filepath.Join(cacheDir, "bin", recipe, "kube-apiserver", version, KubeAPIServer)
}

// Built is the kube-apiserver binary of version in the cache, built
// earlier by Ensure (or `go run ./hack/build-binaries -kube-version
// VERSION`), and the version normalised; an error says how to build one that
// is not there. It builds nothing: a build takes minutes.
func Built(version string, opts Options) (path, normalized string, err error) {
	opts, err = opts.withDefaults()
	if err != nil {
		return "", "", err
	}
	v, err := Versions{KubeAPIServer: version}.Normalize()
	if err != nil {
		return "", "", err
	}
	path = kubeAPIServerPath(opts.CacheDir, v.KubeAPIServer)
	if err := checkExecutable(path); err != nil {
		return "", "", fmt.Errorf("kube-apiserver %s is not built (build it with `go run ./hack/build-binaries -kube-version %s`, a few minutes once): %w", v.KubeAPIServer, v.KubeAPIServer, err)
	}
	return path, v.KubeAPIServer, nil
}

func fromAssets(ctx context.Context, dir string) (Paths, error) {
	p := Paths{
		KubeAPIServer: filepath.Join(dir, KubeAPIServer),
		Etcd:          filepath.Join(dir, Etcd),
		Etcdutl:       filepath.Join(dir, Etcdutl),
	}
	var errs []error
	for _, f := range []string{p.KubeAPIServer, p.Etcd, p.Etcdutl} {
		if err := checkExecutable(f); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return Paths{}, fmt.Errorf("%s=%s must hold kube-apiserver, etcd and etcdutl (unset it to build them from source): %w", EnvAssets, dir, err)
	}
	v, err := AskVersions(ctx, p)
	if err != nil {
		return Paths{}, fmt.Errorf("%s=%s: %w", EnvAssets, dir, err)
	}
	p.Versions = v
	return p, nil
}

// Selected is the versions Ensure(ctx, v, opts) runs, without building
// anything: with an assets directory the binaries' own (AskVersions),
// else v with defaults filled in.
func Selected(ctx context.Context, v Versions, opts Options) (Versions, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return Versions{}, err
	}
	if opts.AssetsDir != "" {
		p, err := fromAssets(ctx, opts.AssetsDir)
		return p.Versions, err
	}
	return v.Normalize()
}

// versionTimeout bounds one binary's --version.
const versionTimeout = 30 * time.Second

var (
	kubeVersionOutput = regexp.MustCompile(`(?m)^Kubernetes (v\S+)$`)
	etcdVersionOutput = regexp.MustCompile(`(?m)^etcd Version: (\S+)$`)
)

// versionCache holds what binaries said, by path, size and modification
// time: asking costs a process start, and the report and every spec's
// version constraints ask.
var versionCache sync.Map // versionKey -> string

type versionKey struct {
	path  string
	size  int64
	mtime time.Time
}

// AskVersions runs p's kube-apiserver and etcd with --version
// ("Kubernetes v1.36.3", "etcd Version: 3.6.16") and returns their
// versions, each with a leading "v". A binary whose version cannot be read
// is an error naming it and what it printed.
func AskVersions(ctx context.Context, p Paths) (Versions, error) {
	kube, kerr := askVersion(ctx, p.KubeAPIServer, kubeVersionOutput, "Kubernetes v1.36.3")
	etcd, eerr := askVersion(ctx, p.Etcd, etcdVersionOutput, "etcd Version: 3.6.16")
	if err := errors.Join(kerr, eerr); err != nil {
		return Versions{}, err
	}
	return Versions{KubeAPIServer: kube, Etcd: etcd}, nil
}

func askVersion(ctx context.Context, path string, re *regexp.Regexp, example string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("cannot tell the version of %s: %w", path, err)
	}
	key := versionKey{path, fi.Size(), fi.ModTime()}
	if v, ok := versionCache.Load(key); ok {
		return v.(string), nil
	}
	ctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").CombinedOutput()
	m := re.FindSubmatch(out)
	if err != nil || m == nil {
		why := fmt.Sprintf("printed %q", tail(string(out), 5))
		if err != nil {
			why = fmt.Sprintf("%v, %s", err, why)
		}
		return "", fmt.Errorf("cannot tell the version of %s: `%s --version` %s, want a line like %q", path, filepath.Base(path), why, example)
	}
	v := string(m[1])
	if !strings.HasPrefix(v, "v") {
		v = "v" + v
	}
	versionCache.Store(key, v)
	return v, nil
}

func checkExecutable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", path)
	}
	return nil
}

func allExecutable(paths []string) bool {
	for _, p := range paths {
		if checkExecutable(p) != nil {
			return false
		}
	}
	return true
}

// ensureBuilt runs build unless every output exists, holding a per-target file
// lock so parallel processes build once and the others wait and reuse it.
func ensureBuilt(ctx context.Context, opts Options, name string, outputs []string, build func(work string) error) error {
	if allExecutable(outputs) {
		return nil
	}
	lockDir := filepath.Join(opts.CacheDir, "locks")
	if err := os.MkdirAll(lockDir, 0o755); err != nil {
		return err
	}
	lock := flock.New(filepath.Join(lockDir, name+".lock"))
	locked, err := lock.TryLock()
	if err != nil {
		return fmt.Errorf("lock %s: %w", lock.Path(), err)
	}
	if !locked {
		fmt.Fprintf(opts.Progress, "waiting for another process building %s (lock %s)\n", name, lock.Path())
		if _, err := lock.TryLockContext(ctx, 250*time.Millisecond); err != nil {
			return fmt.Errorf("wait for lock %s: %w", lock.Path(), err)
		}
	}
	defer lock.Unlock()
	if allExecutable(outputs) { // built by whoever held the lock
		return nil
	}
	// The build works in a directory of its own, renamed to src/<name> when
	// it succeeds: a failed or interrupted build leaves no partial sources,
	// and no output directory it created.
	src := filepath.Join(opts.CacheDir, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return err
	}
	work, err := os.MkdirTemp(src, "."+name+".partial-")
	if err != nil {
		return err
	}
	var created []string
	for _, o := range outputs {
		if _, err := os.Stat(filepath.Dir(o)); os.IsNotExist(err) && !slices.Contains(created, filepath.Dir(o)) {
			created = append(created, filepath.Dir(o))
		}
	}
	start := time.Now()
	fmt.Fprintf(opts.Progress, "building %s from source (once per version; a few minutes) in %s\n", name, work)
	if err := build(work); err != nil {
		_ = os.RemoveAll(work)
		for _, d := range created {
			_ = os.RemoveAll(d)
		}
		return err
	}
	final := filepath.Join(src, name)
	if err := os.RemoveAll(final); err != nil {
		return err
	}
	if err := os.Rename(work, final); err != nil {
		return err
	}
	fmt.Fprintf(opts.Progress, "built %s in %s\n", name, time.Since(start).Round(time.Second))
	return nil
}

// NodeCommands are the Kubernetes commands a kind node image carries:
// kubeadm, kubelet and kubectl on the node, the control-plane components in
// their images.
var NodeCommands = []string{"kubeadm", "kubelet", "kubectl", "kube-apiserver", "kube-controller-manager", "kube-scheduler"}

// EnsureNodeCommands returns the directory holding NodeCommands built from
// k8s.io/kubernetes@version (with version ldflags, as upstream releases
// them), building and caching them once per version. The assets directory is
// not consulted: it holds the local backend's binaries only.
func EnsureNodeCommands(ctx context.Context, version string, opts Options) (string, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return "", err
	}
	v, err := Versions{KubeAPIServer: version}.Normalize()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(opts.CacheDir, "bin", recipe, "kubernetes-node", v.KubeAPIServer)
	var outputs []string
	for _, n := range NodeCommands {
		outputs = append(outputs, filepath.Join(dir, n))
	}
	if err := ensureBuilt(ctx, opts, "kubernetes-node-"+v.KubeAPIServer, outputs, func(work string) error {
		// The local backend's kube-apiserver of the version, when built,
		// is the same binary (upstream's main, the same ldflags): it is
		// not linked again.
		names := NodeCommands
		local := kubeAPIServerPath(opts.CacheDir, v.KubeAPIServer)
		reuse := allExecutable([]string{local})
		if reuse {
			names = slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == KubeAPIServer })
			fmt.Fprintf(opts.Progress, "  kube-apiserver: the local backend's build %s\n", local)
		}
		if err := buildKubernetesCommands(ctx, opts.Progress, work, v.KubeAPIServer, dir, names); err != nil {
			return err
		}
		if reuse {
			return copyExecutable(local, filepath.Join(dir, KubeAPIServer))
		}
		return nil
	}); err != nil {
		return "", fmt.Errorf("build the Kubernetes %s node commands: %w", v.KubeAPIServer, err)
	}
	return dir, nil
}

// copyExecutable copies src to dst (a hard link where the file system
// allows), through a temporary name: dst is whole or absent.
func copyExecutable(src, dst string) error {
	tmp := dst + ".tmp"
	_ = os.Remove(tmp)
	if err := os.Link(src, tmp); err != nil {
		in, err := os.Open(src)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		if err := out.Close(); err != nil {
			return err
		}
	}
	return os.Rename(tmp, dst)
}

// EnsureEtcd returns etcd and etcdutl of version, building them once.
func EnsureEtcd(ctx context.Context, version string, opts Options) (etcd, etcdutl string, err error) {
	opts, err = opts.withDefaults()
	if err != nil {
		return "", "", err
	}
	v, err := Versions{Etcd: version}.Normalize()
	if err != nil {
		return "", "", err
	}
	dir := filepath.Join(opts.CacheDir, "bin", recipe, "etcd", v.Etcd)
	etcd, etcdutl = filepath.Join(dir, Etcd), filepath.Join(dir, Etcdutl)
	if err := ensureBuilt(ctx, opts, "etcd-"+v.Etcd, []string{etcd, etcdutl}, func(work string) error {
		return buildEtcd(ctx, opts.Progress, work, v.Etcd, dir)
	}); err != nil {
		return "", "", fmt.Errorf("build etcd %s: %w", v.Etcd, err)
	}
	return etcd, etcdutl, nil
}

// Package nodeimage builds a kind node image offline, from pinned sources, on
// a machine whose Docker has no registry: a Debian root filesystem from
// Debian's packages (debootstrap), kind's own base files read from the kind
// module in the Go module cache, kubeadm/kubelet/kubectl and the
// control-plane images built from k8s.io/kubernetes at the pinned version,
// etcd at the version kubeadm asks for, pause from upstream's pause.c, crictl
// from its Go module, containerd, runc and the CNI plugins from Debian.
//
// It reproduces the steps of kind's own `kind build node-image`
// (pkg/build/nodeimage: buildImage, prePullImagesAndWriteManifests,
// containerdImporter) and of kind's images/base/Dockerfile, which need a
// registry and cannot finish offline. The result is tagged
// informer-conformance/kind-node:<kubernetes version>-<recipe> and carries the
// label LabelOwner; a second Build finds it and returns at once.
//
// Plain Go that returns errors; progress goes to Options.Progress, one line a
// step.
package nodeimage

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/gofrs/flock"

	"github.com/informer-conformance/informer-conformance/cluster/binaries"
	"github.com/informer-conformance/informer-conformance/cluster/kind/docker"
	"github.com/informer-conformance/informer-conformance/internal/lines"
)

// Pinned sources besides Kubernetes and etcd (whose versions come from the
// Kubernetes version: kubeadm names the etcd it wants).
const (
	// KindVersion is the sigs.k8s.io/kind module whose images/base files the
	// image carries; it must be the version in go.mod (TestKindVersionPinned).
	KindVersion = "v0.33.0"
	// CrictlVersion is sigs.k8s.io/cri-tools, as kind v0.33.0 pins it.
	CrictlVersion = "v1.36.0"
	// Suite is the Debian release debootstrap installs (kind's base is trixie).
	Suite = "trixie"
	// Mirror is where debootstrap gets Debian's packages.
	Mirror = "http://deb.debian.org/debian"
	// Recipe names how the image is built; bump it when the steps change so an
	// image of an older recipe is not reused.
	Recipe = "r1"
	// Repository is the image repository of built node images.
	Repository = "informer-conformance/kind-node"
	// LabelOwner is the project's owner label (docker.LabelOwner).
	LabelOwner = docker.LabelOwner
	// OwnerBuildContainer is LabelOwner's value on the build container.
	OwnerBuildContainer = "kind-node-build"
)

// Packages debootstrap installs: kind's base Dockerfile list (less nfs,
// iscsi and e2fsprogs, which no spec uses), plus containerd, runc and the CNI
// plugins, which Debian packages (trixie: containerd 1.7, runc 1.1).
var Packages = []string{
	"systemd", "systemd-sysv", "dbus", "conntrack", "iptables", "nftables", "iproute2", "ethtool",
	"util-linux", "mount", "kmod", "libseccomp2", "pigz", "fuse-overlayfs", "bash",
	"ca-certificates", "curl", "jq", "procps", "containerd", "runc", "containernetworking-plugins",
}

// Options tune Build. Zero values mean the defaults.
type Options struct {
	// KubeVersion is the Kubernetes version (default binaries.DefaultKubeVersion).
	KubeVersion string
	// CacheDir is the cache root (default as cluster/binaries).
	CacheDir string
	// Progress receives one line per step; nil discards them.
	Progress io.Writer
}

// CheckHost says why this machine cannot build the images (nil: it can).
// The node image carries this machine's own builds of kubeadm, kubelet and
// the control plane (cluster/binaries builds for the host) and runs
// debootstrap and kubeadm here: only a Linux host can build it, and the load
// balancer image (cluster/kind/lbimage, debootstrap too).
func CheckHost() error {
	if runtime.GOOS != "linux" {
		return fmt.Errorf("%w on %s: the kind images are built from source on a Linux host (they carry its builds of kubeadm, kubelet and the control plane; debootstrap); "+
			"set KIND_NODE_IMAGE to a published kindest/node image, which kind pulls, with kind's own load balancer image", errors.ErrUnsupported, runtime.GOOS)
	}
	return nil
}

// Tag is the image Build makes for a Kubernetes version.
func Tag(kubeVersion string) string {
	return Repository + ":" + kubeVersion + "-" + Recipe
}

// Build returns the tag of the node image for opts.KubeVersion, building it
// when Docker does not have it yet. Parallel callers wait for one build.
func Build(ctx context.Context, opts Options) (string, error) {
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	v, err := binaries.Versions{KubeAPIServer: opts.KubeVersion}.Normalize()
	if err != nil {
		return "", err
	}
	version := v.KubeAPIServer
	tag := Tag(version)
	d, err := docker.New(ctx)
	if err != nil {
		return "", err
	}
	if d.ImageExists(ctx, tag) {
		fmt.Fprintf(opts.Progress, "node image %s: cached\n", tag)
		return tag, nil
	}
	if err := CheckHost(); err != nil {
		return "", fmt.Errorf("build node image %s: %w", tag, err)
	}
	if !d.ImageExists(ctx, rootfsTag) {
		// Before the build's minutes of compiling, not after them.
		if err := CheckDebootstrap(); err != nil {
			return "", fmt.Errorf("build node image %s: %w", tag, err)
		}
	}
	cache, err := binaries.CacheDir(opts.CacheDir)
	if err != nil {
		return "", err
	}
	unlock, err := LockBuild(ctx, cache, "kind-node-"+version, tag, opts.Progress)
	if err != nil {
		return "", err
	}
	defer unlock()
	if d.ImageExists(ctx, tag) {
		return tag, nil
	}
	b := &builder{d: d, opts: opts, version: version, tag: tag, cache: cache, Steps: Steps{W: opts.Progress, Total: 9, Start: time.Now()}}
	if err := b.build(ctx); err != nil {
		return "", fmt.Errorf("build node image %s: %w", tag, err)
	}
	fmt.Fprintf(opts.Progress, "built node image %s in %s\n", tag, time.Since(b.Start).Round(time.Second))
	return tag, nil
}

type builder struct {
	d       *docker.Docker
	opts    Options
	version string
	tag     string
	cache   string
	Steps
}

// Steps prints a build's numbered steps to W, each with the time since
// Start: "[3/9 42s] what".
type Steps struct {
	W     io.Writer
	Total int
	Start time.Time
	n     int
}

// Stepf prints the next step.
func (s *Steps) Stepf(format string, args ...any) {
	s.n++
	fmt.Fprintf(s.W, "[%d/%d %s] %s\n", s.n, s.Total, time.Since(s.Start).Round(time.Second), fmt.Sprintf(format, args...))
}

func (b *builder) build(ctx context.Context) error {
	bopts := binaries.Options{CacheDir: b.cache, Progress: b.opts.Progress}

	b.Stepf("kind %s base files from the Go module cache", KindVersion)
	kindDir, err := moduleDir(ctx, "sigs.k8s.io/kind", KindVersion)
	if err != nil {
		return err
	}
	baseFiles := filepath.Join(kindDir, "images", "base", "files")
	if _, err := os.Stat(filepath.Join(baseFiles, "usr", "local", "bin", "entrypoint")); err != nil {
		return fmt.Errorf("kind %s module has no images/base/files/usr/local/bin/entrypoint: %w", KindVersion, err)
	}

	b.Stepf("Kubernetes %s: %s from k8s.io/kubernetes", b.version, strings.Join(binaries.NodeCommands, ", "))
	kube, err := binaries.EnsureNodeCommands(ctx, b.version, bopts)
	if err != nil {
		return err
	}

	b.Stepf("the images kubeadm %s asks for", b.version)
	refs, err := kubeadmImages(ctx, filepath.Join(kube, "kubeadm"), b.version)
	if err != nil {
		return err
	}
	sandbox, err := sandboxImage(filepath.Join(baseFiles, "etc", "containerd", "config.toml"))
	if err != nil {
		return err
	}
	etcdVersion, err := EtcdVersionOf(refs["etcd"])
	if err != nil {
		return err
	}
	fmt.Fprintf(b.opts.Progress, "  %s; sandbox image %s\n", strings.Join(sortedValues(refs), ", "), sandbox)

	b.Stepf("etcd %s (the version kubeadm %s runs)", etcdVersion, b.version)
	etcd, _, err := binaries.EnsureEtcd(ctx, etcdVersion, bopts)
	if err != nil {
		return err
	}

	b.Stepf("pause (upstream build/pause/linux/pause.c, gcc -static) and crictl %s", CrictlVersion)
	tools := filepath.Join(b.cache, "bin", "kind-node-tools", b.version+"-"+CrictlVersion)
	pause, crictl, err := b.tools(ctx, tools)
	if err != nil {
		return err
	}

	b.Stepf("Debian %s root filesystem (debootstrap from %s; once per recipe)", Suite, Mirror)
	rootfs, err := b.rootfs(ctx)
	if err != nil {
		return err
	}

	b.Stepf("control-plane images (%s)", strings.Join(sortedValues(refs), ", "))
	imagesTar := filepath.Join(b.cache, "tmp", fmt.Sprintf("kind-node-images-%d.tar", os.Getpid()))
	if err := os.MkdirAll(filepath.Dir(imagesTar), 0o755); err != nil {
		return err
	}
	defer os.Remove(imagesTar)
	components := map[string]string{
		refs["kube-apiserver"]:          filepath.Join(kube, "kube-apiserver"),
		refs["kube-controller-manager"]: filepath.Join(kube, "kube-controller-manager"),
		refs["kube-scheduler"]:          filepath.Join(kube, "kube-scheduler"),
		refs["etcd"]:                    etcd,
	}
	if err := b.componentImages(ctx, components, pause, []string{sandbox, refs["pause"]}, imagesTar); err != nil {
		return err
	}

	b.Stepf("node image %s: kind's base files, binaries, images preloaded into containerd", b.tag)
	return b.nodeImage(ctx, rootfs, baseFiles, kube, crictl, imagesTar)
}

// moduleDir downloads mod@version into the module cache and returns its directory.
func moduleDir(ctx context.Context, mod, version string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", mod+"@"+version)
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	cmd.Dir = os.TempDir()
	out, err := cmd.Output()
	var info struct{ Dir, Error string }
	_ = json.Unmarshal(out, &info)
	if info.Error != "" {
		return "", fmt.Errorf("go mod download %s@%s: %s", mod, version, info.Error)
	}
	if err != nil {
		return "", fmt.Errorf("go mod download %s@%s: %w", mod, version, err)
	}
	return info.Dir, nil
}

// kubeadmImages runs `kubeadm config images list` and returns the images by
// component name (kube-apiserver, etcd, pause, coredns, ...).
func kubeadmImages(ctx context.Context, kubeadm, version string) (map[string]string, error) {
	out, err := exec.CommandContext(ctx, kubeadm, "config", "images", "list", "--kubernetes-version", version).Output()
	if err != nil {
		return nil, fmt.Errorf("kubeadm config images list: %w", withStderr(err))
	}
	refs := map[string]string{}
	for _, line := range strings.Fields(string(out)) {
		name := line[strings.LastIndex(line, "/")+1:]
		if i := strings.Index(name, ":"); i > 0 {
			name = name[:i]
		}
		refs[name] = line
	}
	for _, want := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd", "pause"} {
		if refs[want] == "" {
			return nil, fmt.Errorf("kubeadm %s lists no %s image: %s", version, want, out)
		}
	}
	return refs, nil
}

var sandboxRE = regexp.MustCompile(`(?m)^\s*sandbox_image\s*=\s*"([^"]+)"`)

// sandboxImage is containerd's sandbox_image in kind's config.toml: the
// kubelet 1.36 has no pause flag and kind skips preflight, so this is the
// pause image nodes really run (findSandboxImage in kind's nodeimage).
func sandboxImage(configToml string) (string, error) {
	data, err := os.ReadFile(configToml)
	if err != nil {
		return "", err
	}
	m := sandboxRE.FindSubmatch(data)
	if m == nil {
		return "", fmt.Errorf("%s sets no sandbox_image", configToml)
	}
	return string(m[1]), nil
}

var etcdTagRE = regexp.MustCompile(`:(\d+\.\d+\.\d+)(-\d+)?$`)

// EtcdVersionOf is the etcd release of kubeadm's etcd image reference
// (registry.k8s.io/etcd:3.6.8-0 is v3.6.8): the node image's etcd is built
// from it, and a restore on the node needs the same etcdutl.
func EtcdVersionOf(ref string) (string, error) {
	m := etcdTagRE.FindStringSubmatch(ref)
	if m == nil {
		return "", fmt.Errorf("cannot read an etcd version from kubeadm's image %q", ref)
	}
	return "v" + m[1], nil
}

func sortedValues(m map[string]string) []string {
	return slices.Sorted(maps.Values(m))
}

// tools builds pause and crictl into dir once.
func (b *builder) tools(ctx context.Context, dir string) (pause, crictl string, err error) {
	pause, crictl = filepath.Join(dir, "pause"), filepath.Join(dir, "crictl")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", err
	}
	if _, err := os.Stat(pause); err != nil {
		kdir, err := moduleDir(ctx, "k8s.io/kubernetes", b.version)
		if err != nil {
			return "", "", err
		}
		src := filepath.Join(kdir, "build", "pause", "linux", "pause.c")
		cc, err := exec.LookPath("gcc")
		if err != nil {
			return "", "", fmt.Errorf("gcc is needed to build pause from %s: apt-get install gcc libc6-dev", src)
		}
		// The flags of upstream's build/pause/Makefile (CFLAGS).
		cmd := exec.CommandContext(ctx, cc, "-Os", "-Wall", "-Werror", "-static", "-DVERSION=v-informer-conformance", "-o", pause+".tmp", src)
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", "", fmt.Errorf("gcc -static pause.c (static libc: apt-get install libc6-dev): %w\n%s", err, out)
		}
		if err := os.Rename(pause+".tmp", pause); err != nil {
			return "", "", err
		}
	}
	if _, err := os.Stat(crictl); err != nil {
		// A module of its own that requires cri-tools (go install mod@v asks
		// the proxy for the module's version list, which it may refuse).
		work := filepath.Join(b.cache, "src", "crictl-"+CrictlVersion)
		if err := os.MkdirAll(work, 0o755); err != nil {
			return "", "", err
		}
		gomod := "module informer-conformance.local/crictl\n\ngo 1.26\n\nrequire sigs.k8s.io/cri-tools " + CrictlVersion + "\n"
		if err := os.WriteFile(filepath.Join(work, "go.mod"), []byte(gomod), 0o644); err != nil {
			return "", "", err
		}
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w -X sigs.k8s.io/cri-tools/pkg/version.Version="+CrictlVersion, "-o", crictl+".tmp", "sigs.k8s.io/cri-tools/cmd/crictl")
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "CGO_ENABLED=0")
		cmd.Dir = work
		fmt.Fprintf(b.opts.Progress, "  go build sigs.k8s.io/cri-tools/cmd/crictl (%s)\n", CrictlVersion)
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", "", fmt.Errorf("build crictl %s: %w\n%s", CrictlVersion, err, out)
		}
		if err := os.Rename(crictl+".tmp", crictl); err != nil {
			return "", "", err
		}
	}
	return pause, crictl, nil
}

// rootfsTag is the Docker image of the debootstrapped root filesystem.
const rootfsTag = "informer-conformance/kind-rootfs:" + Suite + "-" + Recipe

// rootfs returns the Docker image holding the debootstrapped root
// filesystem, making it once per recipe.
func (b *builder) rootfs(ctx context.Context) (string, error) {
	tag := rootfsTag
	if b.d.ImageExists(ctx, tag) {
		fmt.Fprintf(b.opts.Progress, "  %s: cached\n", tag)
		return tag, nil
	}
	if err := os.MkdirAll(filepath.Join(b.cache, "tmp"), 0o755); err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp(filepath.Join(b.cache, "tmp"), "kind-rootfs-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	if err := Debootstrap(ctx, dir, Packages, b.opts.Progress); err != nil {
		return "", err
	}
	if err := ImportDir(ctx, b.d, dir, tag, b.opts.Progress, "LABEL "+LabelOwner+"=kind-rootfs"); err != nil {
		return "", err
	}
	return tag, nil
}

// CheckDebootstrap says why Debootstrap cannot run here (nil: it can): a
// build checks it before it compiles anything.
func CheckDebootstrap() error {
	_, err := debootstrap()
	return err
}

// debootstrap is debootstrap's path, or why Debootstrap cannot run here.
func debootstrap() (string, error) {
	path, err := exec.LookPath("debootstrap")
	if err != nil {
		return "", errors.New("debootstrap is needed to build the kind images' root filesystems from Debian's packages: apt-get install debootstrap")
	}
	if os.Geteuid() != 0 {
		return "", errors.New("debootstrap needs root: run make kind-image as root, or use a published image (KIND_NODE_IMAGE=kindest/node:...)")
	}
	return path, nil
}

// Debootstrap installs Debian's minimal base system (Suite, from Mirror)
// with packages into dir, then removes apt's caches and the documentation,
// which no container needs (kind's clean-install removes them too). It needs
// root and debootstrap; it writes its command to progress.
func Debootstrap(ctx context.Context, dir string, packages []string, progress io.Writer) error {
	deboot, err := debootstrap()
	if err != nil {
		return err
	}
	args := []string{"--variant=minbase", "--include=" + strings.Join(packages, ","), Suite, dir, Mirror}
	fmt.Fprintf(progress, "  debootstrap %s\n", strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, deboot, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("debootstrap: %w\n%s", err, tailLines(out.String(), 20))
	}
	for _, p := range []string{"var/cache/apt/archives", "var/lib/apt/lists", "usr/share/doc", "usr/share/man"} {
		_ = os.RemoveAll(filepath.Join(dir, p))
	}
	return nil
}

// ImportDir makes the image tag from the root filesystem in dir (tar, with
// numeric owners, piped to docker import) with the Dockerfile instructions
// changes (docker import --change); it writes its command to progress.
func ImportDir(ctx context.Context, d *docker.Docker, dir, tag string, progress io.Writer, changes ...string) error {
	fmt.Fprintf(progress, "  docker import %s\n", tag)
	tarCmd := exec.CommandContext(ctx, "tar", "-C", dir, "--numeric-owner", "-c", ".")
	pipe, err := tarCmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := tarCmd.Start(); err != nil {
		return err
	}
	args := []string{"import"}
	for _, c := range changes {
		args = append(args, "--change", c)
	}
	_, ierr := d.Run(ctx, pipe, append(args, "-", tag)...)
	werr := tarCmd.Wait()
	if ierr != nil {
		return ierr
	}
	if werr != nil {
		return fmt.Errorf("tar of the root filesystem: %w", werr)
	}
	return nil
}

// componentImages makes one single-binary image per control-plane component
// (kubeadm's static pods run them by bare name, so PATH is set) and the pause
// image under every name asked for, and saves them all into out.
func (b *builder) componentImages(ctx context.Context, components map[string]string, pause string, pauseRefs []string, out string) error {
	var refs []string
	defer func() {
		if len(refs) > 0 {
			// The tags are upstream's names: do not leave them in the host's Docker.
			_, _ = b.d.Run(ctx, nil, append([]string{"rmi", "--force"}, refs...)...)
		}
	}()
	imp := func(ref string, files map[string]string, entrypoint string) error {
		err := importImage(ctx, b.d, ref, files, entrypoint)
		if err == nil {
			refs = append(refs, ref)
		}
		return err
	}
	for ref, bin := range components {
		files, entrypoint := binaryImage(bin)
		if err := imp(ref, files, entrypoint); err != nil {
			return err
		}
	}
	seen := map[string]bool{}
	for _, ref := range pauseRefs {
		if seen[ref] {
			continue
		}
		seen[ref] = true
		if err := imp(ref, map[string]string{"pause": pause}, "/pause"); err != nil {
			return err
		}
	}
	_, err := b.d.Run(ctx, nil, append([]string{"save", "-o", out}, refs...)...)
	return err
}

// SaveComponentImage writes to out (docker save's format) the image ref of
// one control-plane binary, made as the node image's own control-plane
// images are (a single static binary at /usr/local/bin, run by bare name):
// how another version's kube-apiserver reaches a node (kind's
// LoadImageArchive). The tag, upstream's name, does not stay in the host's
// Docker.
func SaveComponentImage(ctx context.Context, d *docker.Docker, ref, bin, out string) error {
	files, entrypoint := binaryImage(bin)
	if err := importImage(ctx, d, ref, files, entrypoint); err != nil {
		return err
	}
	defer func() { _, _ = d.Run(context.WithoutCancel(ctx), nil, "rmi", "--force", ref) }()
	_, err := d.Run(ctx, nil, "save", "-o", out, ref)
	return err
}

// binaryImage is the content and entrypoint of a control-plane component's
// image: its one static binary at /usr/local/bin (kubeadm's static pods
// run it by bare name).
func binaryImage(bin string) (files map[string]string, entrypoint string) {
	name := filepath.Base(bin)
	return map[string]string{"usr/local/bin/" + name: bin}, "/usr/local/bin/" + name
}

// importImage makes the image ref of files (path in the image -> file on
// disk) with entrypoint, labelled as this project's.
func importImage(ctx context.Context, d *docker.Docker, ref string, files map[string]string, entrypoint string) error {
	var buf bytes.Buffer
	if err := tarFiles(&buf, files); err != nil {
		return err
	}
	_, err := d.Run(ctx, &buf, "import",
		"--change", "ENV PATH=/usr/local/bin:/usr/bin:/bin",
		"--change", fmt.Sprintf("ENTRYPOINT [%q]", entrypoint),
		"--change", "LABEL "+LabelOwner+"=kind-component",
		"-", ref)
	return err
}

// tarFiles writes a tar of files (path in the archive -> file on disk), with
// the directories they need, every file executable and owned by root.
func tarFiles(w io.Writer, files map[string]string) error {
	tw := tar.NewWriter(w)
	dirs := map[string]bool{}
	var names []string
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		for d := filepath.Dir(name); d != "." && !dirs[d]; d = filepath.Dir(d) {
			dirs[d] = true
		}
	}
	var ds []string
	for d := range dirs {
		ds = append(ds, d)
	}
	slices.Sort(ds)
	for _, d := range ds {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755}); err != nil {
			return err
		}
	}
	for _, name := range names {
		f, err := os.Open(files[name])
		if err != nil {
			return err
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o755, Size: fi.Size()}); err != nil {
			f.Close()
			return err
		}
		_, err = io.Copy(tw, f)
		f.Close()
		if err != nil {
			return err
		}
	}
	return tw.Close()
}

// stageBaseFiles copies kind's images/base/files into dst with the modes
// kind's Dockerfile gives them (the module cache is read-only).
func stageBaseFiles(src, dst string) error {
	return filepath.WalkDir(src, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if rel == "LICENSES" || strings.HasPrefix(rel, "LICENSES/") {
			rel = strings.Replace(rel, "LICENSES", "LICENSES/kind-base", 1)
		}
		t := filepath.Join(dst, rel)
		if e.IsDir() {
			return os.MkdirAll(t, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		mode := fs.FileMode(0o644)
		if strings.HasPrefix(rel, "usr/local/bin/") || strings.HasPrefix(rel, "kind/bin/") {
			mode = 0o755
		}
		if err := os.MkdirAll(filepath.Dir(t), 0o755); err != nil {
			return err
		}
		return os.WriteFile(t, data, mode)
	})
}

func withStderr(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) && len(ee.Stderr) > 0 {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(ee.Stderr)))
	}
	return err
}

func tailLines(s string, n int) string { return strings.Join(lines.Last(s, n), "\n") }

// LockBuild takes the build lock name in cache's locks directory, so that
// one process builds an image (what) while the others wait for it, saying
// so on progress; the returned func releases it. The load balancer image
// (package lbimage) builds under it too.
func LockBuild(ctx context.Context, cache, name, what string, progress io.Writer) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Join(cache, "locks"), 0o755); err != nil {
		return nil, err
	}
	lock := flock.New(filepath.Join(cache, "locks", name+".lock"))
	if ok, err := lock.TryLock(); err != nil {
		return nil, err
	} else if !ok {
		fmt.Fprintf(progress, "waiting for another process building %s (lock %s)\n", what, lock.Path())
		if _, err := lock.TryLockContext(ctx, 500*time.Millisecond); err != nil {
			return nil, err
		}
	}
	return func() { _ = lock.Unlock() }, nil
}

// Package lbimage builds, offline, the load balancer image kind puts in
// front of several control-plane nodes, under the name kind runs (Image),
// so kind's code stays unchanged on a machine whose Docker cannot pull.
//
// kind v0.33 runs docker.io/envoyproxy/envoy with a bash command that writes
// Envoy's bootstrap file and loops on `envoy -c /home/envoy/envoy.yaml`
// (pkg/cluster/internal/loadbalancer GenerateBootstrapCommand); its
// loadbalancer action then writes the listener and cluster files and moves
// them into place (pkg/cluster/internal/create/actions/loadbalancer). kind
// pulls the image only when `docker inspect --type=image` does not find it
// (pkg/cluster/internal/providers/docker/images.go pullIfNotPresent). The
// image built here is Debian's haproxy (debootstrap, like the node image:
// cluster/kind/nodeimage) plus bash and an "envoy" of this module's
// (cluster/kind/lbimage/envoy, package translator) that renders
// haproxy.cfg from those files and reloads haproxy when they change.
//
// The image carries the label LabelOwner=OwnerImage and the recipe it was
// built by; a second Build finds it and returns at once. An image of that
// name without the label is kind's own Envoy (pulled where a registry is
// reachable): Build leaves it alone and kind uses it.
//
// Plain Go that returns errors; progress goes to Options.Progress, one line a
// step.
package lbimage

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/informer-conformance/informer-conformance/cluster/binaries"
	"github.com/informer-conformance/informer-conformance/cluster/kind/docker"
	"github.com/informer-conformance/informer-conformance/cluster/kind/nodeimage"
)

const (
	// Image is kind's load balancer image (kind v0.33
	// pkg/cluster/internal/loadbalancer/const.go Image; TestFixturesAreKinds
	// in package translator checks it).
	Image = "docker.io/envoyproxy/envoy:v1.36.2"
	// Recipe names how the image is built; bump it when the steps or the
	// translator change, so an image of an older recipe is rebuilt.
	Recipe = "r1"
	// LabelOwner is the project's owner label (docker.LabelOwner).
	LabelOwner = docker.LabelOwner
	// OwnerImage is LabelOwner's value on the image. Containers made from it
	// (kind's load balancer nodes) inherit it; kind deletes them with their
	// cluster, and kind-clean leaves them to that (kind.ContainerOwnerValues).
	OwnerImage = "kind-loadbalancer"
	// LabelRecipe carries Recipe.
	LabelRecipe = "io.informer-conformance.recipe"
	// EnvoyPackage is the translator's main package, built into the image as
	// /usr/local/bin/envoy.
	EnvoyPackage = "github.com/informer-conformance/informer-conformance/cluster/kind/lbimage/envoy"
)

// Packages debootstrap installs besides Debian's minimal base: the load
// balancer, and bash, which kind's bootstrap command runs.
var Packages = []string{"haproxy", "bash"}

// Options tune Build. Zero values mean the defaults.
type Options struct {
	// CacheDir is the cache root (default as cluster/binaries).
	CacheDir string
	// Progress receives one line per step; nil discards them.
	Progress io.Writer
}

// State is what Docker has under Image.
type State struct {
	Present bool   // an image is tagged Image
	Ours    bool   // it carries LabelOwner=OwnerImage
	Recipe  string // its LabelRecipe
	ID      string // its image ID
}

// Inspect reads the state of Image in d.
func Inspect(ctx context.Context, d *docker.Docker) State {
	out, err := d.Run(ctx, nil, "image", "inspect", "--format",
		`{{.Id}} {{index .Config.Labels "`+LabelOwner+`"}} {{index .Config.Labels "`+LabelRecipe+`"}}`, Image)
	if err != nil {
		return State{}
	}
	f := append(strings.Fields(string(out)), "", "", "")
	return State{Present: true, ID: f[0], Ours: f[1] == OwnerImage, Recipe: f[2]}
}

// Build makes sure Docker has an image named Image that kind can run as its
// load balancer, building it when it is missing or of an older recipe;
// parallel callers wait for one build. It returns Image.
func Build(ctx context.Context, opts Options) (string, error) {
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	d, err := docker.New(ctx)
	if err != nil {
		return "", err
	}
	if done, err := current(ctx, d, opts.Progress); done || err != nil {
		return Image, err
	}
	if err := nodeimage.CheckHost(); err != nil {
		return "", fmt.Errorf("build the kind load balancer image %s: %w", Image, err)
	}
	cache, err := binaries.CacheDir(opts.CacheDir)
	if err != nil {
		return "", err
	}
	unlock, err := nodeimage.LockBuild(ctx, cache, "kind-loadbalancer", Image, opts.Progress)
	if err != nil {
		return "", err
	}
	defer unlock()
	if done, err := current(ctx, d, io.Discard); done || err != nil {
		return Image, err
	}
	b := &builder{d: d, opts: opts, cache: cache, start: time.Now()}
	if err := b.build(ctx); err != nil {
		return "", fmt.Errorf("build the kind load balancer image %s: %w", Image, err)
	}
	fmt.Fprintf(opts.Progress, "built the kind load balancer image %s (haproxy, recipe %s) in %s\n", Image, Recipe, time.Since(b.start).Round(time.Second))
	return Image, nil
}

// current says whether the image under Image needs no build: kind's own, or
// ours of this recipe.
func current(ctx context.Context, d *docker.Docker, progress io.Writer) (bool, error) {
	s := Inspect(ctx, d)
	switch {
	case !s.Present:
		return false, nil
	case !s.Ours:
		fmt.Fprintf(progress, "kind load balancer image %s: kind's own (not built here), used as it is\n", Image)
		return true, nil
	case s.Recipe == Recipe:
		fmt.Fprintf(progress, "kind load balancer image %s (haproxy, recipe %s): cached\n", Image, Recipe)
		return true, nil
	}
	fmt.Fprintf(progress, "kind load balancer image %s is of recipe %q, not %s: building it again\n", Image, s.Recipe, Recipe)
	return false, nil
}

type builder struct {
	d     *docker.Docker
	opts  Options
	cache string
	start time.Time
	step  int
}

const steps = 4

func (b *builder) stepf(format string, args ...any) {
	b.step++
	fmt.Fprintf(b.opts.Progress, "[%d/%d %s] %s\n", b.step, steps, time.Since(b.start).Round(time.Second), fmt.Sprintf(format, args...))
}

func (b *builder) build(ctx context.Context) error {
	if err := os.MkdirAll(filepath.Join(b.cache, "tmp"), 0o755); err != nil {
		return err
	}
	work, err := os.MkdirTemp(filepath.Join(b.cache, "tmp"), "kind-loadbalancer-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	b.stepf("the translator %s (go build)", EnvoyPackage)
	envoy := filepath.Join(work, "envoy")
	if err := buildEnvoy(ctx, envoy); err != nil {
		return err
	}

	b.stepf("Debian %s root filesystem with %s (debootstrap from %s)", nodeimage.Suite, strings.Join(Packages, ", "), nodeimage.Mirror)
	rootfs := filepath.Join(work, "rootfs")
	if err := nodeimage.Debootstrap(ctx, rootfs, Packages, b.opts.Progress); err != nil {
		return err
	}
	if err := nodeimage.CopyFile(envoy, filepath.Join(rootfs, "usr", "local", "bin", "envoy"), 0o755); err != nil {
		return err
	}

	b.stepf("image %s (docker import)", Image)
	old := Inspect(ctx, b.d)
	if err := nodeimage.ImportDir(ctx, b.d, rootfs, Image, b.opts.Progress,
		"ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"LABEL "+LabelOwner+"="+OwnerImage+" "+LabelRecipe+"="+Recipe,
		`CMD ["envoy", "--version"]`,
	); err != nil {
		return err
	}
	if old.Present && old.Ours {
		// The older recipe's image lost its tag: do not leave it dangling.
		_, _ = b.d.Run(ctx, nil, "rmi", old.ID)
	}

	b.stepf("check: bash, haproxy and envoy run in the image")
	out, err := b.d.Run(ctx, nil, "run", "--rm", "--label", LabelOwner+"="+OwnerCheckContainer, Image,
		"bash", "-c", "haproxy -v | head -n 1 && envoy --version")
	if err != nil {
		return err
	}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fmt.Fprintf(b.opts.Progress, "  %s\n", l)
	}
	return nil
}

// OwnerCheckContainer is LabelOwner's value on the container that checks a
// built image (removed by --rm; labelled so a killed one is found).
const OwnerCheckContainer = "kind-loadbalancer-check"

// buildEnvoy builds the translator, static, for the daemon's platform (the
// host's: the node image's binaries are the host's too).
func buildEnvoy(ctx context.Context, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, EnvoyPackage)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if o, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s (run from within a module that requires this one): %w\n%s", EnvoyPackage, err, o)
	}
	return nil
}

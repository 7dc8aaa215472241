// Package lbimage provides the load balancer image kind puts in front of
// several control-plane nodes on a machine whose Docker cannot pull it, and
// lends it to kind under kind's name only while this project's clusters are
// being created (Use), so kind clusters made on the machine by anyone else
// never run it.
//
// kind v0.33 runs docker.io/envoyproxy/envoy (Image) with a bash command that
// writes Envoy's bootstrap file and loops on `envoy -c /home/envoy/envoy.yaml`
// (pkg/cluster/internal/loadbalancer GenerateBootstrapCommand); its
// loadbalancer action then writes the listener and cluster files and moves
// them into place (pkg/cluster/internal/create/actions/loadbalancer). The
// name is a constant of an internal package, put straight into `docker run`
// (pkg/cluster/internal/providers/docker/provision.go
// runArgsForLoadBalancer): no option of kind's library changes it, and
// `docker run` pulls it when Docker does not have it. The stand-in built
// here is Debian's haproxy (debootstrap, like the node image:
// cluster/kind/nodeimage) plus bash and an "envoy" of this module's
// (cluster/kind/lbimage/envoy, package translator) that renders haproxy.cfg
// from those files and reloads haproxy when they change. It is tagged
// StandIn, the project's own name, and carries the label
// LabelOwner=OwnerImage and the recipe it was built by; a second Build finds
// it and returns at once.
//
// kind's own Envoy comes first: an image named Image without the label
// (pulled by the user, or by Build and Use where a registry answers) is
// used as it is and never touched.
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
	// Repository is where the stand-in is tagged, one tag per recipe.
	Repository = "informer-conformance/kind-loadbalancer"
	// Recipe names how the image is built; bump it when the steps or the
	// translator change, so an image of an older recipe is rebuilt.
	Recipe = "r1"
	// StandIn is the stand-in's name: Build tags it so, and Use gives it
	// Image too while this project's clusters are created.
	StandIn = Repository + ":" + Recipe
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

// State is what Docker has under a name.
type State struct {
	Present bool   // an image has the name
	Ours    bool   // it carries LabelOwner=OwnerImage
	Recipe  string // its LabelRecipe
	ID      string // its image ID
}

// Inspect reads the state of the image named ref (Image, StandIn) in d.
func Inspect(ctx context.Context, d *docker.Docker, ref string) State {
	// An image without labels has none to index (kind's Envoy may be one):
	// the template reads them only when there are.
	out, err := d.Run(ctx, nil, "image", "inspect", "--format",
		`{{.Id}}|{{with .Config.Labels}}{{index . "`+LabelOwner+`"}}|{{index . "`+LabelRecipe+`"}}{{end}}`, ref)
	if err != nil {
		return State{}
	}
	f := append(strings.Split(strings.TrimSpace(string(out)), "|"), "", "", "")
	return State{Present: true, ID: f[0], Ours: f[1] == OwnerImage, Recipe: f[2]}
}

// Build makes sure kind will have a load balancer image to run: kind's own
// when Docker has it or can pull it, else the stand-in (StandIn), built
// when it is missing; parallel callers wait for one build. It returns the
// name of the image kind's clusters will run (Use lends StandIn the name
// Image only while they are created).
func Build(ctx context.Context, opts Options) (string, error) {
	if opts.Progress == nil {
		opts.Progress = io.Discard
	}
	d, err := docker.New(ctx)
	if err != nil {
		return "", err
	}
	if s := Inspect(ctx, d, Image); s.Present && !s.Ours {
		fmt.Fprintf(opts.Progress, "kind load balancer image %s: kind's own (not built here), used as it is\n", Image)
		return Image, nil
	}
	if current(ctx, d) {
		fmt.Fprintf(opts.Progress, "kind load balancer stand-in %s (haproxy): cached\n", StandIn)
		return StandIn, nil
	}
	err = pullOnce(ctx, d, Image)
	if err == nil {
		fmt.Fprintf(opts.Progress, "kind load balancer image %s: pulled, kind's own is used\n", Image)
		return Image, nil
	}
	fmt.Fprintf(opts.Progress, "kind load balancer image %s cannot be pulled (%v): building a stand-in\n", Image, err)
	if err := nodeimage.CheckHost(); err != nil {
		return "", fmt.Errorf("build the kind load balancer stand-in %s: %w", StandIn, err)
	}
	if err := nodeimage.CheckDebootstrap(); err != nil {
		return "", fmt.Errorf("build the kind load balancer stand-in %s: %w", StandIn, err)
	}
	cache, err := binaries.CacheDir(opts.CacheDir)
	if err != nil {
		return "", err
	}
	unlock, err := nodeimage.LockBuild(ctx, cache, "kind-loadbalancer", StandIn, opts.Progress)
	if err != nil {
		return "", err
	}
	defer unlock()
	if current(ctx, d) {
		return StandIn, nil
	}
	b := &builder{d: d, opts: opts, cache: cache, Steps: nodeimage.Steps{W: opts.Progress, Total: 4, Start: time.Now()}}
	if err := b.build(ctx); err != nil {
		return "", fmt.Errorf("build the kind load balancer stand-in %s: %w", StandIn, err)
	}
	fmt.Fprintf(opts.Progress, "built the kind load balancer stand-in %s (haproxy) in %s\n", StandIn, time.Since(b.Start).Round(time.Second))
	return StandIn, nil
}

// current says whether StandIn is built, by this recipe.
func current(ctx context.Context, d *docker.Docker) bool {
	s := Inspect(ctx, d, StandIn)
	return s.Present && s.Ours && s.Recipe == Recipe
}

type builder struct {
	d     *docker.Docker
	opts  Options
	cache string
	nodeimage.Steps
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

	b.Stepf("the translator %s (go build)", EnvoyPackage)
	envoy := filepath.Join(work, "envoy")
	if err := buildEnvoy(ctx, envoy); err != nil {
		return err
	}

	b.Stepf("Debian %s root filesystem with %s (debootstrap from %s)", nodeimage.Suite, strings.Join(Packages, ", "), nodeimage.Mirror)
	rootfs := filepath.Join(work, "rootfs")
	if err := nodeimage.Debootstrap(ctx, rootfs, Packages, b.opts.Progress); err != nil {
		return err
	}
	if err := nodeimage.CopyFile(envoy, filepath.Join(rootfs, "usr", "local", "bin", "envoy"), 0o755); err != nil {
		return err
	}

	b.Stepf("image %s (docker import)", StandIn)
	if err := nodeimage.ImportDir(ctx, b.d, rootfs, StandIn, b.opts.Progress,
		"ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"LABEL "+LabelOwner+"="+OwnerImage+" "+LabelRecipe+"="+Recipe,
		`CMD ["envoy", "--version"]`,
	); err != nil {
		return err
	}
	// Older recipes' stand-ins are of no use any more.
	old, _ := b.d.Run(ctx, nil, "images", "--format", "{{.Repository}}:{{.Tag}}", Repository)
	for _, ref := range strings.Fields(string(old)) {
		if ref != StandIn {
			_, _ = b.d.Run(ctx, nil, "rmi", ref)
		}
	}

	b.Stepf("check: bash, haproxy and envoy run in the image")
	out, err := b.d.Run(ctx, nil, "run", "--rm", "--label", LabelOwner+"="+OwnerCheckContainer, StandIn,
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

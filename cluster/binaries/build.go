package binaries

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"golang.org/x/mod/modfile"

	"github.com/informer-conformance/informer-conformance/internal/lines"
)

// The mains are kept as .txt so the suite's module never compiles them; they
// become a module of their own in the build directory.
//
//go:embed modules/kube-apiserver/main.go.txt modules/etcd/etcd/main.go.txt modules/etcd/etcdutl/main.go.txt
var modules embed.FS

// goTool runs the go command in dir with a clean module environment.
type goTool struct {
	ctx      context.Context
	bin      string
	dir      string
	progress io.Writer
}

func newGoTool(ctx context.Context, dir string, progress io.Writer) (*goTool, error) {
	bin, err := exec.LookPath("go")
	if err != nil {
		return nil, fmt.Errorf("the Go toolchain (go) is not on PATH: install Go 1.26 or newer, or set %s to a directory with prebuilt kube-apiserver, etcd and etcdutl", EnvAssets)
	}
	return &goTool{ctx: ctx, bin: bin, dir: dir, progress: progress}, nil
}

func (g *goTool) run(args ...string) ([]byte, error) {
	cmd := exec.CommandContext(g.ctx, g.bin, args...)
	cmd.Dir = g.dir
	// GOWORK=off: a go.work of the caller must not pull the build into it.
	// GOFLAGS cleared: -mod=vendor or similar from the caller's env would break it.
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "CGO_ENABLED=0")
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	start := time.Now()
	fmt.Fprintf(g.progress, "  go %s\n", strings.Join(args, " "))
	err := cmd.Run()
	if err != nil {
		// The go command's own words: on stderr, or (-json) in the
		// output's Error fields, where `go mod download -json` puts the
		// proxy's answer ("403 Forbidden ... This module version is not
		// available").
		words := stderr.String() + jsonErrors(stdout.Bytes())
		if missing := unavailableModules(words); len(missing) > 0 {
			return stdout.Bytes(), fmt.Errorf("the Go module proxy (GOPROXY) does not serve %s, which this build needs: pick a version whose modules it serves, point GOPROXY at one that has them, or set %s to prebuilt binaries\n%s",
				strings.Join(missing, ", "), EnvAssets, tail(words, 10))
		}
		return stdout.Bytes(), fmt.Errorf("go %s (in %s): %w\n%s", strings.Join(args, " "), g.dir, err, tail(words, 40))
	}
	fmt.Fprintf(g.progress, "  ... %s\n", time.Since(start).Round(100*time.Millisecond))
	return stdout.Bytes(), nil
}

// jsonErrors is the Error fields of the go command's -json output, one a
// line.
func jsonErrors(out []byte) string {
	var b strings.Builder
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var v struct{ Error string }
		if dec.Decode(&v) != nil {
			return b.String()
		}
		if v.Error != "" {
			b.WriteString(v.Error + "\n")
		}
	}
}

// modFile downloads mod@version and parses its go.mod.
func (g *goTool) modFile(mod, version string) (*modfile.File, error) {
	out, err := g.run("mod", "download", "-json", mod+"@"+version)
	if err != nil {
		return nil, fmt.Errorf("%s@%s is not available from the Go module proxy (is the version right?): %w", mod, version, err)
	}
	var info struct{ GoMod, Error string }
	if err := json.Unmarshal(out, &info); err != nil {
		return nil, fmt.Errorf("parse go mod download output: %w", err)
	}
	if info.Error != "" {
		return nil, fmt.Errorf("%s@%s: %s", mod, version, info.Error)
	}
	data, err := os.ReadFile(info.GoMod)
	if err != nil {
		return nil, err
	}
	return modfile.Parse(info.GoMod, data, nil)
}

// unavailable matches the go command's words for a module version the proxy
// or the checksum database does not have.
var unavailable = regexp.MustCompile(`(\S+@v\S+?): (?:verifying module: \S+: )?reading \S+: (?:403 Forbidden|404 Not Found|410 Gone)`)

func unavailableModules(stderr string) []string {
	seen := map[string]bool{}
	var mods []string
	for _, m := range unavailable.FindAllStringSubmatch(stderr, -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			mods = append(mods, m[1])
		}
	}
	sort.Strings(mods)
	return mods
}

func tail(s string, n int) string { return strings.Join(lines.Last(s, n), "\n") }

// header copies the go and godebug lines of upstream's go.mod, so the binary
// gets the language and GODEBUG defaults upstream releases it with.
func header(module string, upstream *modfile.File) string {
	var b strings.Builder
	fmt.Fprintf(&b, "module %s\n\n", module)
	if upstream.Go != nil {
		fmt.Fprintf(&b, "go %s\n\n", upstream.Go.Version)
	}
	for _, d := range upstream.Godebug {
		fmt.Fprintf(&b, "godebug %s=%s\n", d.Key, d.Value)
	}
	return b.String()
}

func writeMain(work, embedded, dst string) error {
	src, err := modules.ReadFile(embedded)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(filepath.Join(work, dst)), 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(work, dst), src, 0o644)
}

// install builds pkg into outDir/name atomically.
func (g *goTool) install(pkg, outDir, name, ldflags string) error {
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	tmp := filepath.Join(outDir, "."+name+".tmp")
	if _, err := g.run("build", "-trimpath", "-ldflags", ldflags, "-o", tmp, pkg); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, filepath.Join(outDir, name))
}

// kubernetesModule writes, in work, a go.mod that requires
// k8s.io/kubernetes@version. The staging modules (k8s.io/api, apiserver, ...)
// are replaced in upstream's go.mod by local directories, which a dependency
// cannot use, so they are replaced here by their published v0.<minor>.<patch>.
func kubernetesModule(g *goTool, module, work, version string) error {
	upstream, err := g.modFile("k8s.io/kubernetes", version)
	if err != nil {
		return err
	}
	staging := "v0" + strings.TrimPrefix(version, "v1")
	var b strings.Builder
	b.WriteString(header(module, upstream))
	fmt.Fprintf(&b, "\nrequire k8s.io/kubernetes %s\n\nreplace (\n", version)
	n := 0
	for _, r := range upstream.Replace {
		if strings.HasPrefix(r.New.Path, "./staging/") {
			fmt.Fprintf(&b, "\t%s => %s %s\n", r.Old.Path, r.Old.Path, staging)
			n++
		}
	}
	b.WriteString(")\n")
	if n == 0 {
		return fmt.Errorf("k8s.io/kubernetes@%s go.mod has no staging replacements; unexpected layout", version)
	}
	return os.WriteFile(filepath.Join(work, "go.mod"), []byte(b.String()), 0o644)
}

// kubernetesLDFlags stamp the version the way upstream's hack/lib/version.sh
// does, so the binaries report it (kubeadm reads its own version).
func kubernetesLDFlags(version string) string {
	minor := strings.Split(version, ".")[1]
	return strings.Join([]string{
		"-s", "-w",
		"-X", "k8s.io/component-base/version.gitVersion=" + version,
		"-X", "k8s.io/component-base/version.gitMajor=1",
		"-X", "k8s.io/component-base/version.gitMinor=" + minor,
		"-X", "k8s.io/component-base/version.gitTreeState=clean",
		"-X", "k8s.io/component-base/version.buildDate=1970-01-01T00:00:00Z",
		"-X", "k8s.io/client-go/pkg/version.gitVersion=" + version,
	}, " ")
}

// buildKubeAPIServer builds upstream's kube-apiserver main from
// k8s.io/kubernetes@version.
func buildKubeAPIServer(ctx context.Context, progress io.Writer, work, version, outDir string) error {
	g, err := newGoTool(ctx, work, progress)
	if err != nil {
		return err
	}
	if err := kubernetesModule(g, "informer-conformance.local/kube-apiserver", work, version); err != nil {
		return err
	}
	if err := writeMain(work, "modules/kube-apiserver/main.go.txt", "main.go"); err != nil {
		return err
	}
	// No `go mod tidy`: it would also resolve the tests of every dependency
	// and fail on modules the build never needs. `go build -mod=mod` (see
	// run) resolves and verifies just what the binary imports.
	return g.install(".", outDir, KubeAPIServer, kubernetesLDFlags(version))
}

// buildKubernetesCommands builds upstream's k8s.io/kubernetes/cmd/<name> for
// each name into outDir, in one go build (the packages they share compile
// once), with the same flags as buildKubeAPIServer so the build cache is shared.
func buildKubernetesCommands(ctx context.Context, progress io.Writer, work, version, outDir string, names []string) error {
	g, err := newGoTool(ctx, work, progress)
	if err != nil {
		return err
	}
	if err := kubernetesModule(g, "informer-conformance.local/kubernetes-node", work, version); err != nil {
		return err
	}
	tmp := filepath.Join(outDir, ".tmp")
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	args := []string{"build", "-trimpath", "-ldflags", kubernetesLDFlags(version), "-o", tmp + "/"}
	for _, n := range names {
		args = append(args, "k8s.io/kubernetes/cmd/"+n)
	}
	if _, err := g.run(args...); err != nil {
		_ = os.RemoveAll(tmp)
		return err
	}
	for _, n := range names {
		if err := os.Rename(filepath.Join(tmp, n), filepath.Join(outDir, n)); err != nil {
			return err
		}
	}
	return os.RemoveAll(tmp)
}

// buildEtcd builds etcd (etcdmain.Main) and etcdutl from go.etcd.io/etcd@version.
func buildEtcd(ctx context.Context, progress io.Writer, work, version, outDir string) error {
	g, err := newGoTool(ctx, work, progress)
	if err != nil {
		return err
	}
	upstream, err := g.modFile("go.etcd.io/etcd/server/v3", version)
	if err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString(header("informer-conformance.local/etcd", upstream))
	fmt.Fprintf(&b, "\nrequire (\n\tgo.etcd.io/etcd/server/v3 %[1]s\n\tgo.etcd.io/etcd/etcdutl/v3 %[1]s\n\tgo.etcd.io/etcd/pkg/v3 %[1]s\n)\n", version)
	if err := os.WriteFile(filepath.Join(work, "go.mod"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	for _, m := range []string{"etcd", "etcdutl"} {
		if err := writeMain(work, "modules/etcd/"+m+"/main.go.txt", m+"/main.go"); err != nil {
			return err
		}
	}
	if err := g.install("./etcd", outDir, Etcd, "-s -w"); err != nil {
		return err
	}
	return g.install("./etcdutl", outDir, Etcdutl, "-s -w")
}

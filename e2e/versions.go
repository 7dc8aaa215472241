package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"reflect"
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/Masterminds/semver/v3"
	"github.com/onsi/ginkgo/v2"
	"k8s.io/client-go/tools/cache"
)

// Components a spec can constrain with ginkgo.ComponentSemVerConstraint;
// RequireVersions checks them against the versions in use. The same names
// work with ginkgo's --sem-ver-filter, e.g.
// --sem-ver-filter=client-go=0.33.13,kube-apiserver=1.36.3.
const (
	ComponentClientGo      = "client-go"
	ComponentKubeAPIServer = "kube-apiserver"
)

// ClientGo constrains a spec to the client-go versions that match every
// constraint (Masterminds/semver syntax: ">= 0.33.0", "< 0.36.0").
// A constraint that does not parse panics while Ginkgo builds the spec tree,
// so the whole suite fails naming it; a typo never skips a spec.
func ClientGo(constraints ...string) ginkgo.ComponentSemVerConstraints {
	mustParse(ComponentClientGo, constraints)
	return ginkgo.ComponentSemVerConstraint(ComponentClientGo, constraints...)
}

// KubeAPIServer constrains a spec to the kube-apiserver versions that match
// every constraint.
func KubeAPIServer(constraints ...string) ginkgo.ComponentSemVerConstraints {
	mustParse(ComponentKubeAPIServer, constraints)
	return ginkgo.ComponentSemVerConstraint(ComponentKubeAPIServer, constraints...)
}

func mustParse(comp string, constraints []string) {
	if err := parseConstraints(comp, constraints); err != nil {
		panic(err)
	}
}

// parseConstraints is nil when every constraint parses.
func parseConstraints(comp string, constraints []string) error {
	for _, c := range constraints {
		if _, err := semver.NewConstraint(c); err != nil {
			return fmt.Errorf("bad %s version constraint %q: %w", comp, c, err)
		}
	}
	return nil
}

// ClientGoVersion is the k8s.io/client-go version this binary was built
// with (a downstream module's own, in library mode): where client-go's code
// was compiled from, else the build info, else the version go.mod requires
// (a replaced client-go: ClientGoReplacement names the replacement); "" if
// none of them tells.
//
// Test binaries carry no dependency list in their build info, so the
// version is read first from where client-go's code was compiled from: the
// module cache path k8s.io/client-go@<version>/ (also with -trimpath).
func ClientGoVersion() string {
	if v := clientGoCompiledVersion(); v != "" {
		return v
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "k8s.io/client-go" {
				if d.Replace != nil && d.Replace.Version != "" {
					return d.Replace.Version
				}
				return d.Version
			}
		}
	}
	m, _ := clientGoGoMod()
	return m.Version
}

// clientGoCompiledVersion is the version in the path client-go's code was
// compiled from (k8s.io/client-go@<version>/), or "" (a replacement).
func clientGoCompiledVersion() string {
	pc := reflect.ValueOf(cache.NewSharedIndexInformer).Pointer()
	if fn := runtime.FuncForPC(pc); fn != nil {
		file, _ := fn.FileLine(pc)
		if m := clientGoDir.FindStringSubmatch(file); m != nil {
			return m[1]
		}
	}
	return ""
}

// ClientGoReplacement names what replaces k8s.io/client-go in the go.mod
// of the module under test, as downstream repositories often do: a fork
// ("github.com/acme/client-go v0.36.6-acme.1") or a local directory
// ("../client-go (a local directory)"); "" when client-go is not replaced.
// The report's header names it beside the version.
func ClientGoReplacement() string {
	if clientGoCompiledVersion() != "" {
		return "" // compiled from k8s.io/client-go@<version> itself
	}
	m, err := clientGoGoMod()
	switch {
	case err != nil:
		return "unknown (not compiled from k8s.io/client-go@<version>, and go list: " + err.Error() + ")"
	case m.Replace == nil:
		return ""
	case m.Replace.Version != "":
		return m.Replace.Path + " " + m.Replace.Version
	}
	return m.Replace.Path + " (a local directory)"
}

// goListTimeout bounds asking go list for client-go's module.
const goListTimeout = 30 * time.Second

// goModule is what go list -m -json says of a module.
type goModule struct {
	Path    string
	Version string
	Replace *goModule
}

// clientGoGoMod is k8s.io/client-go as the go.mod of the module in the
// working directory (the suite's package) requires and replaces it.
var clientGoGoMod = sync.OnceValues(func() (goModule, error) {
	ctx, cancel := context.WithTimeout(context.Background(), goListTimeout)
	defer cancel()
	return goListModule(ctx, "", "k8s.io/client-go")
})

// goListModule runs go list -m -json path in dir ("" = the working
// directory).
func goListModule(ctx context.Context, dir, path string) (goModule, error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-json", path)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return goModule{}, fmt.Errorf("%v: %s", err, strings.TrimSpace(stderr.String()))
	}
	var m goModule
	if err := json.Unmarshal(out, &m); err != nil {
		return goModule{}, err
	}
	return m, nil
}

var clientGoDir = regexp.MustCompile(`k8s\.io/client-go@(v[^/]+)/`)

// KubeAPIServerVersion is the kube-apiserver version the specs run against:
// the one the backend runs (the local backend: KUBE_VERSION or the pinned
// default; with INFORMER_CONFORMANCE_ASSETS, what its kube-apiserver says
// it is; the kind backend: its node image's, when it built it), else the
// version this process's shared clusters told when they started (the
// existing backend: its server's); "" if unknown.
func KubeAPIServerVersion() string {
	d, err := Backend()
	if err != nil {
		return ""
	}
	if d.KubeAPIServerVersion != nil {
		if v := d.KubeAPIServerVersion(); v != "" {
			return v
		}
	}
	return sharedVersion(d)
}

// RequireVersions skips the current spec, saying why, when its
// ComponentSemVerConstraints (ClientGo, KubeAPIServer, on the spec or a
// container) exclude the versions in use. Suites call it from a top-level
// BeforeEach, so a spec written for newer client-go is skipped with a
// reason on older ones rather than failing (ginkgo's own --sem-ver-filter
// only drops specs silently, and only when told the versions).
func RequireVersions() {
	ginkgo.GinkgoHelper()
	r := ginkgo.CurrentSpecReport()
	constraints := map[string][]string{}
	for _, m := range append(r.ContainerHierarchyComponentSemVerConstraints, r.LeafNodeComponentSemVerConstraints) {
		for comp, cs := range m {
			constraints[comp] = append(constraints[comp], cs...)
		}
	}
	inUse := map[string]string{ComponentClientGo: ClientGoVersion()}
	if len(constraints[ComponentKubeAPIServer]) > 0 {
		inUse[ComponentKubeAPIServer] = kubeAPIServerVersionFor(r)
	}
	reason, err := versionMismatch(constraints, inUse)
	if err != nil {
		ginkgo.Fail(err.Error())
	}
	if reason != "" {
		ginkgo.Skip(reason)
	}
}

// RequireClientGo skips the current spec, saying why, when the client-go in
// use does not match every constraint (">= 0.36.0"): ClientGo's check for a
// spec that carries no Ginkgo decorations (an e2e-framework feature's
// assessment, under any front end). A client-go of unknown version does not
// skip; a constraint that does not parse fails the spec.
func RequireClientGo(constraints ...string) {
	ginkgo.GinkgoHelper()
	reason, err := versionMismatch(map[string][]string{ComponentClientGo: constraints}, map[string]string{ComponentClientGo: ClientGoVersion()})
	if err != nil {
		Fail(err.Error())
	}
	if reason != "" {
		Skip(reason)
	}
}

// versionMismatch says which constraint excludes which version in use, or
// "" if all are met. A component whose version is unknown does not skip. A
// constraint that does not parse is an error, whatever the versions (set
// with ginkgo.ComponentSemVerConstraint directly, it escapes ClientGo's
// check).
func versionMismatch(constraints map[string][]string, inUse map[string]string) (string, error) {
	var why []string
	for _, comp := range []string{ComponentClientGo, ComponentKubeAPIServer} {
		if err := parseConstraints(comp, constraints[comp]); err != nil {
			return "", err
		}
		have := inUse[comp]
		if have == "" || len(constraints[comp]) == 0 {
			continue
		}
		v, err := semver.NewVersion(have)
		if err != nil {
			continue
		}
		// Pre-releases (v0.38.0-alpha.2) are compared as their release.
		if v.Prerelease() != "" {
			rel, _ := v.SetPrerelease("")
			v = &rel
		}
		for _, c := range constraints[comp] {
			cons, _ := semver.NewConstraint(c) // parsed above
			if !cons.Check(v) {
				why = append(why, fmt.Sprintf("needs %s %s, this run has %s", comp, c, have))
			}
		}
	}
	return strings.Join(why, "; "), nil
}

// kubeAPIServerVersionFor is KubeAPIServerVersion for a spec constrained to
// kube-apiserver versions: a shared cluster that has not started yet is
// started to tell its version, unless the spec skips on the backend anyway.
func kubeAPIServerVersionFor(r ginkgo.SpecReport) string {
	if v := KubeAPIServerVersion(); v != "" {
		return v
	}
	d, err := Backend()
	if err != nil || !d.Shared || backendMismatch(d.Name, r.Labels()) != "" {
		return ""
	}
	if _, err := sharedCluster(context.Background(), d); err != nil {
		return "" // the spec fails on it when it asks for its cluster
	}
	return sharedVersion(d)
}

// ClientGoAtLeast reports whether the client-go in use is version min or
// newer (false when its version is unknown).
func ClientGoAtLeast(min string) bool {
	v, err := semver.NewVersion(ClientGoVersion())
	if err != nil {
		return false
	}
	return !v.LessThan(semver.MustParse(min))
}

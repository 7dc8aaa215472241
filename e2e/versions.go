package e2e

import (
	"context"
	"fmt"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/onsi/ginkgo/v2"
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

// KubeAPIServerVersion is the kube-apiserver version the specs run against:
// the one the backend runs (the local backend: KUBE_VERSION or the pinned
// default; with INFORMER_CONFORMANCE_ASSETS, what its kube-apiserver says
// it is; the kind backend: its node image's, when it built it), else the
// version this process's shared clusters told when they started (the
// existing backend: its server's); "" if unknown.
func KubeAPIServerVersion() string {
	rc, err := Config()
	if err != nil {
		return ""
	}
	d := rc.Backend
	if d.KubeAPIServerVersion != nil {
		if v := d.KubeAPIServerVersion(rc.Env); v != "" {
			return v
		}
	}
	return theHarness.keptFor(d).Version()
}

// EtcdVersion is the etcd version the specs run against, when the backend
// knows it before its clusters start (the local backend: ETCD_VERSION or
// the pinned default); "" if unknown.
func EtcdVersion() string {
	rc, err := Config()
	if err != nil || rc.Backend.EtcdVersion == nil {
		return ""
	}
	return rc.Backend.EtcdVersion(rc.Env)
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
	reason, err := versionMismatch(constraints, inUse, clientGoUnknown())
	if err != nil {
		ginkgo.Fail(err.Error())
	}
	if reason != "" {
		ginkgo.Skip(reason)
	}
}

// RequireClientGo skips the spec of ctx, saying why, when the client-go in
// use does not match every constraint (">= 0.36.0"): ClientGo's check for a
// spec that carries no Ginkgo decorations (an e2e-framework feature's
// assessment, under any front end). A client-go of unknown version skips,
// saying why it is unknown; a constraint that does not parse fails the
// spec.
func RequireClientGo(ctx context.Context, constraints ...string) {
	ginkgo.GinkgoHelper()
	reason, err := versionMismatch(map[string][]string{ComponentClientGo: constraints}, map[string]string{ComponentClientGo: ClientGoVersion()}, clientGoUnknown())
	if err != nil {
		Fail(ctx, err.Error())
	}
	if reason != "" {
		Skip(ctx, reason)
	}
}

// versionMismatch says which constraint excludes which version in use, or
// "" if all are met. A constrained component whose version is unknown
// mismatches when unknown says why it is (client-go: the spec may not
// apply to it, and a guess would fail or pass it wrongly), else does not
// (kube-apiserver: a cluster that did not start to tell its version fails
// the spec when it asks for it). A constraint that does not parse is an
// error, whatever the versions (set with ginkgo.ComponentSemVerConstraint
// directly, it escapes ClientGo's check).
func versionMismatch(constraints map[string][]string, inUse, unknown map[string]string) (string, error) {
	var why []string
	for _, comp := range []string{ComponentClientGo, ComponentKubeAPIServer} {
		if err := parseConstraints(comp, constraints[comp]); err != nil {
			return "", err
		}
		have := inUse[comp]
		if len(constraints[comp]) == 0 {
			continue
		}
		if have == "" {
			if unknown[comp] != "" {
				why = append(why, fmt.Sprintf("needs %s %s, and this run's %s version is unknown: %s", comp, strings.Join(constraints[comp], ", "), comp, unknown[comp]))
			}
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
	return theHarness.keptFor(d).Version()
}

// clientGoUnknown is versionMismatch's unknown for the client-go in use.
func clientGoUnknown() map[string]string {
	if m := ClientGoInUse(); m.Version == "" {
		return map[string]string{ComponentClientGo: m.Unknown}
	}
	return nil
}

// ClientGoAtLeast reports whether the client-go in use is version min or
// newer (a pre-release compared as its release, as RequireVersions does),
// and whether its version is known at all: a check that depends on it
// says so when it is not, and asserts only what holds for every version.
func ClientGoAtLeast(min string) (atLeast, known bool) {
	v, err := semver.NewVersion(ClientGoVersion())
	if err != nil {
		return false, false
	}
	if v.Prerelease() != "" {
		rel, _ := v.SetPrerelease("")
		v = &rel
	}
	return !v.LessThan(semver.MustParse(min)), true
}

// ClientGoUnknown says why the client-go version in use is unknown; "" when
// it is known.
func ClientGoUnknown() string {
	if m := ClientGoInUse(); m.Version == "" {
		return m.Unknown
	}
	return ""
}

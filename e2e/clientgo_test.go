package e2e

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestParseCompiledPath: what the path client-go's tools/cache was
// compiled from says, for every layout the go command gives it.
func TestParseCompiledPath(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		want       compiledFrom
	}{
		{"module cache", "/root/go/pkg/mod/k8s.io/client-go@v0.36.6/tools/cache/shared_informer.go",
			compiledFrom{kind: compiledModuleCache, module: "k8s.io/client-go", version: "v0.36.6"}},
		{"fork in the module cache, case-encoded", "/home/u/go/pkg/mod/github.com/!acme/client-go@v0.36.6-acme.1/tools/cache/shared_informer.go",
			compiledFrom{kind: compiledModuleCache, module: "github.com/Acme/client-go", version: "v0.36.6-acme.1"}},
		{"module cache elsewhere (GOMODCACHE)", "/cache/k8s.io/client-go@v0.33.13/tools/cache/shared_informer.go",
			compiledFrom{kind: compiledModuleCache, module: "k8s.io/client-go", version: "v0.33.13"}},
		{"-trimpath", "k8s.io/client-go@v0.36.6/tools/cache/shared_informer.go",
			compiledFrom{kind: compiledTrimmed, module: "k8s.io/client-go", version: "v0.36.6"}},
		{"-trimpath, no version", "k8s.io/client-go/tools/cache/shared_informer.go",
			compiledFrom{kind: compiledUnknown}},
		{"local directory", "/src/client-go/tools/cache/shared_informer.go",
			compiledFrom{kind: compiledDirectory, dir: filepath.FromSlash("/src/client-go")}},
		{"local directory with an @ above it", "/home/me@work/client-go/tools/cache/shared_informer.go",
			compiledFrom{kind: compiledDirectory, dir: filepath.FromSlash("/home/me@work/client-go")}},
		{"vendored", "/src/app/vendor/k8s.io/client-go/tools/cache/shared_informer.go",
			compiledFrom{kind: compiledVendored, dir: filepath.FromSlash("/src/app/vendor/k8s.io/client-go")}},
		{"another package", "/root/go/pkg/mod/k8s.io/client-go@v0.36.6/rest/config.go", compiledFrom{kind: compiledUnknown}},
		{"nothing", "", compiledFrom{kind: compiledUnknown}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.want.file = tc.file
			if got := parseCompiledPath(tc.file); got != tc.want {
				t.Errorf("parseCompiledPath(%q) = %+v, want %+v", tc.file, got, tc.want)
			}
		})
	}
}

// TestResolveClientGo: the compiled path decides where it can; go list
// of the module under test completes it only where it agrees; what stays
// unknown is said, never guessed.
func TestResolveClientGo(t *testing.T) {
	dir := t.TempDir()
	local := parseCompiledPath(filepath.Join(dir, "tools", "cache", "shared_informer.go"))
	fork := parseCompiledPath("/go/pkg/mod/github.com/acme/client-go@v0.36.6-acme.1/tools/cache/shared_informer.go")
	trimmed := parseCompiledPath("k8s.io/client-go@v0.36.6/tools/cache/shared_informer.go")
	upstream := parseCompiledPath("/go/pkg/mod/k8s.io/client-go@v0.36.6/tools/cache/shared_informer.go")
	listedLocal := goModule{Path: "k8s.io/client-go", Version: "v0.36.6", Replace: &goModule{Path: "../client-go", Dir: dir}}
	listedFork := goModule{Path: "k8s.io/client-go", Version: "v0.36.6", Replace: &goModule{Path: "github.com/acme/client-go", Version: "v0.36.6-acme.1"}}
	listedPlain := goModule{Path: "k8s.io/client-go", Version: "v0.36.6"}
	noModule := errors.New("go.mod file not found")
	for _, tc := range []struct {
		name     string
		compiled compiledFrom
		listed   goModule
		err      error
		want     ClientGoModule
		unknown  string // substring of want.Unknown
	}{
		{name: "upstream from the module cache: no go list", compiled: upstream, err: errors.New("go list must not run"),
			want: ClientGoModule{Version: "v0.36.6"}},
		{name: "local directory, go list agrees", compiled: local, listed: listedLocal,
			want: ClientGoModule{Version: "v0.36.6", Replacement: "../client-go (a local directory)"}},
		{name: "local directory, no module to ask", compiled: local, err: noModule,
			want: ClientGoModule{Replacement: dir + " (a local directory)"}, unknown: "version its replacement stands for: go.mod file not found"},
		{name: "local directory, go.mod now names another", compiled: local, listed: goModule{Path: "k8s.io/client-go", Version: "v0.36.6", Replace: &goModule{Path: "../other", Dir: filepath.Join(dir, "other")}},
			want: ClientGoModule{Replacement: dir + " (a local directory)"}, unknown: "compiled from the directory " + dir},
		{name: "local directory, go.mod no longer replaces it", compiled: local, listed: listedPlain,
			want: ClientGoModule{Replacement: dir + " (a local directory)"}, unknown: "go list says k8s.io/client-go v0.36.6, but"},
		{name: "fork, go list agrees", compiled: fork, listed: listedFork,
			want: ClientGoModule{Version: "v0.36.6", Replacement: "github.com/acme/client-go v0.36.6-acme.1"}},
		{name: "fork, no module to ask", compiled: fork, err: noModule,
			want: ClientGoModule{Replacement: "github.com/acme/client-go v0.36.6-acme.1"}, unknown: "go.mod file not found"},
		{name: "fork, go list of another version", compiled: fork, listed: goModule{Path: "k8s.io/client-go", Version: "v0.36.6", Replace: &goModule{Path: "github.com/acme/client-go", Version: "v0.36.6-acme.2"}},
			want: ClientGoModule{Replacement: "github.com/acme/client-go v0.36.6-acme.1"}, unknown: "acme.2"},
		{name: "-trimpath, go list agrees", compiled: trimmed, listed: listedFork,
			want: ClientGoModule{Version: "v0.36.6", Replacement: "github.com/acme/client-go v0.36.6-acme.1"}},
		{name: "-trimpath, no module to ask", compiled: trimmed, err: noModule,
			want: ClientGoModule{Version: "v0.36.6"}, unknown: "whether k8s.io/client-go is replaced"},
		{name: "-trimpath, go list of another version", compiled: trimmed, listed: goModule{Path: "k8s.io/client-go", Version: "v0.35.0"},
			want: ClientGoModule{Version: "v0.36.6"}, unknown: "compiled with v0.36.6"},
		{name: "vendored", compiled: parseCompiledPath("/app/vendor/k8s.io/client-go/tools/cache/shared_informer.go"), listed: listedPlain,
			want: ClientGoModule{Version: "v0.36.6"}},
		{name: "unknown layout, no module to ask", compiled: compiledFrom{file: "x.go"}, err: noModule,
			want: ClientGoModule{}, unknown: `compiled from "x.go"`},
		{name: "go list answers for another module", compiled: local, listed: goModule{Path: "k8s.io/api", Version: "v0.36.6"},
			want: ClientGoModule{Replacement: dir + " (a local directory)"}, unknown: `not k8s.io/client-go`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := resolveClientGo(tc.compiled, func() (goModule, error) { return tc.listed, tc.err })
			if tc.unknown == "" && got.Unknown != "" || !strings.Contains(got.Unknown, tc.unknown) {
				t.Errorf("Unknown = %q, want it to contain %q", got.Unknown, tc.unknown)
			}
			got.Unknown = ""
			if got != tc.want {
				t.Errorf("resolveClientGo = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestParseGoList: go list's answer counts only from the module the binary
// was built from.
func TestParseGoList(t *testing.T) {
	both := `{"Path": "example.com/downstream", "Main": true, "Dir": "/src/downstream"}
{"Path": "k8s.io/client-go", "Version": "v0.36.6", "Replace": {"Path": "../client-go", "Dir": "/src/client-go"}}`
	m, err := parseGoList([]byte(both), "example.com/downstream")
	if err != nil || m.Version != "v0.36.6" || m.Replace == nil || m.Replace.Dir != "/src/client-go" {
		t.Errorf("parseGoList = %+v, %v", m, err)
	}
	if _, err := parseGoList([]byte(both), "example.com/other"); err == nil {
		t.Error("an answer for example.com/downstream was taken for example.com/other")
	}
	dependency := strings.Replace(both, `"Main": true`, `"Version": "v1.0.0"`, 1)
	if _, err := parseGoList([]byte(dependency), "example.com/downstream"); err == nil || !strings.Contains(err.Error(), "not the module the suite was built from") {
		t.Errorf("the module as a dependency: %v", err)
	}
	if _, err := parseGoList([]byte(`{"Path": "k8s.io/client-go"}`), "example.com/downstream"); err == nil {
		t.Error("one module printed where two were asked for")
	}
	if _, err := parseGoList([]byte(`{"Path": `), ""); err == nil {
		t.Error("truncated output read")
	}
}

// TestClientGoIsNotReplacedHere: this module builds against
// k8s.io/client-go from the module cache, so the version is known without
// go list and no replacement is named.
func TestClientGoIsNotReplacedHere(t *testing.T) {
	got := ClientGoInUse()
	if !strings.HasPrefix(got.Version, "v0.") || got.Replacement != "" || got.Unknown != "" {
		t.Errorf("ClientGoInUse() = %+v, want this module's k8s.io/client-go, not replaced", got)
	}
	if c := parseCompiledPath(clientGoFile()); c.kind != compiledModuleCache && c.kind != compiledTrimmed {
		t.Errorf("client-go compiled from %q: %+v", clientGoFile(), c)
	}
}

// TestRecordTestPackage: RunSpecs's caller's directory is where go list
// asks; a -trimpath (relative) path records nothing.
func TestRecordTestPackage(t *testing.T) {
	before := testPackageDir()
	t.Cleanup(func() {
		process.testPackage.Lock()
		process.testPackage.dir = before
		process.testPackage.Unlock()
	})
	dir := t.TempDir()
	recordTestPackage(filepath.Join(dir, "conformance_test.go"))
	if got := testPackageDir(); got != dir {
		t.Errorf("testPackageDir() = %q, want %q", got, dir)
	}
	recordTestPackage("example.com/downstream/conformance_test.go")
	if got := testPackageDir(); got != dir {
		t.Errorf("a relative path replaced the directory: %q", got)
	}
}
